"""The one skip policy for tiers that need an install: skip locally, fail under CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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
