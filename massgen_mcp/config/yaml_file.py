"""Reading a team YAML file that may be hostile: bounded size, aliases, nesting and time.

A team file can come from a tool argument, i.e. from a repository an agent is reading. So
it is read with a size cap (``/dev/zero`` is not read to the end), regular files only when
untrusted (a FIFO would block), and parsed by a loader that refuses alias bombs and deep
nesting with an error that says what to change, instead of taking gigabytes or raising a
RecursionError. `read_yaml_async` parses in a worker thread, so other clients are served.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from massgen_mcp.errors import ConfigError

if TYPE_CHECKING:
    import yaml

MAX_BYTES = 1_000_000
MAX_ALIASES = 200
MAX_NODES = 200_000  # nodes after alias expansion: what the parsed value would hold
MAX_DEPTH = 64
MAX_RAW_BRACKETS = 200  # before parsing, counting brackets in strings too
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


@cache
def _loader_class() -> type[yaml.SafeLoader]:
    """The bounded loader, built on first use: PyYAML is imported when a team file is read,
    not when the server starts."""
    import yaml

    class _BoundedLoader(yaml.SafeLoader):
        """`SafeLoader` that counts aliases, expanded nodes and depth while composing."""

        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self._aliases = 0
            self._depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                self._aliases += 1
                if self._aliases > MAX_ALIASES:
                    raise _Refused(f"more than {MAX_ALIASES} aliases (*name); write the values "
                                   "out instead of referring to anchors")
            self._depth += 1
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise _Refused(f"nested more than {MAX_DEPTH} levels deep (line {mark.line + 1}); "
                               "a team file is a few levels deep")
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    return _BoundedLoader


class _Refused(Exception):
    pass


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """How many nodes the value would have with every alias expanded (shared nodes counted
    each time they are reached, computed once each)."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # a cycle (a recursive alias) counts once instead of forever
    import yaml

    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(n, memo) for n in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    memo[key] = min(size, MAX_NODES + 1)
    return memo[key]


def _bracket_depth(text: str) -> int:
    """The deepest `[`/`{` nesting, counting brackets inside strings too (an upper bound)."""
    brackets = _NOT_BRACKET.sub("", text)
    if not brackets:
        return 0
    return max(itertools.accumulate(1 if c in "[{" else -1 for c in brackets))


def parse_yaml(text: str, where: str) -> Any:
    """Parse YAML text within the limits; a ConfigError names the file and the problem."""
    # PyYAML's scanner reads a whole flow collection ahead looking for a key, in time
    # quadratic in its depth: refuse absurd nesting before it starts.
    if _bracket_depth(text) > MAX_RAW_BRACKETS:
        raise ConfigError(f"{where}: refused: brackets nested more than {MAX_RAW_BRACKETS} "
                          f"deep; a team file is nested a few levels (at most {MAX_DEPTH})")
    import yaml

    loader = _loader_class()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}) > MAX_NODES:
            raise _Refused(f"it expands to more than {MAX_NODES:,} values through its aliases "
                           "(an alias bomb?); write the values out")
        return loader.construct_document(node)
    except _Refused as e:
        raise ConfigError(f"{where}: refused: {e}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{where}: not valid YAML {_where_wrong(e)}") from None
    except RecursionError:
        raise ConfigError(f"{where}: refused: nested too deeply") from None
    finally:
        loader.dispose()


def _where_wrong(e: yaml.YAMLError) -> str:
    """Where the mistake is. PyYAML notices an unclosed `{`, `[` or quote only where the
    next thing fails to fit, often the line after: the line the construct starts on (its
    context mark) comes first then, and the place it was noticed after it. A block's
    problem mark is the bad line itself."""
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    context, start = str(getattr(e, "context", None) or ""), getattr(e, "context_mark", None)
    if mark is None:
        return f": {problem}"
    opened = bool(context) and ("flow" in context or "quoted" in context)  # not a block: its
    if opened and start is not None and start.line < mark.line:  # problem mark is right
        what = context.removeprefix("while ").replace("parsing ", "").replace("scanning ", "")
        return (f"(line {start.line + 1}, column {start.column + 1}): {what} that starts there "
                f"is not closed or not valid: {problem} (noticed at line {mark.line + 1}, "
                f"column {mark.column + 1})")
    return f"(line {mark.line + 1}, column {mark.column + 1}): {problem}"


def check_path_text(path: str, what: str = "team") -> None:
    """A NUL byte cannot be in a path: say so instead of a generic ValueError."""
    if "\x00" in path:
        raise ConfigError(f"{what}: the path contains a NUL character (\\0); give a plain file "
                          "path or a bundled team name")


def read_text(path: Path, *, regular_only: bool = False, limit: int = MAX_BYTES) -> str:
    """A file's text, at most `limit` bytes; bigger files are refused, not read."""
    check_path_text(str(path))
    try:
        if regular_only and not stat.S_ISREG(os.stat(path).st_mode):
            raise ConfigError(f"{path}: not a regular file; a team must be a YAML file")
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except FileNotFoundError:
        raise ConfigError(f"{path}: team file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory; give a team YAML file") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read team file: {e.strerror}") from None
    if len(data) > limit:
        raise ConfigError(f"{path}: refused: a team file is at most {limit:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte {e.start}); save it as UTF-8") from None


def read_yaml(path: Path, where: str | None = None, *, regular_only: bool = False) -> Any:
    """Read and parse a team YAML file within the limits (blocking: see `read_yaml_async`)."""
    return parse_yaml(read_text(path, regular_only=regular_only), where or path.name)


async def read_yaml_async(path: Path, where: str | None = None, *,
                          regular_only: bool = False) -> Any:
    """`read_yaml` in a worker thread, so a slow or large file never blocks other clients."""
    return await anyio.to_thread.run_sync(
        lambda: read_yaml(path, where, regular_only=regular_only))
