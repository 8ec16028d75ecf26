"""`protected_paths` of a context path: one reading for the file tools and for write-back.

An entry is relative to its context path (MassGen's meaning). Every spelling of the same path
means the same thing: `config/prod.yaml`, `./config/prod.yaml`, `config//prod.yaml`,
`config\\prod.yaml` and `config/prod.yaml/`. An entry may be a glob (`*.lock`,
`config/*.yaml`); like a `.gitignore` line, an entry without a `/` matches a name at any
depth (`*.lock` protects `api/poetry.lock`, `secrets` protects `a/secrets/key.txt`). A match
on a directory protects everything below it. Matching ignores case, so `Config/Prod.yaml`
on a case-insensitive file system is protected too (protecting more is the safe side).

VCS metadata (`.git`, a directory or a submodule's `.git` *file*, `.hg`, `.svn`) is always
protected: writing it back would let an agent repoint git at another repository or install
hooks.
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Iterable, Sequence
from pathlib import Path

VCS_NAMES = frozenset({".git", ".hg", ".svn"})
_GLOB = frozenset("*?[")


def normalize(entry: str, root: Path | None = None) -> str | None:
    """The canonical form of one entry (`./a//b/` -> `a/b`), or None when it names nothing
    inside the context path (empty, or leaving it with `..`). An absolute entry inside `root`
    is made relative to it. `"."` means the whole context path."""
    text = str(entry).strip().replace("\\", "/")
    if not text:
        return None
    if text.startswith("/"):
        if root is None:
            return None
        try:
            text = Path(text).relative_to(root).as_posix()
        except ValueError:
            return None
    norm = posixpath.normpath(text).lstrip("/")
    if norm == ".." or norm.startswith("../"):
        return None
    return norm.casefold()


def normalize_all(entries: Iterable[str], root: Path | None = None) -> tuple[str, ...]:
    """Every entry normalized (those that name nothing inside are dropped)."""
    out = (normalize(e, root) for e in entries)
    return tuple(dict.fromkeys(e for e in out if e is not None))


def is_vcs_path(rel: str) -> bool:
    """Does this relative path go through VCS metadata (`.git`, `sub/.git`, `.git/config`)?"""
    return any(part.casefold() in VCS_NAMES for part in rel.replace("\\", "/").split("/"))


def is_protected(rel: str, patterns: Sequence[str]) -> bool:
    """Is `rel` (relative to the context path, `/`-separated) or one of its parent
    directories matched by one of the normalized `patterns`? VCS metadata always is."""
    if is_vcs_path(rel):
        return True
    path = posixpath.normpath(rel.replace("\\", "/")).lstrip("/").casefold()
    if not patterns:
        return False
    parts = [] if path == "." else path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    for pattern in patterns:
        if pattern == ".":
            return True
        if pattern.startswith("**/") and is_protected(rel, (pattern[3:],)):  # zero dirs
            return True
        glob = bool(_GLOB & set(pattern))
        if "/" in pattern:
            if any(p == pattern or (glob and fnmatch.fnmatchcase(p, pattern))
                   for p in prefixes):
                return True
        elif any(n == pattern or (glob and fnmatch.fnmatchcase(n, pattern)) for n in parts):
            return True
    return False
