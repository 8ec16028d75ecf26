"""Shared fixtures: one loopback scripted provider per session, reset for every test."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from redis_server import RedisServer, flush
from scripted_provider import ScriptedProvider
from tiers import FIXTURE_MARKERS, MARKERS, in_ci, require_markers, unavailable

# No test may see a real key, and no test may reach a real provider.
for _var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
             "OPENROUTER_API_KEY", "XAI_API_KEY", "GROQ_API_KEY", "TOGETHER_API_KEY",
             "MASSGEN_MCP_HOME", "MASSGEN_MCP_TOKEN"):
    os.environ.pop(_var, None)


def _tier_markers(item: pytest.Item) -> list[str]:
    return sorted({mark.name for mark in item.iter_markers() if mark.name in MARKERS})


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses a tier's shared fixture (redis_url, cluster, browser...) is marked
    with that tier, as if its module said so. Locally, a test whose tier is missing is
    marked skipped here, so the skip is reported at the test, naming the install command."""
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            for marker in FIXTURE_MARKERS.get(fixture, ()):
                item.add_marker(marker)
        why = "" if in_ci() else unavailable(_tier_markers(item))
        if why:
            item.add_marker(pytest.mark.skip(reason=why))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under CI, a test whose tier is missing fails here, before its fixtures start (the
    runner's own setup comes after this conftest's)."""
    require_markers(_tier_markers(item))


@pytest.fixture(scope="session")
def _provider_server() -> Iterator[ScriptedProvider]:
    with ScriptedProvider() as provider:
        yield provider


@pytest.fixture
def provider(_provider_server: ScriptedProvider) -> Iterator[ScriptedProvider]:
    _provider_server.reset()
    yield _provider_server
    errors = list(_provider_server.script_errors)
    _provider_server.reset()
    assert not errors, f"a script raised: {errors!r}"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean working directory (runs are recorded under its .massgen/)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def _redis_session() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_url(_redis_session: RedisServer) -> str:
    """The URL of a real Redis (Debian's redis-server, one per test session), emptied for
    this test. Skips (locally) or fails (CI) when redis-server is not installed."""
    if _redis_session.proc is None or _redis_session.proc.poll() is not None:
        _redis_session.start()  # a test stopped it
    flush(_redis_session.port)
    return _redis_session.url


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A Redis of this test's own, for tests that stop or restart it (`restart()`)."""
    with RedisServer() as server:
        yield server


# The cluster fixtures (haproxy, replicas, workers, Redis) of tests/scale/test_cluster*.py.
from cluster_checks import _programs, cluster, own_cluster, redis_module  # noqa: E402, F401
