"""The one skip policy for tiers that need an install: skip locally, fail under CI."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from tiers import INSTALL, MARKERS, ROOT

MISSING = '''
from tiers import require, require_node_bin, require_program

def test_chromium():
    require("chromium", False, "/usr/bin/chromium is missing")

def test_npm_client():
    require_node_bin("no-such-client")

def test_program():
    require_program("redis", "no-such-redis-server")
'''


@pytest.mark.parametrize("ci", ["", "true"], ids=["local", "CI=true"])
def test_a_missing_tier_skips_locally_with_its_install_command_and_fails_in_ci(
        tmp_path: Path, ci: str) -> None:
    (tmp_path / "test_missing.py").write_text(MISSING)
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(Path(__file__).parents[1])}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rsf",
                           "-q", str(tmp_path / "test_missing.py")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    out = done.stdout
    if ci:
        assert done.returncode == 1 and "3 failed" in out, out
    else:
        assert done.returncode == 0 and "3 skipped" in out, out
    assert "install it with: bash .ci/viewer-setup.sh" in out
    assert "install it with: bash .ci/npm-setup.sh" in out
    assert "install it with: apt-get install -y redis-server" in out


MARKED = '''
import pytest

@pytest.fixture
def server():
    raise AssertionError("a fixture of a test whose tier is missing must not start")

@pytest.mark.redis
@pytest.mark.haproxy
def test_marked(server):
    raise AssertionError("a test whose tier is missing must not start")
'''


@pytest.mark.parametrize("ci", ["", "true"], ids=["local", "CI=true"])
def test_a_marked_test_whose_tier_is_missing_never_starts(tmp_path: Path, ci: str) -> None:
    """The marker drives the policy (tests/conftest.py): redis-server is off PATH here."""
    (tmp_path / "test_marked.py").write_text(MARKED)
    (tmp_path / "bin").mkdir()
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(Path(__file__).parents[1]),
           "PATH": str(tmp_path / "bin")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p",
                           "conftest", "-rsE", "-q", str(tmp_path / "test_marked.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    out = done.stdout
    if ci:
        assert done.returncode == 1 and "1 error" in out, out
    else:
        assert done.returncode == 0 and "1 skipped" in out, out
    assert "must not start" not in out, out
    assert "redis tier not installed: `redis-server` not on PATH; install it with: " \
           "apt-get install -y redis-server" in out, out
    assert "haproxy tier not installed: `haproxy` not on PATH; install it with: " \
           "apt-get install -y haproxy" in out, out  # every missing tier, in one reason
    if not ci:
        assert "SKIPPED [1] test_marked.py:" in out, out  # reported at the test


def test_every_tier_is_a_registered_marker_naming_its_install_command() -> None:
    """`pytest --markers` documents the tiers: pyproject registers one marker per tier."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    registered = dict(line.split(": ", 1) for line in config["ini_options"]["markers"])
    assert set(registered) == set(MARKERS)
    assert set(MARKERS.values()) == set(INSTALL)
    for marker, tier in MARKERS.items():
        assert INSTALL[tier] in registered[marker], marker
    assert "--strict-markers" in config["ini_options"]["addopts"]  # a mistyped tier fails
