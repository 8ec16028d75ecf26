"""Agents' workspaces: one directory per coding agent under the run, seeded from the user's
`context_paths`, snapshotted with each answer, and the winner's changes returned (and, with
``permission: write``, applied to the context path).

Team file (MassGen's shape)::

    orchestrator:
      context_paths:
        - path: ./service          # relative to the server's working directory
          permission: write        # read (default): never written
          protected_paths: [config/prod.yaml, "*.lock"]

The context paths are only read during coordination: every agent edits its own copy. At the
end only the winner's changes reach a writable context path; a protected path (matched as in
`config/protected.py`, the same reading the file tools use), VCS metadata (`.git` directories
and submodules' `.git` files are never copied or written back), a file the user changed during
the run, and anything outside the context path are skipped (and listed).
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from massgen_mcp.config.protected import VCS_NAMES, is_protected, is_vcs_path, normalize_all
from massgen_mcp.coordination.result import FileChange, RunResult, WorkspaceResult
from massgen_mcp.errors import ConfigError

if TYPE_CHECKING:
    from massgen_mcp.config.team import Team

log = logging.getLogger(__name__)

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
                       ".massgen", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
MAX_SEED_BYTES = 200 * 1024 * 1024
MAX_DIFF_CHARS = 200_000
_LABEL = re.compile(r"\bagent\d+\.\d+\b")
_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class ContextPath:
    path: Path
    permission: Literal["read", "write"] = "read"
    protected: tuple[str, ...] = ()  # normalized (config/protected.py)
    rel: str = "."  # where it sits inside a workspace

    def is_protected(self, rel: str) -> bool:
        return is_protected(rel, self.protected)


def context_paths(team: Team, base: Path | None = None) -> list[ContextPath]:
    """The team's `context_paths` (orchestrator section), validated; [] when none."""
    raw: Any = getattr(team.orchestrator, "context_paths", None)
    if raw is None:
        raw = (team.orchestrator.model_extra or {}).get("context_paths")
    if not raw:
        return []
    if not isinstance(raw, list):
        raise ConfigError("orchestrator.context_paths: expected a list of {path, permission}")
    base = base or Path.cwd()
    out: list[ContextPath] = []
    for i, item in enumerate(raw):
        if hasattr(item, "model_dump"):  # config.team.ContextPath
            item = item.model_dump()
        entry = item if isinstance(item, dict) else {"path": item}
        where = f"orchestrator.context_paths[{i}]"
        path = (base / str(entry.get("path", ""))).expanduser().resolve()
        if not entry.get("path") or not path.is_dir():
            raise ConfigError(f"{where}.path: '{entry.get('path')}' is not a directory; give "
                              "an existing directory (absolute, or relative to the working "
                              "directory)")
        permission = str(entry.get("permission", "read")).lower()
        if permission not in ("read", "write"):
            raise ConfigError(f"{where}.permission: '{permission}' must be read or write")
        protected = entry.get("protected_paths") or []
        out.append(ContextPath(path, permission,  # type: ignore[arg-type]
                               normalize_all((str(p) for p in protected), path)))
    if len(out) == 1:
        return out
    names = [c.path.name or "root" for c in out]
    return [ContextPath(c.path, c.permission, c.protected,
                        n if names.count(n) == 1 else f"{n}-{i}")
            for i, (c, n) in enumerate(zip(out, names, strict=True))]


def _files(root: Path) -> dict[str, Path]:
    """Regular files under `root` by relative path (symlinks and SKIP_DIRS left out)."""
    out: dict[str, Path] = {}
    if not root.is_dir():
        return out
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(d.iterdir())
        except OSError:
            continue
        for e in entries:
            if e.is_symlink() or e.name.casefold() in VCS_NAMES:  # a submodule's .git file too
                continue
            if e.is_dir():
                if e.name not in SKIP_DIRS:
                    stack.append(e)
            elif e.is_file():
                out[e.relative_to(root).as_posix()] = e
    return out


