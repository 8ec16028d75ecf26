"""Workers (`massgen-mcp worker --store redis://...`): front ends hand runs to them through the
job queue and answer from the run's event stream.

Real parts: Debian's redis-server (`redis_url`), workers as subprocesses of the installed
command, the scripted provider on loopback (the workers call it), front ends as the real
server behind the SDK's in-memory client (`front_end`), so a tool call goes through the same
host, progress and tasks code a client reaches over HTTP.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import answer_then_vote, has_answered, presenting
from mcp import Client
from mcp_harness import EXE, free_port, server_env, started, stdio_params, write_team
from scripted_provider import TEST_KEY, Hang, Reply, ScriptedProvider, ScriptRequest, answer

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.runs.store import RUN_FINISHED
from massgen_mcp.runs.store_open import open_store
from massgen_mcp.server import build_server

START_TIMEOUT = 60.0  # a worker imports the app and connects; bounded, generous under load


class WorkerProcess:
    def __init__(self, proc: subprocess.Popen[str], lines: list[str]) -> None:
        self.proc, self.lines = proc, lines

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def signal(self, sig: int) -> None:
        os.killpg(self.proc.pid, sig)


@contextmanager
def worker(cwd: Path, redis_url: str, team: Path | None, *args: str,
           env: dict[str, str] | None = None) -> Iterator[WorkerProcess]:
    """`massgen-mcp worker --store URL --team TEAM ...`, once it says it takes runs."""
    cmd = [EXE, "worker", "--store", redis_url, "--log-level", "INFO",
           *(["--team", str(team)] if team else []), *args]
    with started(cmd, cwd, env, "taking runs from", "worker", START_TIMEOUT,
                 stop_seconds=30) as (proc, lines, _):
        yield WorkerProcess(proc, lines)


@asynccontextmanager
async def front_end(cwd: Path, redis_url: str, team: Path, *, queue_timeout: float = 120.0,
                    **client_options: Any) -> AsyncIterator[tuple[Client, App]]:
    """The server as `massgen-mcp --store URL --team TEAM` builds it (dispatching to
    workers), behind the SDK's in-memory client."""
    state = cwd / ".massgen"
    app = App(state, default_team=str(team), env=Environment({}, dotenv_dir=cwd), cwd=cwd,
              store=open_store(redis_url, state))
    app.hand_runs_to_workers(queue_timeout)
    mcp, host = build_server(app)
    async with anyio.create_task_group() as background:
        host.background = background
        async with Client(mcp, **client_options) as client:
            yield client, app
        background.cancel_scope.cancel()


@pytest.fixture
def team_path(provider: ScriptedProvider, tmp_path: Path) -> Path:
    provider.script("w-a", answer_then_vote("Use Kafka", "agent2", final="FINAL: Kafka"))
    provider.script("w-b", answer_then_vote("Use Kafka too", "agent2", final="FINAL: Kafka"))
    return write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "w-a"), ("b", "anthropic", "w-b")], early_stop=False)


async def test_a_worker_runs_the_front_ends_call_with_progress(
        team_path: Path, tmp_path: Path, redis_url: str, provider: ScriptedProvider) -> None:
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    with worker(tmp_path, redis_url, team_path) as w:
        async with front_end(tmp_path, redis_url, team_path) as (client, app):
            result = await client.call_tool("run_consensus", {"task": "Which queue?"},
                                            progress_callback=on_progress)  # type: ignore[arg-type]
            assert not result.is_error, result.content
            data = result.structured_content
            assert data is not None
            assert (data["status"], data["final_answer"]) == ("completed", "FINAL: Kafka")
            run_id = data["run_id"]
            events = app.run_events(run_id)
            got = await client.call_tool("get_run", {"run_id": run_id})
            assert got.structured_content and got.structured_content["status"] == "completed"
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "queued" and "worker_started" in kinds and kinds[-1] == RUN_FINISHED
    [started] = [e for e in events if e["kind"] == "worker_started"]
    assert f"-{w.proc.pid}-" in started["worker"]  # executed by the worker process
    assert events[-1]["status"] == "completed"
    assert progress[0].startswith("waiting for a worker")
    assert any("a worker took the run" in m for m in progress)
    assert any("answered (" in m for m in progress)
    assert progress[-1] == "finished: completed"
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert provider.requests_for("w-a")
    # The job carried the call, never the team's key: nothing in Redis holds it.
    import redis

    db: Any = redis.Redis.from_url(redis_url)
    dump = b"".join(db.dump(k) or b"" for k in db.keys("*"))
    assert db.keys("saq:job:massgen-runs:run_*") and TEST_KEY.encode() not in dump


