"""The command a client should run to start massgen-mcp, whatever the client's PATH.

A client (Claude Code, Codex, an editor) starts the server from its own environment, which
is rarely the shell `setup` ran in: a virtual environment that is active here is not on the
client's PATH. So the bare name `massgen-mcp` is written only when it resolves, outside any
virtual environment, to the very program that is running; otherwise the absolute path of
the installed executable.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

NAME = "massgen-mcp"


def installed_executable() -> Path | None:
    """The `massgen-mcp` console script of the running installation, if there is one."""
    candidates = []
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == NAME:
        candidates.append(argv0)
    candidates += [Path(sysconfig.get_path("scripts")) / NAME, Path(sys.executable).parent / NAME]
    for c in candidates:
        found = shutil.which(str(c))
        if found:
            return Path(found).absolute()
    return None


def _in_virtualenv(path: Path) -> bool:
    """True for a program inside a virtual environment's bin/ (not on a client's PATH)."""
    return (path.parent.parent / "pyvenv.cfg").is_file()


def same_program(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or os.path.samefile(a, b)
    except OSError:
        return False


def launch_command(path: str | None = None) -> list[str]:
    """`["massgen-mcp"]` when that name finds this program from a directory a client also
    has on PATH; else the absolute path of the executable; else `python -m massgen_mcp.cli`
    (a source tree that was never installed)."""
    exe = installed_executable()
    if exe is None:
        return [str(Path(sys.executable).absolute()), "-m", "massgen_mcp.cli"]
    bare = shutil.which(NAME, path=path)
    if bare and same_program(Path(bare), exe) and not _in_virtualenv(Path(bare).absolute()):
        return [NAME]
    return [str(exe)]
