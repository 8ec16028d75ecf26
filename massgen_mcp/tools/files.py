"""Read-only file tools over the team's ``context_paths``, served in-process.

MassGen's ``orchestrator.context_paths`` (``[{path, permission, protected_paths}]``) give every
agent three tools, named like MCP tools so hooks and filters treat them alike:
``mcp__files__list_directory``, ``mcp__files__read_file`` and ``mcp__files__search_files``.
No server process is started and nothing needs installing.

What an agent can reach, whatever its arguments say (they come from a model that may be
reading a hostile repository): only files under a context path, after resolving symlinks and
``..``; never a secret file (the hook's list: ``.env``, keys, token-bearing files) nor a
``protected_paths`` entry, globs included (MassGen keeps those unmodifiable;
here, where nothing is written, they are kept out of reach entirely, e.g. for ``.env`` files;
`config/protected.py` says how entries match, the same way for write-back). Every path
is checked again at each call, so a symlink swapped in mid-run cannot lead outside. A context
path with ``permission: write`` is served read-only (writing belongs with agent workspaces).

A regular-expression search runs on RE2 (`google-re2`), whose matching time is linear in the
text: a pattern chosen by a model (`(a+)+$`) cannot stall the server the way a backtracking
engine does (Python's `re` holds the GIL for the whole match). RE2's syntax is ripgrep's:
no backreferences or lookaround; such a pattern is refused with a message saying so.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from massgen_mcp.config.protected import is_protected, normalize_all
from massgen_mcp.hook.scope import secret_kind
from massgen_mcp.inputs import secret_file
from massgen_mcp.messages import ToolCall, ToolSpec
from massgen_mcp.tools.stacked import StackedToolbox

if TYPE_CHECKING:
    from massgen_mcp.config.orchestration import ContextPath

SERVER = "files"
LIST, READ, SEARCH = (f"mcp__{SERVER}__{n}" for n in ("list_directory", "read_file",
                                                         "search_files"))
MAX_READ_CHARS = 100_000
MAX_LINES = 2000
MAX_ENTRIES = 500
MAX_MATCHES = 200
MAX_SEARCH_FILE_BYTES = 2_000_000
MAX_FILES_SCANNED = 20_000  # a search of a huge tree stops here and says so
MAX_PATTERN_CHARS = 1000
REGEX_MAX_MEM = 1 << 20  # RE2's memory for one pattern: bounds its size, hence its speed
MAX_REGEX_LINE_CHARS = 10_000
SEARCH_SECONDS = 5.0
_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv"}


class Refused(Exception):
    """A path the agent may not reach, or an argument that is wrong (the text says which)."""


@dataclass(frozen=True, slots=True)
class Root:
    path: Path  # resolved
    protected: tuple[Path, ...]  # the literal entries, resolved (a protected symlink's target)
    patterns: tuple[str, ...] = ()  # every entry, normalized (config/protected.py)

    def protects(self, real: Path) -> bool:
        """Is `real` (resolved, inside this root) protected? Secret files (the hook's list:
        `.env`, keys, token-bearing files) always are."""
        if any(real == p or real.is_relative_to(p) for p in self.protected):
            return True
        if secret_kind(str(real)) is not None or secret_file(real) is not None:
            return True
        return is_protected(real.relative_to(self.path).as_posix(), self.patterns)


def roots_from(context_paths: Sequence[ContextPath], base: Path | None = None
               ) -> tuple[list[Root], list[str]]:
    """The readable roots of a team's context paths, and notes on those that are not."""
    base = base or Path.cwd()
    roots, notes = [], []
    for cp in context_paths:
        path = (base / Path(cp.path).expanduser()).resolve()
        if not path.exists():
            notes.append(f"context path {cp.path} does not exist; the file tools skip it")
            continue
        patterns = normalize_all(cp.protected_paths, path)
        literal = tuple((path / p).resolve() for p in cp.protected_paths
                        if p.strip() and not set("*?[") & set(p))
        roots.append(Root(path, literal, patterns))
        if cp.permission == "write":
            notes.append(f"context path {cp.path} has permission write; it is served read-only")
    return roots, notes