def stalls_after_answering(text: str) -> Any:
    """Answer once, then never answer again (the run has an answer, and goes on)."""

    def script(req: ScriptRequest) -> Reply:
        return Hang() if has_answered(req) or presenting(req) else answer(text)

    return script


async def wait_for_event(app: App, run_id: str, kind: str, timeout: float = 30.0
                         ) -> dict[str, Any]:
    """The first event of `kind` in the run's stream (waiting for it)."""
    with anyio.fail_after(timeout):
        async for event in app.store.follow(run_id):
            if event.get("kind") == kind:
                return event
    raise AssertionError(f"the run ended without a {kind} event")


async def test_a_run_no_worker_takes_ends_interrupted_naming_the_worker_command(
        team_path: Path, tmp_path: Path, redis_url: str, provider: ScriptedProvider) -> None:
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    async with front_end(tmp_path, redis_url, team_path, queue_timeout=1.0) as (client, app):
        result = await client.call_tool("run_consensus", {"task": "Which queue?"},
                                        progress_callback=on_progress)  # type: ignore[arg-type]
        data = result.structured_content
        assert data is not None and data["status"] == "interrupted"
        stale = data["run_id"]
        record = app.get_run(stale)
        assert record.status == "interrupted"
        assert record.error and "massgen-mcp worker --store redis://" in record.error
        assert "--queue-timeout" in record.error
        assert progress[0].startswith("waiting for a worker")
        events = app.run_events(stale)
        assert events[-1]["kind"] == RUN_FINISHED and events[-1]["status"] == "interrupted"
    assert not provider.requests  # nothing was executed
    # A worker that starts later never runs it (it left the queue), and runs new calls.
    with worker(tmp_path, redis_url, team_path):
        async with front_end(tmp_path, redis_url, team_path) as (client, app):
            fresh = await client.call_tool("run_consensus", {"task": "Which queue?"})
            assert fresh.structured_content and \
                fresh.structured_content["status"] == "completed"
            assert "worker_started" not in [e["kind"] for e in app.run_events(stale)]
            assert app.get_run(stale).status == "interrupted"


async def test_a_queued_run_cancelled_before_any_worker_took_it(
        team_path: Path, tmp_path: Path, redis_url: str, provider: ScriptedProvider) -> None:
    async with front_end(tmp_path, redis_url, team_path) as (client, app):
        started = await client.call_tool("run_consensus", {"task": "q", "wait": False})
        assert started.structured_content is not None
        run_id = started.structured_content["run_id"]
        assert started.structured_content["status"] == "running"
        cancelled = await client.call_tool("cancel_run", {"run_id": run_id})
        assert cancelled.structured_content is not None
        assert cancelled.structured_content["cancelled"] is True, cancelled.structured_content
        assert app.get_run(run_id).status == "cancelled"
        with worker(tmp_path, redis_url, team_path):
            fresh = await client.call_tool("run_consensus", {"task": "another"})
            assert fresh.structured_content and \
                fresh.structured_content["status"] == "completed"
        assert "worker_started" not in [e["kind"] for e in app.run_events(run_id)]
        assert all("another" in r.text for r in provider.requests)  # only the second ran


