"""The Redis store (`--store redis://...`) against a real redis-server (tests/redis_server.py).

What only Redis does (the behaviour both stores share is in test_store_contract.py): a run
executed by one App is read, listed, viewed and streamed live by another server process on
the same Redis; bad URLs and an unreachable or password-protected Redis stop the command at
start with the password masked; no key reaches Redis; a run whose process was killed reads
`interrupted` (once) with its best answer when its lease expires; a Redis gone mid-run does
not stop the run and its record catches up when Redis is back; concurrent runs of two
processes keep their own records; `massgen-mcp export` writes files from Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import yaml
from agents import answer_then_vote, has_answered, presenting
from helpers import make_team
from mcp import Client
from mcp_harness import http_server, write_team
from redis_server import RedisServer, free_port
from scripted_provider import Reply, ScriptedProvider, ScriptRequest, answer, vote
from tasks_client import CreateTaskResult, TasksClient, get_task
from test_secrets import ENV_KEY, LEAKS, SAYS, TEAM_KEY, talker

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.config.team import Team
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import ConfigError, MassgenError, RunNotFoundError
from massgen_mcp.redaction import Redactor
from massgen_mcp.runs.engine import Engine
from massgen_mcp.runs.store import RUN_FINISHED, RunStore
from massgen_mcp.runs.store_open import open_store
from massgen_mcp.runs.store_url import check_store_url, masked_url
from massgen_mcp.server import build_server

ROOT = Path(__file__).resolve().parent.parent


async def test_a_run_recorded_in_redis_is_read_back_by_another_store(
        provider: ScriptedProvider, redis_url: str, tmp_path: Path) -> None:
    from massgen_mcp.runs.redis_store import RedisStore

    provider.script("redis-a", answer_then_vote("42"))
    team = make_team(provider, [("a", "openai_chat", "redis-a")])
    store = open_store(redis_url, tmp_path / "one")
    assert isinstance(store, RedisStore)
    engine = Engine(tmp_path / "one", Environment({}), store=store)
    result = await engine.run(team, "What is six times seven?")
    assert result.status == "completed"

    other = open_store(redis_url, tmp_path / "two")  # another process's view
    [run_id] = other.ids()
    assert run_id == result.run_id
    back = other.load(run_id)
    assert (back.status, back.final_answer) == ("completed", result.final_answer)
    kinds = [e["kind"] for e in other.events(run_id)]
    assert {"answer", "vote"} <= set(kinds) and kinds[-1] == RUN_FINISHED
    seqs = [e["seq"] for e in other.events(run_id)]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert not (tmp_path / "one" / "runs" / run_id / "events.jsonl").exists()  # not files
    assert [r.run_id for r in Engine(tmp_path / "two", Environment({}), store=other).list()] \
        == [run_id]


def test_no_store_url_is_the_file_store(tmp_path: Path) -> None:
    assert isinstance(open_store(None, tmp_path), RunStore)
    assert isinstance(open_store("", tmp_path), RunStore)


def test_the_file_store_never_imports_redis(tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; from massgen_mcp.runs.store_open import "
            "open_store; open_store(None, Path('.')); import massgen_mcp.server.transports; "
            "print('redis' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(("url", "problem"), [
    ("   ", "empty"),
    ("postgres://db/0", "not a store"),
    ("redis://:hunter2secret@/0", "host is missing"),
    ("redis://:hunter2secret@127.0.0.1:99999/0", "out of range"),
    ("redis://127.0.0.1:6379/zero", "not a number"),
    ("unix://?db=0", "socket's path"),
    ("redis://127.0.0.1:notaport/0", "not a URL"),
])
def test_a_bad_store_url_says_what_is_wrong_and_hides_the_password(
        url: str, problem: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        open_store(url, tmp_path)
    assert problem in str(e.value)
    assert "hunter2secret" not in str(e.value)
    assert "redis://127.0.0.1:6379/0" in str(e.value)  # the fix: what a URL looks like


def test_the_password_is_masked_in_every_url_form() -> None:
    assert masked_url("redis://:pw@h:1/0") == "redis://:***@h:1/0"
    assert masked_url("rediss://user:p%40ss@h/2") == "rediss://user:***@h/2"
    assert masked_url("redis://h:6379/0") == "redis://h:6379/0"
    assert check_store_url("unix:///run/redis.sock?db=3") == "unix:///run/redis.sock?db=3"


def test_an_unreachable_redis_stops_the_store_at_start(tmp_path: Path) -> None:
    url = f"redis://:sekret-pass-123@127.0.0.1:{free_port()}/0"
    with pytest.raises(ConfigError) as e:
        open_store(url, tmp_path, connect_timeout=1.0)
    text = str(e.value)
    assert "does not answer" in text and "start redis-server" in text
    assert "sekret-pass-123" not in text and ":***@127.0.0.1" in text


def test_a_wrong_password_is_refused_at_start_without_echoing_it(tmp_path: Path) -> None:
    with RedisServer(extra=["--requirepass", "the-right-one-42"]) as server:
        good = f"redis://:the-right-one-42@127.0.0.1:{server.port}/0"
        open_store(good, tmp_path)  # answers
        bad = f"redis://:wrong-pass-99@127.0.0.1:{server.port}/0"
        with pytest.raises(ConfigError) as e:
            open_store(bad, tmp_path)
        assert "wrong-pass-99" not in str(e.value) and "***" in str(e.value)


def test_the_server_command_refuses_a_store_it_cannot_reach(tmp_path: Path) -> None:
    url = f"redis://:sekret-pass-123@127.0.0.1:{free_port()}/0"
    out = subprocess.run([sys.executable, "-m", "massgen_mcp.cli", "--store", url,
                          "--state-dir", str(tmp_path)], capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert out.returncode == 2
    assert "does not answer" in out.stderr and ":***@" in out.stderr
    assert "sekret-pass-123" not in out.stderr + out.stdout


def test_an_unknown_run_is_not_found(redis_url: str, tmp_path: Path) -> None:
    store = open_store(redis_url, tmp_path)
    with pytest.raises(RunNotFoundError):
        store.load("run_20261130T183300Z_a1b2c3")
    with pytest.raises(RunNotFoundError):
        store.events("run_20261130T183300Z_a1b2c3")
    assert store.ids() == []


# ---------------------------------------------------------------------------- many processes

WAIT = 30.0  # bound on every wait; never a sleep to wait


def _app(state: Path, url: str, team: Path, **store_options: float) -> App:
    return App(state, default_team=str(team), env=Environment({}, dotenv_dir=state.parent),
               cwd=state.parent, store=open_store(url, state, **store_options))


@contextlib.asynccontextmanager
async def _client(app: App) -> AsyncIterator[Client]:
    mcp, host = build_server(app)
    async with anyio.create_task_group() as background:
        host.background = background
        async with Client(mcp, mode="legacy") as client:
            yield client
        background.cancel_scope.cancel()


def _gated(gate: threading.Event, text: str) -> Any:
    """Answers `text` at once, then waits for `gate` before voting (a run that stays live
    as long as the test needs)."""
    async def script(req: ScriptRequest) -> Reply:
        if presenting(req):
            return answer(f"FINAL: {text}")
        if not has_answered(req):
            return answer(text)
        await asyncio.to_thread(gate.wait, WAIT)
        return vote("agent1", "the first is fine")

    return script


async def test_a_second_server_on_the_same_redis_reads_lists_views_and_streams_a_run(
        provider: ScriptedProvider, redis_url: str, tmp_path: Path) -> None:
    """A run executed by one App is served, while it runs and after, by another server
    process (`massgen-mcp --transport streamable-http --store URL`) over real HTTP."""
    gate = threading.Event()
    provider.script("shared-a", _gated(gate, "Use SQS"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "shared-a")])
    (tmp_path / "two").mkdir()
    one = _app(tmp_path / "one" / ".massgen", redis_url, team)
    try:
        with http_server(tmp_path / "two", "--team", str(team), "--store", redis_url) as two:
            base = two.url.rsplit("/mcp", 1)[0]
            async with _client(one) as c1, Client(two.url, mode="legacy") as c2, \
                    httpx.AsyncClient(base_url=base, timeout=WAIT) as http:
                started = await c1.call_tool("run_consensus", {"task": "Which queue?",
                                                               "wait": False})
                run_id = started.structured_content["run_id"]
                with anyio.fail_after(WAIT):
                    while not any(e["kind"] == "answer" for e in one.store.events(run_id)):
                        await anyio.sleep(0.05)
                got = await c2.call_tool("get_run", {"run_id": run_id})
                assert got.structured_content["status"] == "running"
                # The other server's viewer streams it live: the rest arrives as we listen.
                seen: list[str] = []
                with anyio.fail_after(WAIT):
                    async with http.stream("GET", f"/runs/{run_id}/events") as stream:
                        async for line in stream.aiter_lines():
                            seen.append(line)
                            if line.startswith("id: "):
                                gate.set()
                body = "\n".join(seen)
                assert "event: end" in body
                ids = [int(x[4:]) for x in body.splitlines() if x.startswith("id: ")]
                assert ids == list(range(1, len(one.store.events(run_id)) + 1))
                page = await http.get(f"/runs/{run_id}")
                assert page.status_code == 200 and "FINAL: Use SQS" in page.text
                got = await c2.call_tool("get_run", {"run_id": run_id})
                assert got.structured_content["status"] == "completed"
                assert got.structured_content["final_answer"] == "FINAL: Use SQS"
                listed = await c2.call_tool("list_runs", {})
                assert [r["run_id"] for r in listed.structured_content["runs"]] == [run_id]
                record = await c2.read_resource(f"massgen://runs/{run_id}")
                assert "FINAL: Use SQS" in record.model_dump_json()
                events = await c2.read_resource(f"massgen://runs/{run_id}/events")
                assert "run_finished" in events.model_dump_json()
                view = await c2.read_resource(f"massgen://runs/{run_id}/view")
                assert 'data-state="done"' in json.loads(view.model_dump_json())[
                    "contents"][0]["text"]
                backends = await c2.call_tool("list_backends", {})
                usage = backends.structured_content["usage"]
                assert sum(row["runs"] for row in usage.values()) == 1
    finally:
        gate.set()
    # Nothing of it went to the second server's files.
    assert not (tmp_path / "two" / ".massgen" / "runs" / run_id / "events.jsonl").exists()


def _scan(url: str) -> list[str]:
    """Every key and every value in Redis, as text (strings, hashes, streams, sets)."""
    import redis

    r: Any = redis.Redis.from_url(url, decode_responses=True)  # replies are str
    out: list[str] = []
    for name in r.scan_iter(count=1000):
        out.append(name)
        kind = r.type(name)
        if kind == "string":
            out.append(r.get(name) or "")
        elif kind == "hash":
            out.append(json.dumps(r.hgetall(name)))
        elif kind == "stream":
            out.append(json.dumps(r.xrange(name)))
        elif kind == "zset":
            out.append(json.dumps(r.zrange(name, 0, -1)))
        else:
            out.append(f"<{kind}>")
    return out


async def test_no_key_reaches_redis(provider: ScriptedProvider, redis_url: str,
                                    tmp_path: Path) -> None:
    provider.script("m1", talker)
    backend = {**provider.backend("openai", "m1", max_retries=0), "api_key": TEAM_KEY}
    team = tmp_path / "team.yaml"
    team.write_text(yaml.safe_dump({"agents": [{"id": "a", "backend": backend}]}))
    app = App(tmp_path / ".massgen", env=Environment({"OPENAI_API_KEY": ENV_KEY},
                                                     dotenv_dir=tmp_path),
              cwd=tmp_path, default_team=str(team), store=open_store(redis_url, tmp_path))
    async with _client(app) as c:
        r = await c.call_tool("run_consensus", {"task": f"Which queue? {SAYS}"})
        assert not r.is_error, r.content
        run_id = r.structured_content["run_id"]
        await c.call_tool("get_run", {"run_id": run_id, "detail": "all"})
    assert any(TEAM_KEY[3:15] in req.text for req in provider.requests)  # the agent said it
    blobs = _scan(redis_url)
    assert any(run_id in b for b in blobs) and len(blobs) > 6
    for blob in blobs:
        for leak in LEAKS:
            assert leak not in blob, leak


CHILD = """
import json, sys, anyio
from pathlib import Path
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.runs.engine import Engine
from massgen_mcp.runs.store_open import open_store

