"""Where massgen-mcp keeps its files. Standard library only: the PreToolUse hook imports it.

The state directory holds ``runs/``, ``plans/`` and ``checkpoints/``. It is, in order:
an explicit ``--state-dir``, ``$MASSGEN_MCP_HOME``, or ``.massgen`` in the working directory.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Any

STATE_DIR_ENV = "MASSGEN_MCP_HOME"
#: The `--store` URL when the option is not given. From the real environment only (a
#: project's `.env` never sets it): a URL with a password then stays out of `ps` output.
STORE_ENV = "MASSGEN_MCP_STORE"


_SAFE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def name_problem(name: object) -> str | None:
    """Why `name` cannot name a file or directory (an agent id, a workspace), or None.

    Letters, digits, `_`, `.` and `-` only, and never `.` or `..`: such a name is joined to a
    run directory, and anything else (`../../victim`, `a/b`, a NUL) would leave it."""
    if not isinstance(name, str) or not _SAFE_NAME.fullmatch(name):
        return "may use only letters, digits, '_', '.' and '-' (1 to 128 of them)"
    if name in (".", ".."):
        return "may not be '.' or '..'"
    return None


def inside(base: Path, path: Path, what: str) -> Path:
    """`path` resolved, or ValueError when it is not under `base` (resolved too)."""
    real = path.resolve()
    if not real.is_relative_to(base.resolve()):
        raise ValueError(f"{what} {path} is outside {base}")
    return real


def state_dir(explicit: str | Path | None = None, cwd: Path | None = None) -> Path:
    if explicit:
        return Path(explicit).expanduser().resolve()
    env = os.environ.get(STATE_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return ((cwd or Path.cwd()) / ".massgen").resolve()


def store_from_env() -> str | None:
    """`$MASSGEN_MCP_STORE`, the default of every `--store` option (None when unset)."""
    return os.environ.get(STORE_ENV) or None


def runs_dir(base: Path) -> Path:
    return base / "runs"


def plans_dir(base: Path) -> Path:
    return base / "plans"


def checkpoints_dir(base: Path) -> Path:
    return base / "checkpoints"


def bundled_configs_dir() -> Path:
    """Where the ready team files live (inside the wheel, or the repo's configs/)."""
    package = Path(__file__).resolve().parent
    packaged = package / "_configs"
    return packaged if packaged.is_dir() else package.parent / "configs"


def bundled_team_names() -> list[str]:
    d = bundled_configs_dir()
    return sorted(p.stem for p in d.glob("*.yaml")) if d.is_dir() else []


def config_home() -> Path:
    """This user's massgen-mcp config directory (outside any repository)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "massgen-mcp"


def user_teams_dir() -> Path:
    """Team files the user keeps for every project; tool calls may name them."""
    return config_home() / "teams"


def private_dir(path: Path, *, up_to: Path | None = None) -> Path:
    """Create `path` (and its parents) readable by this user only (0700), and make it and
    every directory from `up_to` down to it 0700 if they were not: run records hold tasks,
    answers and files of a project, whoever else can log in to the machine."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    chain = [path, *(p for p in path.parents if up_to is not None and p.is_relative_to(up_to))]
    for d in chain:
        with contextlib.suppress(OSError):
            if d.stat().st_mode & 0o077:
                d.chmod(0o700)
    return path


def open_private(path: Path, mode: str = "a") -> Any:
    """`path` opened for appending text, created 0600 (an existing file is made 0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    with contextlib.suppress(OSError):
        os.fchmod(fd, 0o600)
    return os.fdopen(fd, mode, encoding="utf-8")


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Replace `path` with `data` so that a reader sees the old file or the new one, never
    half of one, even after a crash: write a temporary file beside it, fsync, rename.

    Text is UTF-8; a lone surrogate (from a provider's `"\\ud800"`) becomes `?` rather than
    failing the write, because a record that cannot be written is a run that never ends.
    """
    import tempfile

    target = Path(path)
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "replace")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


#: The program's name, as installed on PATH.
PROGRAM = "massgen-mcp"


def own_command(path: str | None = None) -> str:
    """How to spell this program in a hint the user pastes into a shell (`massgen-mcp view
    run_…`): the bare name when it finds this very program on PATH; else the path this
    process was started by (`sys.argv[0]`, or the console script beside the interpreter,
    quoted for the shell); else `python -m massgen_mcp.cli` with this interpreter. An
    install that never put `massgen-mcp` on PATH (a virtual environment not activated) gets
    hints that work all the same. `path`: the PATH to look in (default: this process's)."""
    import shlex
    import shutil
    import sys
    import sysconfig

    scripts = [Path(sysconfig.get_path("scripts")) / PROGRAM,
               Path(sys.executable).parent / PROGRAM]
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    mine = [argv0] if argv0 is not None and argv0.name == PROGRAM else []
    mine += [s for s in scripts if s.is_file()]
    bare = shutil.which(PROGRAM, path=path)
    if bare is not None:
        found = Path(bare).resolve()
        if any(found == m.resolve() for m in mine if m.exists()):
            return PROGRAM
    for m in mine:
        if m.exists() and os.access(m, os.X_OK):
            return shlex.quote(str(m.absolute()))
    return f"{shlex.quote(sys.executable)} -m massgen_mcp.cli"
