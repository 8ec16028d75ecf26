"""Where massgen-mcp keeps its files. Standard library only: the PreToolUse hook imports it.

The state directory holds ``runs/``, ``plans/`` and ``checkpoints/``. It is, in order:
an explicit ``--state-dir``, ``$MASSGEN_MCP_HOME``, or ``.massgen`` in the working directory.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

STATE_DIR_ENV = "MASSGEN_MCP_HOME"
#: The `--store` URL when the option is not given. From the real environment only (a
#: project's `.env` never sets it): a URL with a password then stays out of `ps` output.
STORE_ENV = "MASSGEN_MCP_STORE"


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