def _copy_tree(src: Path, dst: Path, limit: int = MAX_SEED_BYTES) -> None:
    total = 0
    for rel, f in _files(src).items():
        total += f.stat().st_size
        if total > limit:
            raise ConfigError(f"context path {src} holds more than {limit // 2**20} MB of files "
                              "(outside .git, node_modules, .venv): point context_paths at a "
                              "smaller directory")
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, target)
    dst.mkdir(parents=True, exist_ok=True)


def _read_only(root: Path) -> None:
    for p in sorted(root.rglob("*"), reverse=True):
        with contextlib.suppress(OSError):
            p.chmod(0o555 if p.is_dir() else 0o444)
    root.chmod(0o555)


@dataclass
class Workspaces:
    """The workspaces of one run (under `run_dir`)."""

    run_dir: Path
    contexts: list[ContextPath] = field(default_factory=list)
    dirs: dict[str, Path] = field(default_factory=dict)  # agent id -> workspace
    snapshots: dict[str, Path] = field(default_factory=dict)  # answer label -> snapshot
    latest: dict[str, str] = field(default_factory=dict)  # agent id -> its latest label

    @property
    def seed(self) -> Path:
        return self.run_dir / "seed"

    def prepare(self) -> None:
        """Copy the context paths once into the run's seed (each workspace copies the seed)."""
        self.seed.mkdir(parents=True, exist_ok=True)
        for c in self.contexts:
            _copy_tree(c.path, self.seed / c.rel)

    def dir_for(self, agent_id: str, name: str | None = None) -> Path:
        """The agent's workspace (created and seeded on first use). `name` is the team file's
        `cwd`: only its last component is used, always under the run."""
        if agent_id not in self.dirs:
            leaf = _NAME.sub("_", Path(name).name) if name else ""
            leaf = leaf if leaf not in ("", ".", "..") else agent_id
            path = self.run_dir / "workspaces" / leaf
            if path in self.dirs.values():
                path = path.with_name(f"{leaf}-{agent_id}")
            _copy_tree(self.seed, path)
            self.dirs[agent_id] = path
        return self.dirs[agent_id]

    def on_event(self, event: dict[str, Any]) -> None:
        """Run listener: snapshot a coding agent's workspace when its answer is recorded."""
        if event.get("kind") != "answer":
            return
        agent, label = str(event.get("agent")), str(event.get("label") or "")
        src = self.dirs.get(agent)
        if src is None or not label:
            return
        dst = self.run_dir / "snapshots" / label
        try:
            _copy_tree(src, dst)
            _read_only(dst)
        except (OSError, ConfigError) as e:
            log.warning("snapshot of %s for %s failed: %s", agent, label, e)
            return
        self.snapshots[label] = dst
        self.latest[agent] = label

    def snapshots_in(self, text: str) -> list[tuple[str, Path]]:
        """The snapshots of the answer labels that `text` mentions."""
        seen = dict.fromkeys(_LABEL.findall(text))
        return [(label, self.snapshots[label]) for label in seen if label in self.snapshots]

    def describe(self, agent_id: str, text: str) -> str:
        """What a coding agent's prompt adds about workspaces."""
        lines = ["", "", "<WORKSPACES>",
                 "Your workspace is your current directory"
                 + (" (a copy of the project; edit it freely)." if self.contexts else ".")]
        for label, path in self.snapshots_in(text):
            lines.append(f"- {label}: read-only copy of its workspace at {path}")
        lines.append("</WORKSPACES>")
        return "\n".join(lines)

    # ------------------------------------------------------------------ the end

    def finish(self, result: RunResult) -> WorkspaceResult | None:
        """The winner's workspace against the seed; applied to writable context paths when
        the run reached consensus."""
        if result.winner is None or result.winner.agent_id not in self.dirs:
            return None
        agent = result.winner.agent_id
        ws = self.dirs[agent]
        before, after = _files(self.seed), _files(ws)
        changes: list[FileChange] = []
        for rel in sorted(set(before) | set(after)):
            if rel not in before:
                changes.append(FileChange(path=rel, change="added"))
            elif rel not in after:
                changes.append(FileChange(path=rel, change="deleted"))
            elif before[rel].read_bytes() != after[rel].read_bytes():
                changes.append(FileChange(path=rel, change="modified"))
        diff, truncated = _diff(changes, before, after)
        out = WorkspaceResult(agent_id=agent, path=str(ws), changed=changes, diff=diff,
                              diff_truncated=truncated)
        if result.status == "completed":
            self._write_back(out, changes, before, after)
        elif any(c.permission == "write" for c in self.contexts):
            out.skipped.append(f"nothing written back: the run ended {result.status}")
        return out

    def _write_back(self, out: WorkspaceResult, changes: list[FileChange],
                    before: dict[str, Path], after: dict[str, Path]) -> None:
        for ch in changes:
            ctx = self._context_of(ch.path)
            if ctx is None or ctx.permission != "write":
                if ctx is not None or self.contexts:
                    out.skipped.append(f"{ch.path}: not in a writable context path")
                continue
            sub = ch.path if ctx.rel == "." else ch.path[len(ctx.rel) + 1:]
            if is_vcs_path(sub):
                out.skipped.append(f"{ch.path}: version-control metadata is never written back")
                continue
            if ctx.is_protected(sub):
                out.skipped.append(f"{ch.path}: protected")
                continue
            target = ctx.path / sub
            parent = target.parent.resolve()
            if not parent.is_relative_to(ctx.path) or target.is_symlink():
                out.skipped.append(f"{ch.path}: outside the context path")
                continue
            # The same test on the real path: a directory symlink inside the context path
            # that leads into a protected directory.
            if ctx.is_protected((parent / target.name).relative_to(ctx.path).as_posix()):
                out.skipped.append(f"{ch.path}: protected")
                continue
            current = target.read_bytes() if target.is_file() else None
            seeded = before[ch.path].read_bytes() if ch.path in before else None
            if current != seeded:
                out.skipped.append(f"{ch.path}: changed in {ctx.path} during the run")
                continue
            if ch.change == "deleted":
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(after[ch.path], target)
            out.applied.append(str(target))

    def _context_of(self, rel: str) -> ContextPath | None:
        for c in self.contexts:
            if c.rel == "." or rel == c.rel or rel.startswith(c.rel + "/"):
                return c
        return None


