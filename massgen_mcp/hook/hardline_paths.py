"""Path matching for the hard line: could a path (maybe a glob) name a protected path, or a
directory above one? Globs match as the shell does (a wildcard does not match a leading dot
unless the line turns dotglob on). Standard library only.
"""

from __future__ import annotations

import fnmatch

from massgen_mcp.hook.scope import is_under

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


def names_ancestor(pattern: str, target: str) -> bool:
    """Could `pattern` name `target` or a directory above it?"""
    if not _globbed(pattern):
        return is_under(target, pattern)
    pat, want = _segments(pattern), _segments(target)
    return any(_matches(pat, want[:k], prefix=False) for k in range(len(want) + 1))
