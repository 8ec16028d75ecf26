"""The paths a call names, for the hard line: which words of a command are paths, what
absolute path each names, and could it (maybe a glob) name a protected path or a
directory above one? Globs match as the shell does (a wildcard does not match a leading dot
unless the line turns dotglob on). Standard library only.
"""

from __future__ import annotations

import fnmatch
import os

from massgen_mcp.hook.scope import Scope, is_under

TYPE_CHECKING = False
if TYPE_CHECKING:
    from massgen_mcp.hook.shell import SimpleCommand

#: Whether the command being judged turns on dotglob (then wildcards match dot names too).
_DOTGLOB = [False]


def _segments(path: str) -> list[str]:
    return [s for s in path.split("/") if s]


def _globbed(path: str) -> bool:
    return any(c in path for c in "*?[")


def _segment(pattern: str, name: str) -> bool:
    """Does one glob segment match one name? As the shell does: a wildcard does not match a
    leading dot (unless the line turns dotglob on)."""
    if name.startswith(".") and not pattern.startswith(".") and not _DOTGLOB[0]:
        return False
    return fnmatch.fnmatchcase(name, pattern)


def _matches(pat: list[str], path: list[str], *, prefix: bool) -> bool:
    """Does glob `pat` match `path` (prefix: match `path` and then anything below it)?
    `**` stands for any number of segments (as with globstar; bash without it reads `**` as
    `*`, which matches less)."""
    if not path and prefix:
        return True
    if not pat:
        return not path
    head = pat[0]
    if head == "**":
        for k in range(len(path) + 1):
            if _matches(pat[1:], path[k:], prefix=prefix):
                return True
            if k < len(path) and path[k].startswith(".") and not _DOTGLOB[0]:
                return False
        return False
    return bool(path) and _segment(head, path[0]) and _matches(pat[1:], path[1:],
                                                                prefix=prefix)


def names_inside(pattern: str, root: str) -> bool:
    """Could `pattern` (an absolute path, maybe a glob) name `root` or something in it?"""
    if not _globbed(pattern):
        return is_under(pattern, root)
    return _matches(_segments(pattern), _segments(root), prefix=True)


def program_paths(workspace: str) -> list[str]:
    """The hook's own code: this package, and the `massgen-mcp` launcher that runs it.

    Inside the workspace (a checkout of massgen-mcp itself) the package is project code:
    the plan governs it like any other file.
    """
    package = os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [] if is_under(package, workspace) else [package]
    import sys

    launcher = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(launcher).startswith("massgen-mcp") and not is_under(launcher,
                                                                            workspace):
        paths.append(launcher)
    return paths


def guarded(path: str, protected: list[str], workspace: str) -> bool:
    """Could `path` name part of the guard: a protected path, or any installed copy of our
    program (a `massgen-mcp` launcher in a `bin` directory, a `massgen_mcp` package): which
    copy Claude Code's settings run is not for a tool call to guess. A checkout of
    massgen-mcp inside the workspace is project code."""
    if any(names_inside(path, p) for p in protected):
        return True
    parts = path.split("/")
    return not is_under(path, workspace) and (
        "massgen_mcp" in parts[:-1] or (len(parts) > 1 and parts[-2] == "bin" and (
            fnmatch.fnmatch("massgen-mcp", parts[-1]) or parts[-1].startswith("massgen-mcp"))))


def names_ancestor(pattern: str, target: str) -> bool:
    """Could `pattern` name `target` or a directory above it?"""
    if not _globbed(pattern):
        return is_under(target, pattern)
    pat, want = _segments(pattern), _segments(target)
    return any(_matches(pat, want[:k], prefix=False) for k in range(len(want) + 1))


def _absolute(scope: Scope, word: str) -> str | None:
    """The absolute path a word names (globs kept, symlinks resolved when literal)."""
    expanded = scope.expand(word)
    # Not known statically (after `cd "$X"` or `cd -`, a computed word): the ordinary rules
    # gate what they cannot resolve; the hard line only judges what it can name.
    if not expanded or "\0" in expanded or "\0" in scope.cwd:
        return None
    path = os.path.normpath(os.path.join(scope.cwd, expanded))
    return path if _globbed(path) else os.path.realpath(path)


_PARSED: dict[str, list[SimpleCommand]] = {}


def commands_of(command: str) -> list[SimpleCommand]:
    """`shell.simple_commands`, parsed once per hook call however many checks ask."""
    if command not in _PARSED:
        from massgen_mcp.hook.shell import simple_commands

        _PARSED.clear()
        _PARSED[command] = simple_commands(command)
    return _PARSED[command]


def _words(cmd: SimpleCommand) -> list[str]:
    """The words of a command that may be paths: operands, redirect targets, `--opt=path`."""
    words = [w for op, w in cmd.redirects if w and not w.startswith("&") and op != "<<<"]
    for arg in cmd.args:
        if not arg.startswith("-"):
            words.append(arg)
        if "=" in arg:  # `--file=x`, `if=x`
            words.append(arg.split("=", 1)[1])
    return words


def file_tool_target(tool: str, tool_input: dict[str, object], field: str) -> object:
    """The path a file tool reaches: for Glob its pattern joined to its root (`**/plan.key`
    under `~/.config` reaches the key as surely as the key's own path does). The tools list
    hidden names too, so wildcards match dot names here."""
    _DOTGLOB[0] = True
    root = tool_input.get(field)
    pattern = tool_input.get("pattern") if tool == "Glob" else None
    if not isinstance(pattern, str) or not pattern:
        return root
    if pattern.startswith(("/", "~", "$")) or not isinstance(root, str) or not root:
        return pattern if pattern.startswith(("/", "~", "$")) else os.path.join(".", pattern)
    return os.path.join(root, pattern)


def link_sources(command: object, scope: Scope) -> set[str]:
    """Targets of `ln -s`: the file rules judge them as deletes (a link to home is a way to
    delete it later), but making the link deletes nothing."""
    if not isinstance(command, str) or "ln" not in command:
        return set()
    return {p for c in commands_of(command) if c.program == "ln"
            for w in c.positionals()[:-1] if (p := _absolute(scope, w.rstrip("/") or "/"))}