class FileToolbox:
    """The read-only file tools of one run (stateless, so every agent can share one)."""

    search_seconds = SEARCH_SECONDS

    def __init__(self, roots: list[Root], notes: list[str] | None = None) -> None:
        self.roots = roots
        self.notes = list(notes or [])
        where = ", ".join(str(r.path) for r in roots)
        self.tools = [
            ToolSpec(LIST, f"List a directory you may read ({where}). Relative paths are "
                     "taken from the first of those.", _schema(path=_PATH)),
            ToolSpec(READ, f"Read a text file under {where}: up to {MAX_LINES} lines from "
                     "`offset` (1-based), numbered.",
                     _schema(["path"], path=_PATH, offset={"type": "integer", "minimum": 1},
                             limit={"type": "integer", "minimum": 1})),
            ToolSpec(SEARCH, f"Search the text files under {where} for a string (or a regular "
                     "expression with regex: true); returns file:line: text matches.",
                     _schema(["pattern"], pattern={"type": "string"}, path=_PATH,
                             regex={"type": "boolean"}, glob={"type": "string"})),
        ] if roots else []

    def owns(self, tool_name: str) -> bool:
        return tool_name in (LIST, READ, SEARCH) and bool(self.roots)

    async def call(self, call: ToolCall) -> tuple[str, bool]:
        if call.arguments_error:
            return f"{call.name} was not called: invalid arguments: {call.arguments_error}", True
        handler = {LIST: self._list, READ: self._read, SEARCH: self._search}.get(call.name)
        if handler is None:
            return f"unknown tool {call.name}", True
        try:
            return await anyio.to_thread.run_sync(handler, dict(call.arguments)), False
        except Refused as e:
            return f"{call.name}: {e}", True
        except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop (Python 3.11/3.12)
            return f"{call.name}: cannot read: {getattr(e, 'strerror', None) or e}", True

    # -- paths ---------------------------------------------------------------------

    def resolve(self, raw: Any, *, default_root: bool = False) -> tuple[Path, Root]:
        """The real path an argument names, and its root; `Refused` if it leads outside."""
        if raw is None or raw == "" or raw == ".":
            if default_root:
                return self.roots[0].path, self.roots[0]
            raise Refused("give a path")
        if not isinstance(raw, str) or "\x00" in raw:
            raise Refused("the path must be a string")
        given = Path(raw).expanduser()
        candidates = [given] if given.is_absolute() else [r.path / given for r in self.roots]
        for candidate in candidates:
            real = candidate.resolve()
            root = self.root_of(real)
            if root is not None and real.exists():
                return real, root
        real = candidates[0].resolve()  # say why: outside, protected, or missing
        if self.root_of(real, protected_ok=True) is None:
            raise Refused(f"{raw} is outside the readable paths "
                          f"({', '.join(str(r.path) for r in self.roots)})")
        if self.root_of(real) is None:
            raise Refused(f"{raw} is protected")
        raise Refused(f"{raw} does not exist")

    def root_of(self, real: Path, *, protected_ok: bool = False) -> Root | None:
        for root in self.roots:
            if real == root.path or real.is_relative_to(root.path):
                if not protected_ok and root.protects(real):
                    return None
                return root
        return None

    def _readable(self, path: Path) -> bool:
        try:
            return self.root_of(path.resolve()) is not None
        except (OSError, RuntimeError):  # a symlink loop
            return False

    # -- tools ---------------------------------------------------------------------

    def _list(self, args: Mapping[str, Any]) -> str:
        path, _ = self.resolve(args.get("path"), default_root=True)
        if not path.is_dir():
            raise Refused(f"{args.get('path')} is not a directory")
        lines: list[str] = []
        for entry in sorted(path.iterdir(), key=lambda p: p.name):
            if not self._readable(entry):
                continue
            if len(lines) >= MAX_ENTRIES:
                lines.append("[... more entries; list a subdirectory]")
                break
            try:
                size = None if entry.is_dir() else entry.stat().st_size
            except OSError:  # a dangling link
                continue
            lines.append(f"{entry.name}/" if size is None else f"{entry.name}  ({size} bytes)")
        return f"{path}:\n" + ("\n".join(lines) if lines else "(empty)")

    def _read(self, args: Mapping[str, Any]) -> str:
        path, _ = self.resolve(args.get("path"))
        if path.is_dir():
            raise Refused(f"{args.get('path')} is a directory; use {LIST}")
        offset, limit = _int(args, "offset", 1), min(_int(args, "limit", MAX_LINES), MAX_LINES)
        with path.open("rb") as f:
            head = f.read(8192)
            if b"\x00" in head:
                raise Refused(f"{args.get('path')} is a binary file")
            text = (head + f.read(MAX_READ_CHARS * 4)).decode("utf-8", "replace")
        lines = text.splitlines()
        chosen = lines[offset - 1: offset - 1 + limit]
        body = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(chosen, offset))
        if len(body) > MAX_READ_CHARS:
            body = body[:MAX_READ_CHARS] + "\n[truncated]"
        more = len(lines) - (offset - 1 + len(chosen))
        tail = f"\n[{more} more lines: read on with offset={offset + len(chosen)}]" if more > 0 \
            else ""
        return f"{path} (lines {offset}-{offset + len(chosen) - 1} of {len(lines)}):\n{body}{tail}"

    def _search(self, args: Mapping[str, Any]) -> str:
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise Refused("give a non-empty pattern")
        regex = args.get("regex") is True
        matches = _matcher(pattern, regex)
        glob = args.get("glob")
        if isinstance(glob, str) and len(glob) > MAX_PATTERN_CHARS:
            raise Refused(f"the glob is {len(glob)} characters; the limit is "
                          f"{MAX_PATTERN_CHARS}")
        start, _ = self.resolve(args.get("path"), default_root=True)
        hits: list[str] = []
        # RE2 is linear in the text, but a large pattern multiplies the cost per character:
        # a search stops after SEARCH_SECONDS, and a regex sees the start of very long lines.
        deadline = time.monotonic() + self.search_seconds
        clipped = False
        for scanned, file in enumerate(self._files(start)):
            if scanned >= MAX_FILES_SCANNED:
                hits.append(f"[stopped after {MAX_FILES_SCANNED} files: narrow path or glob]")
                break
            if isinstance(glob, str) and glob and not file.match(glob):
                continue
            try:
                if file.stat().st_size > MAX_SEARCH_FILE_BYTES:
                    continue
                data = file.read_bytes()
            except OSError:
                continue
            if b"\x00" in data[:8192]:
                continue
            for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if time.monotonic() > deadline:
                    hits.append(f"[stopped after {self.search_seconds:g} s, in {file}: narrow "
                                "path, glob or pattern]")
                    return "\n".join(hits)
                if regex and len(line) > MAX_REGEX_LINE_CHARS:
                    line, clipped = line[:MAX_REGEX_LINE_CHARS], True
                if matches(line):
                    hits.append(f"{file}:{n}: {line.strip()[:300]}")
                    if len(hits) >= MAX_MATCHES:
                        return "\n".join(hits) + f"\n[stopped at {MAX_MATCHES} matches]"
        if clipped:
            hits.append(f"[lines longer than {MAX_REGEX_LINE_CHARS} characters were searched "
                        "in their first part only; a plain-string search reads them whole]")
        return "\n".join(hits) if hits else f"no match for {pattern!r} under {start}"

    def _files(self, start: Path) -> Iterator[Path]:
        if start.is_file():
            yield start
            return
        for dirpath, dirnames, filenames in os.walk(start):  # never follows directory links
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS
                                 and self._readable(Path(dirpath, d)))
            for name in sorted(filenames):
                path = Path(dirpath, name)
                if self._readable(path) and path.is_file():
                    yield path