async def test_cancel_on_another_front_end_stops_the_run_in_its_worker(
        provider: ScriptedProvider, tmp_path: Path, redis_url: str) -> None:
    provider.script("w-stuck", Hang())
    team = write_team(tmp_path / "t.yaml", provider, [("s", "openai", "w-stuck")])
    with worker(tmp_path, redis_url, team):
        async with front_end(tmp_path, redis_url, team) as (one, app_one), \
                front_end(tmp_path, redis_url, team) as (other, _):
            started = await one.call_tool("run_consensus", {"task": "t", "wait": False})
            assert started.structured_content is not None
            run_id = started.structured_content["run_id"]
            await provider.wait_for("w-stuck", 1, timeout=30)  # the worker is calling it
            cancelled = await other.call_tool("cancel_run", {"run_id": run_id})
            assert cancelled.structured_content is not None
            assert cancelled.structured_content["cancelled"] is True, \
                cancelled.structured_content
            assert cancelled.structured_content["status"] == "cancelled"
            got = await one.call_tool("get_run", {"run_id": run_id})
            assert got.structured_content and got.structured_content["status"] == "cancelled"
            events = app_one.run_events(run_id)
            assert events[-1]["kind"] == RUN_FINISHED and events[-1]["status"] == "cancelled"


async def test_the_waiting_client_cancelling_stops_the_run_in_its_worker(
        provider: ScriptedProvider, tmp_path: Path, redis_url: str) -> None:
    provider.script("w-stuck2", Hang())
    team = write_team(tmp_path / "t.yaml", provider, [("s", "anthropic", "w-stuck2")])
    with worker(tmp_path, redis_url, team):
        async with front_end(tmp_path, redis_url, team) as (client, app):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "run_consensus", {"task": "t"})
                await provider.wait_for("w-stuck2", 1, timeout=30)
                tg.cancel_scope.cancel()  # the SDK client sends notifications/cancelled
            [run_id] = app.engine.store.ids()
            await wait_for_event(app, run_id, RUN_FINISHED)
            assert app.get_run(run_id).status == "cancelled"


async def test_a_worker_whose_team_differs_refuses_the_run(
        provider: ScriptedProvider, tmp_path: Path, redis_url: str) -> None:
    provider.script("w-front", answer_then_vote("A"))
    provider.script("w-other", answer_then_vote("B"))
    front = write_team(tmp_path / "front.yaml", provider, [("a", "openai", "w-front")])
    other = write_team(tmp_path / "other.yaml", provider, [("a", "openai", "w-other")])
    with worker(tmp_path, redis_url, other) as w:
        async with front_end(tmp_path, redis_url, front) as (client, app):
            result = await client.call_tool("run_consensus", {"task": "t"})
            assert result.is_error
            assert result.structured_content is not None
            record = app.get_run(result.structured_content["run_id"])
        assert w.proc.poll() is None  # still serving
    assert w.proc.returncode == 0  # SIGTERM: a clean stop
    assert record.status == "failed"
    assert record.error and "a (chatcompletion/w-other)" in record.error
    assert "a (chatcompletion/w-front)" in record.error and "same --team" in record.error
    assert not provider.requests  # refused before any call


def queue_entry(client: Any, key: str, body: str) -> None:
    """Put an entry in the workers' queue directly (as anyone who can write to Redis can)."""
    job_id = f"saq:job:massgen-runs:{key}"
    client.set(job_id, body)
    client.zadd("saq:massgen-runs:incomplete", {job_id: 0})
    client.rpush("saq:massgen-runs:queued", job_id)