data, url, state = json.loads(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
engine = Engine(state, Environment({}), store=open_store(url, state, lease_ttl=1.0))
team = team_from_data(data, "team.yaml", Environment({}))

def listener(event):
    if event["kind"] == "answer":
        print("ANSWERED", flush=True)

anyio.run(lambda: engine.run(team, "Which queue?", listener=listener))
"""


async def test_a_run_whose_process_died_reads_interrupted_once_with_its_best_answer(
        provider: ScriptedProvider, redis_url: str, tmp_path: Path) -> None:
    gate = threading.Event()
    provider.script("lease-a", _gated(gate, "SQS so far"))
    data = {"agents": [{"id": "a", "backend": provider.backend("openai", "lease-a",
                                                                 max_retries=0)}]}
    store = open_store(redis_url, tmp_path / "reader")
    try:
        async with await anyio.open_process(
                [sys.executable, "-c", CHILD, json.dumps(data), redis_url,
                 str(tmp_path / "child")], stderr=None) as child:
            assert child.stdout is not None
            with anyio.fail_after(WAIT):
                buffered = b""
                while b"ANSWERED" not in buffered:
                    buffered += await child.stdout.receive()
                [run_id] = store.ids()
                while "SQS so far" not in store.load(run_id).model_dump_json():
                    await anyio.sleep(0.05)  # its status writer runs every 0.25 s
            assert store.load(run_id).status == "running"  # its lease is held
            child.kill()  # SIGKILL: no clean-up, the lease just stops being renewed
            await child.wait()
        with anyio.fail_after(WAIT):  # the lease (TTL 1 s) expires
            while (result := store.load(run_id)).status == "running":
                await anyio.sleep(0.05)
    finally:
        gate.set()
    assert result.status == "interrupted" and "lease" in (result.error or "")
    assert "SQS so far" in result.model_dump_json()  # the best answer it had reached
    again = open_store(redis_url, tmp_path / "another").load(run_id)
    assert again.model_dump() == result.model_dump()  # finalized once, read the same
    finals = [e for e in store.events(run_id) if e["kind"] == RUN_FINISHED]
    assert len(finals) == 1 and finals[0]["status"] == "interrupted"
    with anyio.fail_after(WAIT):  # followers end
        assert [e async for e in store.follow(run_id)][-1]["kind"] == RUN_FINISHED
    assert store.usage()[result.agents[0].provider]["runs"] == 1
    assert not store.request_cancel(run_id)


async def test_redis_gone_mid_run_the_run_finishes_and_its_record_catches_up(
        provider: ScriptedProvider, redis_server: RedisServer, tmp_path: Path) -> None:
    gate = threading.Event()
    provider.script("gone-a", _gated(gate, "Kafka"))
    team = make_team(provider, [("a", "openai_chat", "gone-a")])
    store = open_store(redis_server.url, tmp_path, lease_ttl=2.0)
    engine = Engine(tmp_path, Environment({}), store=store)
    answered = anyio.Event()

    def listener(event: dict[str, Any]) -> None:
        if event["kind"] == "answer":
            answered.set()

    async def run() -> RunResult:
        return await engine.run(team, "Which queue?", listener=listener)

    try:
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                done: list[RunResult] = []
                tg.start_soon(lambda: _collect(run, done))
                await answered.wait()
                redis_server.stop()
                gate.set()  # the run goes on with no Redis
    finally:
        gate.set()
    [result] = done
    assert result.status == "completed" and result.final_answer == "FINAL: Kafka"
    with pytest.raises(MassgenError, match=r"did not answer.*redis-server is running"):
        store.load(result.run_id)  # a read says what is wrong; nothing crashes
    with pytest.raises(MassgenError, match="did not answer"):
        await engine.run(team, "Another?")  # a new run is refused clearly
    redis_server.restart()
    with anyio.fail_after(WAIT):  # the lease thread writes what waited
        while True:
            with contextlib.suppress(MassgenError):
                if store.load(result.run_id).status == "completed":
                    break
            await anyio.sleep(0.05)
    back = open_store(redis_server.url, tmp_path / "other").load(result.run_id)
    assert back.final_answer == "FINAL: Kafka"
    events = store.events(result.run_id)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["kind"] == RUN_FINISHED


async def _collect(run: Any, into: list[RunResult]) -> None:
    into.append(await run())


async def test_concurrent_runs_of_two_processes_keep_their_own_records(
        provider: ScriptedProvider, redis_url: str, tmp_path: Path) -> None:
    engines = [Engine(tmp_path / name, Environment({}),
                      store=open_store(redis_url, tmp_path / name)) for name in ("p1", "p2")]
    results: list[RunResult] = []
    async with anyio.create_task_group() as tg:
        for n in range(6):
            provider.script(f"many-{n}", answer_then_vote(f"answer number {n}"))
            team = make_team(provider, [("a", "openai_chat", f"many-{n}"),
                                        ("b", "openai_chat", f"many-{n}")])

            async def one(team: Team = team, n: int = n) -> None:
                results.append(await engines[n % 2].run(team, f"question {n}"))

            tg.start_soon(one)
    reader = open_store(redis_url, tmp_path / "reader")
    assert sorted(reader.ids()) == sorted(r.run_id for r in results)
    for r in results:
        n = int(reader.meta(r.run_id)["task"].split()[-1])
        assert reader.load(r.run_id).final_answer == f"FINAL: answer number {n}"
        events = reader.events(r.run_id)
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert all(f"answer number {n}" in e["text"] for e in events if e["kind"] == "answer")


def test_export_from_redis_through_the_command(redis_url: str, tmp_path: Path) -> None:
    store = open_store(redis_url, tmp_path / "src")
    run_id = "run_20261201T000000Z_0e0e0e"
    writer = store.open(run_id, Redactor(), {"task": "Exported?", "mode": "consensus"})
    writer.event("run_started", {})
    writer.finish(RunResult(run_id=run_id, status="completed", task="Exported?", team="t",
                            final_answer="Yes"))
    out = subprocess.run([sys.executable, "-m", "massgen_mcp.cli", "export", "latest",
                          "--store", redis_url, "--to", str(tmp_path / "dst")],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    files = RunStore(tmp_path / "dst")
    assert files.load(run_id).final_answer == "Yes"
    assert [e["kind"] for e in files.events(run_id)] == ["run_started", RUN_FINISHED]
    bad = subprocess.run([sys.executable, "-m", "massgen_mcp.cli", "export",
                          "run_20261201T000000Z_ffffff", "--store", redis_url],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert bad.returncode == 1 and "no run 'run_20261201T000000Z_ffffff'" in bad.stderr


async def test_a_task_made_on_one_replica_is_answered_by_another(
        provider: ScriptedProvider, redis_url: str, tmp_path: Path) -> None:
    """The task store is the run store: `tasks/get` on a second App on the same Redis
    resolves a task the first App created, while it works and once it is done."""
    gate = threading.Event()
    provider.script("task-a", _gated(gate, "Use SQS"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "task-a")])
    one = _app(tmp_path / "one" / ".massgen", redis_url, team)
    two = _app(tmp_path / "two" / ".massgen", redis_url, team)
    elsewhere: list[dict[str, Any]] = []
    mcp2, _ = build_server(two)
    async with Client(mcp2, mode="2026-07-28", extensions=[TasksClient()]) as c2:

        async def on_poll(session: Any, created: CreateTaskResult,
                          task: dict[str, Any]) -> None:
            if task["status"] == "working" and not elsewhere:
                elsewhere.append(await get_task(c2.session, created.task_id))
                gate.set()

        tasks = TasksClient(on_poll=on_poll)
        try:
            mcp1, host1 = build_server(one)
            async with anyio.create_task_group() as background:
                host1.background = background
                async with Client(mcp1, mode="2026-07-28", extensions=[tasks]) as c1:
                    r = await c1.call_tool("run_consensus", {"task": "Which queue?"})
                background.cancel_scope.cancel()
        finally:
            gate.set()
        assert not r.is_error and r.structured_content is not None
        task_id = tasks.created[0].task_id
        assert elsewhere[0]["status"] == "working" and elsewhere[0]["taskId"] == task_id
        done = await get_task(c2.session, task_id)
        assert done["status"] == "completed"
        assert done["result"]["structuredContent"]["final_answer"] == "FINAL: Use SQS"
    assert not any(task_id in blob for blob in _scan(redis_url))  # only its hash is kept


def test_report_and_view_read_a_run_from_redis_and_refuse_a_bad_store(
        redis_url: str, tmp_path: Path) -> None:
    store = open_store(redis_url, tmp_path / "src")
    run_id = "run_20261201T000000Z_0d0d0d"
    writer = store.open(run_id, Redactor(), {"task": "Reported from Redis?"})
    writer.event("run_started", {})
    writer.finish(RunResult(run_id=run_id, status="completed", task="Reported from Redis?",
                            team="t", final_answer="Yes, from Redis"))
    out = subprocess.run([sys.executable, "-m", "massgen_mcp.cli", "report", "latest",
                          "--store", redis_url, "-o", "-"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Reported from Redis?" in out.stdout and "Yes, from Redis" in out.stdout
    url = f"redis://:view-secret-77@127.0.0.1:{free_port()}/0"
    bad = subprocess.run([sys.executable, "-m", "massgen_mcp.cli", "view", "--no-open",
                          "--store", url], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path)
    assert bad.returncode == 1 and "does not answer" in bad.stderr
    assert "view-secret-77" not in bad.stderr + bad.stdout


def test_the_password_never_reaches_a_log_when_redis_goes_away(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with RedisServer(extra=["--requirepass", "log-secret-pass-31"]) as server:
        url = f"redis://:log-secret-pass-31@127.0.0.1:{server.port}/0"
        store = open_store(url, tmp_path)
        run_id = "run_20261201T000000Z_0c0c0c"
        writer = store.open(run_id, Redactor(), {"task": "Logged?"})
        server.stop()
        with caplog.at_level("DEBUG"):
            writer.event("answer", {"agent": "a"})
            writer.status(RunResult(run_id=run_id, status="running", task="Logged?",
                                    team="t"))
            with pytest.raises(MassgenError) as e:
                store.load(run_id)
        server.restart()
        writer.finish(RunResult(run_id=run_id, status="completed", task="Logged?", team="t"))
        assert store.load(run_id).status == "completed"  # caught up
    assert "did not take its events" in caplog.text and "redis://:***@127.0.0.1" in caplog.text
    assert "log-secret-pass-31" not in caplog.text + str(e.value)


async def test_a_run_whose_event_loop_stopped_polling_loses_its_lease(
        redis_url: str, tmp_path: Path) -> None:
    """The lease thread keeps a run alive only while the executing loop still polls
    `cancel_requested` (the executor does every second): a wedged loop is not alive."""
    store = open_store(redis_url, tmp_path, lease_ttl=1.0)
    run_id = "run_20261201T000000Z_0b0b0b"
    polled = store.open(run_id, Redactor(), {"task": "Wedged?"})
    polled.status(RunResult(run_id=run_id, status="running", task="Wedged?", team="t"))
    assert not polled.cancel_requested()  # one poll, then none: the loop "hangs"
    quiet = "run_20261201T000000Z_0a0a0a"  # never polled: renewed as long as it is held
    quiet_writer = store.open(quiet, Redactor(), {"task": "Quiet?"})
    quiet_writer.status(RunResult(run_id=quiet, status="running", task="Quiet?", team="t"))
    with anyio.fail_after(WAIT):
        while store.load(run_id).status == "running":
            await anyio.sleep(0.05)
    assert store.load(run_id).status == "interrupted"
    assert store.load(quiet).status == "running"
    quiet_writer.finish(RunResult(run_id=quiet, status="completed", task="Quiet?", team="t"))


async def test_with_redis_down_tools_fail_clearly_and_the_server_stays_up(
        provider: ScriptedProvider, redis_server: RedisServer, tmp_path: Path) -> None:
    provider.script("down-a", answer_then_vote("Use SQS"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "down-a")])
    app = _app(tmp_path / ".massgen", redis_server.url, team)
    async with _client(app) as c:
        done = await c.call_tool("run_consensus", {"task": "Which queue?"})
        run_id = done.structured_content["run_id"]
        redis_server.stop()
        for tool, args in (("list_runs", {}), ("get_run", {"run_id": run_id}),
                           ("run_consensus", {"task": "Another?"})):
            r = await c.call_tool(tool, args)
            text = json.dumps(r.model_dump(mode="json"))
            assert r.is_error and "did not answer" in text and "redis-server" in text, tool
        redis_server.restart()
        listed = await c.call_tool("list_runs", {})
        assert [x["run_id"] for x in listed.structured_content["runs"]] == [run_id]