def with_file_tools(toolboxes: dict[str, Any], agent_ids: Sequence[str],
                    context_paths: Sequence[ContextPath]) -> dict[str, Any]:
    """Every agent's toolbox with the read-only file tools of `context_paths` added."""
    if not context_paths:
        return toolboxes
    roots, notes = roots_from(context_paths)
    files = FileToolbox(roots, notes)
    return {aid: StackedToolbox(files, toolboxes.get(aid)) for aid in agent_ids}


_PATH = {"type": "string", "description": "A path under one of the readable directories."}


def _schema(required: list[str] | None = None, **props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or []}


def _matcher(pattern: str, regex: bool) -> Callable[[str], bool]:
    """A line test for `pattern`: a plain substring, or an RE2 regular expression."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise Refused(f"the pattern is {len(pattern)} characters; the limit is "
                      f"{MAX_PATTERN_CHARS}")
    if not regex:
        return lambda line: pattern in line
    try:
        import re2
    except ImportError:  # installed without its dependencies
        raise Refused("regex: true needs the google-re2 package (pip install google-re2); "
                      "search for a plain string instead") from None
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern to stderr
    options.max_mem = REGEX_MAX_MEM
    try:
        rx = re2.compile(pattern, options)
    except re2.error as e:
        reason = e.args[0] if e.args else e
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise Refused(f"the regular expression is invalid or not supported ({reason}): "
                      "searches use RE2 syntax, as ripgrep does (no backreferences, no "
                      "lookaround, repetition counts up to 1000)") from None
    search = rx.search
    return lambda line: search(line) is not None


def _int(args: Mapping[str, Any], key: str, default: int) -> int:
    value = args.get(key, default)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise Refused(f"{key} must be a positive integer")
    return value