async def test_malformed_jobs_are_dropped_and_the_worker_goes_on(
        team_path: Path, tmp_path: Path, redis_url: str, provider: ScriptedProvider) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    with worker(tmp_path, redis_url, team_path) as w:
        queue_entry(client, "garbage", "this is not JSON {")
        envelope = {"function": "run", "queue": "massgen-runs", "timeout": 0, "retries": 1}
        queue_entry(client, "not-a-run", json.dumps(
            {**envelope, "key": "not-a-run", "kwargs": {"job": {"run_id": "x", "call": 1}}}))
        queue_entry(client, "no-such-run", json.dumps({**envelope, "key": "no-such-run", "kwargs": {
            "job": {"run_id": "run_20260101T000000Z_abcdef",
                    "call": {"mode": "consensus", "task": "t"}}}}))
        queue_entry(client, "code", json.dumps(
            {**envelope, "key": "code", "function": "os.system", "kwargs": {"command": "id"}}))
        async with front_end(tmp_path, redis_url, team_path) as (mcp_client, _app):
            result = await mcp_client.call_tool("run_consensus", {"task": "Which queue?"})
            assert result.structured_content and \
                result.structured_content["status"] == "completed"
        assert w.proc.poll() is None
    log = w.stderr
    assert "is not a job" in log  # the garbage entry
    assert "not a massgen-mcp run job" in log and "'x' is not a run id" in log
    assert "run_20260101T000000Z_abcdef has no record" in log
    assert "KeyError: 'os.system'" in log  # saq runs only the functions it was given
    assert all("Which queue?" in r.text for r in provider.requests)