def _diff(changes: list[FileChange], before: dict[str, Path], after: dict[str, Path]
          ) -> tuple[str, bool]:
    parts: list[str] = []
    size = 0
    for ch in changes:
        old = _text(before.get(ch.path))
        new = _text(after.get(ch.path))
        if old is None or new is None:
            piece = f"Binary file {ch.path} {ch.change}\n"
        else:
            piece = "".join(difflib.unified_diff(
                old, new, f"a/{ch.path}" if ch.change != "added" else "/dev/null",
                f"b/{ch.path}" if ch.change != "deleted" else "/dev/null"))
        if size + len(piece) > MAX_DIFF_CHARS:
            return "".join(parts), True
        parts.append(piece)
        size += len(piece)
    return "".join(parts), False


def _text(path: Path | None) -> list[str] | None:
    if path is None:
        return []
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace").splitlines(keepends=True)


def workspaces_for(team: Team, run_dir: Path) -> Workspaces | None:
    """The run's workspaces when a coding agent, or an API agent with the command-line tool
    (`tools/shell.py`), is on the team (None otherwise)."""
    from massgen_mcp.tools.shell import shell_enabled

    if not any(a.provider.coding_cli or shell_enabled(a.backend) for a in team.agents):
        return None
    ws = Workspaces(run_dir, context_paths(team))
    ws.prepare()
    return ws
