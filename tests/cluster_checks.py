"""What the cluster tests share (tests/scale/test_cluster.py and test_cluster_faults.py):
the scripted team, a gate that holds a run live, the cluster fixtures, and the checks every test
ends with (the events agree with the result; the runs in Redis are the runs started)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from cluster import Cluster, ClusterClient, final_for, per_task_agent
from mcp_harness import write_team
from redis_server import RedisServer
from scripted_provider import Reply, ScriptedProvider, ScriptRequest
from tiers import require_program

MODELS = [("a", "openai", "cl-a"), ("b", "anthropic", "cl-b"), ("c", "gemini", "cl-c")]
LATENCY = 0.05  # seconds the scripted provider adds to every reply
WORKERS = 2
TIMEOUT = 120  # bound on any one wait in these tests (a loaded 2-core machine)


class Gate:
    """Holds every agent's first answer until opened: the run is provably live meanwhile.
    A held request also ends when its caller goes away (a cancelled run)."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.held = threading.Semaphore(0)

    def open(self) -> None:
        self.opened.set()

    def agent(self, req: ScriptRequest) -> Any:
        async def script() -> Reply:
            self.held.release()
            while not (self.opened.is_set() or req.disconnected.is_set()):
                await asyncio.sleep(0.01)  # the fake model thinking, not the test waiting
            return per_task_agent(req)

        return script()

    async def wait_held(self, n: int, timeout: float = TIMEOUT) -> None:
        """Until `n` model requests are being held."""
        with anyio.fail_after(timeout):
            for _ in range(n):
                while not self.held.acquire(blocking=False):
                    await anyio.sleep(0.01)


def install(provider: ScriptedProvider, gate: Gate | None = None) -> None:
    provider.latency = LATENCY
    for _, _, model in MODELS:
        provider.script(model, gate.agent if gate else per_task_agent)


@pytest.fixture(scope="module")
def _programs() -> str:
    require_program("redis", "redis-server")
    return require_program("haproxy", "haproxy")


def start_cluster(tmp: Path, provider: ScriptedProvider, store: str) -> Cluster:
    team = write_team(tmp / "team.yaml", provider, MODELS)
    return Cluster(tmp, team, store, replicas=3, workers=WORKERS)


@pytest.fixture(scope="module")
def redis_module(_programs: str) -> Iterator[RedisServer]:
    """A Redis of this module's cluster (the session's shared one is emptied per test)."""
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="module")
def cluster(_programs: str, redis_module: RedisServer, _provider_server: ScriptedProvider,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One cluster for the tests that do not break it."""
    with start_cluster(tmp_path_factory.mktemp("cluster"), _provider_server,
                       redis_module.url) as c:
        yield c


@pytest.fixture
def own_cluster(_programs: str, redis_server: RedisServer, provider: ScriptedProvider,
                tmp_path: Path) -> Iterator[Cluster]:
    """A cluster (and a Redis) of its own, for a test that kills part of it."""
    with start_cluster(tmp_path, provider, redis_server.url) as c:
        yield c


async def wait_served(c: ClusterClient, method: str, timeout: float = TIMEOUT) -> str:
    """The replica that answered the first `method` request (once its headers are in)."""
    with anyio.fail_after(timeout):
        while not c.replicas_for(method):
            await anyio.sleep(0.01)
    return c.replicas_for(method)[0]


async def poll_run(c: ClusterClient, run_id: str, timeout: float = TIMEOUT) -> dict[str, Any]:
    """get_run until the run is no longer running; the final structured result."""
    with anyio.fail_after(timeout):
        while True:
            got = await c.client.call_tool("get_run", {"run_id": run_id})
            data = got.structured_content or {}
            assert data.get("run_id") == run_id, got.content
            if data["status"] != "running":
                return data
            await anyio.sleep(0.05)


async def check_record(c: ClusterClient, run_id: str, task: str) -> dict[str, Any]:
    """The events and the final result of `run_id` agree; returns the full result."""
    got = await c.client.call_tool("get_run", {"run_id": run_id, "detail": "all"})
    data = got.structured_content or {}
    events = data.get("events") or []
    assert data["status"] != "running", data
    finished = [e for e in events if e.get("kind") == "run_finished"]
    assert len(finished) == 1, [e.get("kind") for e in events]
    assert finished[0].get("status") == data["status"], (finished[0], data["status"])
    seqs = [e["seq"] for e in events if "seq" in e]
    assert seqs == sorted(set(seqs)), f"events out of order or repeated: {seqs}"
    answers = [e for e in events if e.get("kind") == "answer"]
    assert len(answers) == data["totals"]["answers"], (len(answers), data["totals"])
    if data["status"] == "completed":
        assert data["final_answer"] == final_for(task), data["final_answer"]
    for answer in data.get("answers") or []:  # no other caller's answer in this run
        assert answer["text"] == f"answer to {task}", answer
    return data


async def runs_for(c: ClusterClient, tasks: list[str]) -> dict[str, list[str]]:
    """Run ids per task, from list_runs (the store's own list, through any replica)."""
    listed = await c.client.call_tool("list_runs", {"limit": 200})
    runs = (listed.structured_content or {}).get("runs") or []
    return {t: [r["run_id"] for r in runs if r["task"] == t] for t in tasks}


def runs_in_redis(url: str) -> int:
    """How many runs the store holds (its index of run ids, read from Redis itself)."""
    import redis

    from massgen_mcp.runs.scale.redis_store import RUNS

    client = redis.Redis.from_url(url)
    try:
        return int(client.zcard(RUNS))
    finally:
        client.close()



async def ignore_progress(progress: float, total: float | None,
                           message: str | None) -> None:
    return None
