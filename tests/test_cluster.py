"""Scale-out with real parts: Debian's haproxy round robin over three HTTP replicas and two
workers on Debian's redis-server, with MCP clients of both protocol eras going through
haproxy, and the faults (a replica killed while a client waits, Redis restarted mid-run).

Every test proves where its requests went (haproxy's `X-Served-By`), and every fault test
ends by checking the record: the events and the final result agree, and the store holds
exactly the runs the test started (none lost, none duplicated). Load stays small: a few runs
per test (the 300-run figure is bench/scale_out.py's).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from cluster import Cluster, ClusterClient, final_for, per_task_agent
from mcp_harness import write_team
from redis_server import RedisServer
from scripted_provider import Reply, ScriptedProvider, ScriptRequest
from tasks_client import TasksClient
from tiers import require_program

MODELS = [("a", "openai", "cl-a"), ("b", "anthropic", "cl-b"), ("c", "gemini", "cl-c")]
LATENCY = 0.05  # seconds the scripted provider adds to every reply
WORKERS = 2
TIMEOUT = 120  # bound on any one wait in these tests (a loaded 2-core machine)


# ---------------------------------------------------------------------------- parts


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

    from massgen_mcp.runs.redis_store import RUNS

    client = redis.Redis.from_url(url)
    try:
        return int(client.zcard(RUNS))
    finally:
        client.close()


# ---------------------------------------------------------------------------- both eras


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_round_robin_serves_both_eras(cluster: Cluster, provider: ScriptedProvider,
                                            mode: str) -> None:
    install(provider)
    async with cluster.client(mode) as c:
        assert c.client.session.protocol_version == ("2025-11-25" if mode == "legacy"
                                                     else "2026-07-28")
        for _ in range(3):
            await c.client.list_tools()
        messages: list[str] = []

        async def on_progress(progress: float, total: float | None,
                              message: str | None) -> None:
            messages.append(message or "")

        task = f"round robin {mode}"
        r = await c.client.call_tool("run_consensus", {"task": task},
                                     progress_callback=on_progress)
        assert not r.is_error, r.content
        data = r.structured_content or {}
        assert data["status"] == "completed" and data["final_answer"] == final_for(task)
        assert messages and messages[-1] == "finished: completed", messages
        # Consecutive requests went to every replica, with no stickiness.
        assert set(c.replicas_for("tools/list")) == {"r1", "r2", "r3"}, (c.served,
                                                                         cluster.stderr())
        assert set(c.served_by) == {"r1", "r2", "r3"}
        assert not c.sessions  # stateless: no replica holds a session for this client
        await check_record(c, data["run_id"], task)


async def test_sessions_without_stateless_http_break_round_robin(
        _programs: str, provider: ScriptedProvider, tmp_path: Path) -> None:
    """Why the replicas run --stateless-http: a 2025-11-25 session lives in the replica that
    opened it, so round robin sends its next request to a replica that never heard of it."""
    install(provider)
    team = write_team(tmp_path / "team.yaml", provider, MODELS)
    with Cluster(tmp_path, team, None, replicas=2, workers=0, stateless=False) as plain:
        with pytest.raises(Exception) as refused:  # the SDK wraps it (exception groups)
            async with plain.client("legacy") as c:
                await c.client.list_tools()
        assert "session" in _messages(refused.value).lower(), _messages(refused.value)


def _messages(error: BaseException) -> str:
    """The text of an error and of everything in its exception group(s)."""
    if isinstance(error, BaseExceptionGroup):
        return " | ".join(_messages(e) for e in error.exceptions)
    return f"{type(error).__name__}: {error}"


def test_readme_haproxy_config_is_valid(_programs: str, tmp_path: Path) -> None:
    """The haproxy config the README shows passes `haproxy -c` (as the tests' own does)."""
    import re
    import subprocess

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    section = readme.split("### haproxy\n", 1)[1]
    config = re.search(r"```\n(global\n.*?)```", section, re.S)
    assert config, "no haproxy config block under '### haproxy' in README.md"
    text = config.group(1).replace("/run/haproxy/admin.sock", str(tmp_path / "admin.sock"))
    (tmp_path / "haproxy.cfg").write_text(text)
    check = subprocess.run([_programs, "-c", "-f", str(tmp_path / "haproxy.cfg")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    for line in ("balance roundrobin", "option redispatch", "timeout server 1h"):
        assert line in text


async def test_background_run_answered_by_every_replica(cluster: Cluster,
                                                        provider: ScriptedProvider) -> None:
    gate = Gate()
    install(provider, gate)
    task = "background run"
    async with cluster.client("legacy") as c:
        started = await c.client.call_tool("run_consensus", {"task": task, "wait": False})
        run_id = (started.structured_content or {})["run_id"]
        starter = c.replicas_for("tools/call")[0]
        await gate.wait_held(3)
        # While it runs, every replica knows it: get_run and list_runs on each.
        for _ in range(3):
            got = await c.client.call_tool("get_run", {"run_id": run_id})
            assert (got.structured_content or {})["status"] == "running", got.content
        for _ in range(3):
            assert run_id in (await runs_for(c, [task]))[task]
        readers = set(c.replicas_for("tools/call")[1:])
        assert readers == {"r1", "r2", "r3"}, c.served
        gate.open()
        data = await poll_run(c, run_id)
        assert data["status"] == "completed" and data["final_answer"] == final_for(task)
        assert starter in {"r1", "r2", "r3"}
        await check_record(c, run_id, task)
        assert len((await runs_for(c, [task]))[task]) == 1


async def test_cancel_from_another_replica(cluster: Cluster, provider: ScriptedProvider) -> None:
    gate = Gate()
    install(provider, gate)
    task = "cancel me"
    try:
        async with cluster.client("2026-07-28") as c:
            started = await c.client.call_tool("run_consensus", {"task": task, "wait": False})
            run_id = (started.structured_content or {})["run_id"]
            await gate.wait_held(3)
            cancelled = await c.client.call_tool("cancel_run", {"run_id": run_id})
            starter, canceller = c.replicas_for("tools/call")[:2]
            assert starter != canceller, c.served
            body = cancelled.structured_content or {}
            # Stopped, or (a loaded machine: the wait for it is bounded) asked to stop.
            assert (body["cancelled"] is True and body["status"] == "cancelled") or (
                body["status"] == "running" and "asked the run to stop" in body["message"]), body
            data = await poll_run(c, run_id)
            assert data["status"] == "cancelled"
            await check_record(c, run_id, task)
    finally:
        gate.open()


async def test_task_followed_through_other_replicas(cluster: Cluster,
                                                    provider: ScriptedProvider) -> None:
    install(provider)
    task = "a task"
    tasks = TasksClient(max_poll_s=0.05, timeout=TIMEOUT)
    async with cluster.client("2026-07-28", extensions=[tasks]) as c:
        r = await c.client.call_tool("run_consensus", {"task": task})
        assert not r.is_error, r.content
        assert (r.structured_content or {})["final_answer"] == final_for(task)
        assert len(tasks.created) == 1
        creator = c.replicas_for("tools/call")[0]
        pollers = set(c.replicas_for("tasks/get"))
        assert pollers - {creator}, f"every tasks/get went to {creator}: {c.served}"
        assert tasks.polls[-1]["status"] == "completed"


async def test_viewer_page_through_any_replica(cluster: Cluster,
                                               provider: ScriptedProvider) -> None:
    install(provider)
    task = "viewer page"
    async with cluster.client("legacy") as c:
        r = await c.client.call_tool("run_consensus", {"task": task})
        run_id = (r.structured_content or {})["run_id"]
    assert cluster.proxy is not None
    served = set()
    async with httpx.AsyncClient(base_url=cluster.proxy.root, timeout=30) as web:
        for _ in range(3):
            page = await web.get(f"/runs/{run_id}")
            assert page.status_code == 200, page.text[:300]
            assert final_for(task) in page.text
            served.add(page.headers["x-served-by"])
    assert served == {"r1", "r2", "r3"}


# ---------------------------------------------------------------------------- faults


async def test_replica_killed_while_client_waits(own_cluster: Cluster,
                                                 provider: ScriptedProvider) -> None:
    """SIGKILL the replica serving a waiting run_consensus: the run goes on (a worker runs
    it), and the client's retry through haproxy reaches the same run and its result."""
    gate = Gate()
    install(provider, gate)
    task = "survive the replica"
    try:
        async with own_cluster.client("legacy") as c:
            failure: list[BaseException] = []

            async def wait_for_it() -> None:
                try:
                    await c.client.call_tool("run_consensus", {"task": task},
                                             progress_callback=_ignore_progress)
                except Exception as e:  # the connection to the killed replica broke
                    failure.append(e)

            with anyio.fail_after(TIMEOUT):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(wait_for_it)
                    await gate.wait_held(3)
                    victim = await wait_served(c, "tools/call")
                    own_cluster.kill_replica(victim)
            assert failure, "the call survived its replica's death?"
            gate.open()
            # The retry: find the run (the same client, through haproxy, any replica).
            found = (await runs_for(c, [task]))[task]
            assert len(found) == 1, found
            data = await poll_run(c, found[0])
            assert data["status"] == "completed", data
            assert data["final_answer"] == final_for(task)
            await check_record(c, found[0], task)
            assert victim not in c.served_by[-3:]
            assert own_cluster.store and runs_in_redis(own_cluster.store) == 1
    finally:
        gate.open()


async def test_replica_killed_while_task_client_polls(own_cluster: Cluster,
                                                      provider: ScriptedProvider) -> None:
    """A 2026-07-28 task: the replica that created it is killed; tasks/get goes on through
    the others and the task ends with the run's own result."""
    gate = Gate()
    install(provider, gate)
    task = "task survives"
    killed: list[str] = []
    killed_at: list[int] = []

    async def on_poll(session: Any, created: Any, polled: dict[str, Any]) -> None:
        if not killed:  # the first poll: the run is live, held at its first answers
            await gate.wait_held(3)
            killed.append(c.replicas_for("tools/call")[0])
            own_cluster.kill_replica(killed[0])
            killed_at.append(len(c.served))
            gate.open()

    tasks = TasksClient(on_poll=on_poll, max_poll_s=0.05, timeout=TIMEOUT)
    try:
        async with own_cluster.client("2026-07-28", extensions=[tasks]) as c:
            r = await c.client.call_tool("run_consensus", {"task": task})
            assert not r.is_error, r.content
            assert (r.structured_content or {})["final_answer"] == final_for(task)
            after = c.served[killed_at[0]:]
            assert ("tasks/get" in {m for m, _ in after}
                    and killed[0] not in {replica for _, replica in after}), (killed, c.served)
            run_id = (r.structured_content or {})["run_id"]
            await check_record(c, run_id, task)
            assert len((await runs_for(c, [task]))[task]) == 1
            assert own_cluster.store and runs_in_redis(own_cluster.store) == 1
    finally:
        gate.open()


async def test_redis_restarted_mid_run(own_cluster: Cluster, provider: ScriptedProvider,
                                       redis_server: RedisServer) -> None:
    """Redis goes away and comes back (same data: append-only file) while two runs are live,
    one followed by a client waiting on run_consensus, one started with wait=false: each
    ends truthfully (completed with its own answer, or interrupted/failed saying why), the
    waiting client gets the run's real outcome, nothing stays `running`, and the store holds
    exactly the two runs."""
    gate = Gate()
    install(provider, gate)
    waited, background = "through a restart (waiting)", "through a restart (background)"
    outcome: list[dict[str, Any]] = []
    try:
        async with own_cluster.client("legacy") as waiter, \
                own_cluster.client("2026-07-28") as c:

            async def wait_for_it() -> None:
                r = await waiter.client.call_tool("run_consensus", {"task": waited},
                                                  progress_callback=_ignore_progress)
                outcome.append(r.structured_content or {"error": str(r.content)})

            with anyio.fail_after(TIMEOUT):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(wait_for_it)
                    started = await c.client.call_tool("run_consensus",
                                                       {"task": background, "wait": False})
                    background_id = (started.structured_content or {})["run_id"]
                    await gate.wait_held(6)
                    redis_server.restart()
                    gate.open()
            assert outcome and outcome[0].get("run_id"), outcome
            waited_id = outcome[0]["run_id"]
            for run_id, task in ((waited_id, waited), (background_id, background)):
                data = await poll_run(c, run_id)
                assert data["status"] in ("completed", "interrupted", "failed"), data
                if data["status"] != "completed":
                    assert data.get("error"), data  # an honest reason
                record = await check_record(c, run_id, task)
                if run_id == waited_id:  # the waiting client was told what the record says
                    assert outcome[0]["status"] == record["status"], (outcome, record)
                    assert outcome[0].get("final_answer") == record.get("final_answer")
            found = await runs_for(c, [waited, background])
            assert {t: len(v) for t, v in found.items()} == {waited: 1, background: 1}, found
            assert runs_in_redis(redis_server.url) == 2
    finally:
        gate.open()


async def _ignore_progress(progress: float, total: float | None,
                           message: str | None) -> None:
    return None
