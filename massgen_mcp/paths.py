"""Where massgen-mcp keeps its files. Standard library only: the PreToolUse hook imports it.

The state directory holds ``runs/``, ``plans/`` and ``checkpoints/``. It is, in order:
an explicit ``--state-dir``, ``$MASSGEN_MCP_HOME``, or ``.massgen`` in the working directory.
"""

from __future__ import annotations

import os
from pathlib import Path

STATE_DIR_ENV = "MASSGEN_MCP_HOME"


def state_dir(explicit: str | Path | None = None, cwd: Path | None = None) -> Path:
    if explicit:
        return Path(explicit).expanduser().resolve()
    env = os.environ.get(STATE_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return ((cwd or Path.cwd()) / ".massgen").resolve()


def runs_dir(base: Path) -> Path:
    return base / "runs"


def plans_dir(base: Path) -> Path:
    return base / "plans"


def checkpoints_dir(base: Path) -> Path:
    return base / "checkpoints"