def test_a_worker_with_a_bad_store_url_stops_at_once_with_the_password_masked(
        tmp_path: Path) -> None:
    port = free_port()
    for url, expected in [(f"redis://:hunter2secret@127.0.0.1:{port}/0", "does not answer"),
                          ("http://127.0.0.1/0", "is not a store"),
                          (f"redis://127.0.0.1:{port}/zero", "not a number")]:
        done = subprocess.run([EXE, "worker", "--store", url], cwd=tmp_path, env=server_env(),
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        assert expected in done.stderr and "massgen-mcp worker" in done.stderr
        assert "hunter2secret" not in done.stderr + done.stdout
    assert f"redis://:***@127.0.0.1:{port}/0" in subprocess.run(
        [EXE, "worker", "--store", f"redis://:hunter2secret@127.0.0.1:{port}/0"],
        cwd=tmp_path, env=server_env(), capture_output=True, text=True, timeout=60).stderr


async def test_a_worker_killed_mid_run_ends_it_interrupted_with_its_answers(
        provider: ScriptedProvider, tmp_path: Path, redis_url: str) -> None:
    """Two workers; the one running the call is SIGKILLed after the agents answered. The run
    is not started again on the other (its calls would be paid twice): its lease runs out and
    it ends `interrupted` with the answers reached, and the waiting client gets that."""
    import redis

    provider.latency = 0.05
    provider.script("k-a", stalls_after_answering("Use Kafka"))
    provider.script("k-b", stalls_after_answering("Use SQS"))
    team = write_team(tmp_path / "t.yaml", provider, [("a", "openai", "k-a"),
                                                      ("b", "openai", "k-b")])
    with worker(tmp_path, redis_url, team) as one, worker(tmp_path, redis_url, team) as two:
        async with front_end(tmp_path, redis_url, team) as (client, app):
            outcome: dict[str, Any] = {}

            async def call() -> None:
                outcome["result"] = await client.call_tool("run_consensus", {"task": "q"})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await provider.wait_for("k-a", 2, timeout=30)  # answered, now voting
                await provider.wait_for("k-b", 2, timeout=30)
                [run_id] = app.engine.store.ids()
                started = await wait_for_event(app, run_id, "worker_started")
                with anyio.fail_after(30):  # both answers are in the recorded status
                    while len(app.get_run(run_id).answers) < 2:
                        await anyio.sleep(0.05)
                held, spare = (one, two) if f"-{one.proc.pid}-" in started["worker"] \
                    else (two, one)
                held.signal(signal.SIGKILL)
                held.proc.wait(10)
                # The same run queued again (as a confused or hostile writer could): the
                # other worker does not execute it a second time.
                queue_entry(redis.Redis.from_url(redis_url), "again", json.dumps({
                    "function": "run", "queue": "massgen-runs", "key": "again",
                    "timeout": 0, "retries": 1, "kwargs": {"job": {
                        "run_id": run_id, "call": {"mode": "consensus", "task": "q"}}}}))
            result = outcome["result"]
            assert result.structured_content is not None
            assert result.structured_content["status"] == "interrupted"
            record = app.get_run(run_id)
            events = app.run_events(run_id)
        assert spare.proc.poll() is None
    assert record.status == "interrupted"
    assert record.error and "lease" in record.error
    assert {a.agent_id for a in record.answers} == {"a", "b"}  # the answers reached
    assert events[-1]["kind"] == RUN_FINISHED and events[-1]["status"] == "interrupted"
    assert [e["kind"] for e in events].count("worker_started") == 1
    assert [e["kind"] for e in events].count(RUN_FINISHED) == 1
    assert "claimed by another worker" in spare.stderr
    assert len(provider.requests_for("k-a")) == 2  # never started again


async def test_sigterm_ends_a_workers_runs_interrupted_and_the_worker_exits(
        provider: ScriptedProvider, tmp_path: Path, redis_url: str) -> None:
    provider.script("t-a", stalls_after_answering("Use Kafka"))
    team = write_team(tmp_path / "t.yaml", provider, [("a", "openai", "t-a")])
    with worker(tmp_path, redis_url, team, "--drain", "0") as w:
        async with front_end(tmp_path, redis_url, team) as (client, app):
            started = await client.call_tool("run_consensus", {"task": "q", "wait": False})
            assert started.structured_content is not None
            run_id = started.structured_content["run_id"]
            await provider.wait_for("t-a", 2, timeout=30)
            w.signal(signal.SIGTERM)
            await wait_for_event(app, run_id, RUN_FINISHED)
            record = app.get_run(run_id)
        assert w.proc.wait(30) == 0
    assert record.status == "interrupted"
    assert record.error and "SIGTERM" in record.error
    assert record.answers and record.answers[0].agent_id == "a"


async def test_a_task_and_wait_false_behave_as_in_one_process(
        team_path: Path, tmp_path: Path, redis_url: str) -> None:
    from tasks_client import TasksClient

    tasks = TasksClient()
    with worker(tmp_path, redis_url, team_path):
        async with front_end(tmp_path, redis_url, team_path, mode="2026-07-28",
                             extensions=[tasks]) as (client, _app):
            r = await client.call_tool("run_consensus", {"task": "Which queue?"})
            assert r.structured_content is not None, r.content
            assert r.structured_content["final_answer"] == "FINAL: Kafka"
            assert tasks.polls[-1]["status"] == "completed"
            assert tasks.polls[-1]["result"]["structuredContent"] == r.structured_content
        async with front_end(tmp_path, redis_url, team_path) as (client, _app):
            started = await client.call_tool("run_consensus", {"task": "Which queue?",
                                                                "wait": False})
            assert started.structured_content is not None
            assert started.structured_content["status"] == "running"
            run_id = started.structured_content["run_id"]
            with anyio.fail_after(60):  # as a client with a short tool timeout follows it
                while True:
                    got = await client.call_tool("get_run", {"run_id": run_id})
                    assert got.structured_content is not None
                    if got.structured_content["status"] != "running":
                        break
                    await anyio.sleep(0.05)
            assert got.structured_content["status"] == "completed"


def test_massgen_mcp_store_over_http_and_stdio_hands_runs_to_a_worker(
        team_path: Path, tmp_path: Path, redis_url: str) -> None:
    """The command as an operator starts it: `--store` alone makes it a front end."""
    from mcp_harness import http_server

    async def call(url: str) -> dict[str, Any]:
        async with Client(url) as client:
            r = await client.call_tool("run_consensus", {"task": "Which queue?"})
            assert r.structured_content is not None, r.content
            return r.structured_content

    with worker(tmp_path, redis_url, team_path) as w, \
            http_server(tmp_path, "--store", redis_url, "--team", str(team_path)) as server:
        data = anyio.run(call, server.url)
    assert (data["status"], data["final_answer"]) == ("completed", "FINAL: Kafka")
    store = open_store(redis_url, tmp_path / "reader")
    [started] = [e for e in store.events(data["run_id"]) if e["kind"] == "worker_started"]
    assert f"-{w.proc.pid}-" in started["worker"]
    # stdio, as a client starts it: the same front end.
    async def over_stdio() -> dict[str, Any]:
        params = stdio_params(tmp_path, "--store", redis_url, "--team", str(team_path))
        async with Client(params, mode="legacy") as client:
            r = await client.call_tool("run_consensus", {"task": "Which queue?"})
            assert r.structured_content is not None, r.content
            return r.structured_content

    with worker(tmp_path, redis_url, team_path):
        piped = anyio.run(over_stdio)
    assert piped["status"] == "completed"
    assert "worker_started" in [e["kind"] for e in store.events(piped["run_id"])]
    # --run-here: the records are shared, the run is executed by the server itself.
    with http_server(tmp_path, "--store", redis_url, "--team", str(team_path),
                     "--run-here") as server:
        here = anyio.run(call, server.url)
    assert here["status"] == "completed"
    kinds = [e["kind"] for e in store.events(here["run_id"])]
    assert "queued" not in kinds and "worker_started" not in kinds


async def test_a_plan_runs_in_a_worker_and_is_stored_by_its_front_end(
        provider: ScriptedProvider, tmp_path: Path, redis_url: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from test_modes import GOOD, planner

    monkeypatch.setenv("MASSGEN_MCP_KEY_FILE", str(tmp_path / "keys" / "plan.key"))
    provider.script("p-w1", planner(GOOD))
    provider.script("p-w2", planner(GOOD))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "p-w1"),
                                                         ("b", "anthropic", "p-w2")])
    (tmp_path / "elsewhere").mkdir()
    with worker(tmp_path / "elsewhere", redis_url, team):
        async with front_end(tmp_path, redis_url, team) as (client, app):
            r = await client.call_tool("plan", {"goal": "Add a job queue", "depth": "shallow"})
            assert r.structured_content is not None and not r.is_error, r.content
            data = r.structured_content
            run_id = data["consensus"]["run_id"]
            kinds = [e["kind"] for e in app.run_events(run_id)]
            latest = app.get_plan("latest")
    assert data["status"] == "completed" and data["plan_id"] == latest.plan_id
    assert [t["id"] for t in data["plan"]["tasks"]] == [
        t["id"] for t in GOOD["tasks"]]  # type: ignore[index]
    assert "worker_started" in kinds
    assert Path(data["path"]).is_relative_to(tmp_path / ".massgen")  # the front end's
    assert not (tmp_path / "elsewhere" / ".massgen" / "plans").exists()


async def test_a_sampling_team_runs_on_the_front_end_itself(
        team_path: Path, tmp_path: Path, redis_url: str) -> None:
    """Only the front end holds the client's session that sampling needs: no worker is
    running, and the run is not queued."""
    from test_server import _sampling_agent

    async def callback(context: Any, params: Any) -> Any:
        return _sampling_agent(context, params)

    async with front_end(tmp_path, redis_url, team_path, queue_timeout=0.5, mode="legacy",
                         sampling_callback=callback) as (client, app):
        r = await client.call_tool("run_consensus", {"task": "Say hi", "models": "sampling"})
        assert r.structured_content is not None, r.content
        assert r.structured_content["final_answer"] == "sampled final"
        kinds = [e["kind"] for e in app.run_events(r.structured_content["run_id"])]
    assert "queued" not in kinds and "worker_started" not in kinds
