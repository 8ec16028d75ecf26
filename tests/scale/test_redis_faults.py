"""Faults of the Redis store (a real redis-server): a killed process's run reads
`interrupted` once, with its best answer, when its lease expires; a wedged event loop loses
its lease; Redis gone mid-run: the run finishes and its record catches up when Redis is
back; with Redis down, tools fail clearly and the server keeps serving. (The end-to-end
Redis-restart fault through haproxy, replicas and workers is in the cluster tests.)
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import answer_then_vote
from helpers import make_team
from mcp_harness import write_team
from redis_apps import WAIT, app_on_redis, client_of, collect, gated_agent
from redis_server import RedisServer
from scripted_provider import ScriptedProvider

from massgen_mcp.config.env import Environment
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import MassgenError
from massgen_mcp.redaction import Redactor
from massgen_mcp.runs.engine import Engine
from massgen_mcp.runs.scale.redis_record import RedisRecord
from massgen_mcp.runs.store import RUN_FINISHED
from massgen_mcp.runs.store_open import open_store

pytestmark = pytest.mark.redis

CHILD = """
import json, sys, anyio
from pathlib import Path
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.runs.engine import Engine
from massgen_mcp.runs.scale.redis_record import RedisRecord
from massgen_mcp.runs.store_open import open_store

data, url, state = json.loads(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
engine = Engine(state, Environment({}), store=open_store(url, state, lease_ttl=1.0))
team = team_from_data(data, "team.yaml", Environment({}))

def listener(event):
    if event["kind"] == "answer":
        print("ANSWERED", flush=True)

anyio.run(lambda: engine.prepare(team, "Which queue?", listener=listener).start())
"""


async def test_a_run_whose_process_died_reads_interrupted_once_with_its_best_answer(
        provider: ScriptedProvider, redis_url: str, tmp_path: Path) -> None:
    gate = threading.Event()
    provider.script("lease-a", gated_agent(gate, "SQS so far"))
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
    provider.script("gone-a", gated_agent(gate, "Kafka"))
    team = make_team(provider, [("a", "openai_chat", "gone-a")])
    store = open_store(redis_server.url, tmp_path, lease_ttl=2.0)
    engine = Engine(tmp_path, Environment({}), store=store)
    answered = anyio.Event()

    def listener(event: dict[str, Any]) -> None:
        if event["kind"] == "answer":
            answered.set()

    async def run() -> RunResult:
        return await engine.prepare(team, "Which queue?", listener=listener).start()

    try:
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                done: list[RunResult] = []
                tg.start_soon(lambda: collect(run, done))
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
        await engine.prepare(team, "Another?").start()  # a new run is refused clearly
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


async def test_a_run_that_lost_its_lease_writes_nothing_more(redis_url: str,
                                                             tmp_path: Path) -> None:
    """A wedged loop's run reads `interrupted` (its final record, written by a reader); when
    the loop polls again, the lease thread finds the lease gone to that final record, and the
    record writes nothing more: no event after the final one, no `running` status."""
    store = open_store(redis_url, tmp_path, lease_ttl=1.0)
    run_id = "run_20261201T000000Z_0c0c0c"
    running = RunResult(run_id=run_id, status="running", task="Wedged?", team="t")
    record = store.open(run_id, Redactor(), {"task": "Wedged?"})
    assert isinstance(record, RedisRecord)
    record.status(running)
    assert not record.cancel_requested()  # one poll, then none: the loop "hangs"
    with anyio.fail_after(WAIT):
        while store.load(run_id).status == "running":
            await anyio.sleep(0.05)
    events = store.events(run_id)
    assert events[-1]["kind"] == RUN_FINISHED
    with anyio.fail_after(WAIT):  # the loop polls again: alive, but the lease is gone
        while not record.lease_lost:
            record.cancel_requested()
            await anyio.sleep(0.05)
    record.event("answer", {"agent": "a", "label": "agent1.1"})
    record.status(running)
    record.finish(running.model_copy(update={"status": "completed"}))
    assert store.events(run_id) == events
    status = json.loads(getattr(store, "client").get(f"massgen:run:{run_id}:status"))  # noqa: B009
    assert status["status"] == store.load(run_id).status == "interrupted"


async def test_with_redis_down_tools_fail_clearly_and_the_server_stays_up(
        provider: ScriptedProvider, redis_server: RedisServer, tmp_path: Path) -> None:
    provider.script("down-a", answer_then_vote("Use SQS"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "down-a")])
    app = app_on_redis(tmp_path / ".massgen", redis_server.url, team)
    async with client_of(app) as c:
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


async def test_a_run_that_lost_its_lease_stops_and_spends_no_more_calls(
        provider: ScriptedProvider, redis_url: str, tmp_path: Path) -> None:
    """Another process takes the lease (or finalized the run) while this one waits on its
    providers: the run stops without them, and no provider call is made after the loss
    (its outcome could never be recorded)."""
    gate = threading.Event()  # set only after the run ended: the waiting calls never return
    provider.script("lost-a", gated_agent(gate, "NATS"))
    provider.script("lost-b", gated_agent(gate, "NATS too"))
    team = make_team(provider, [("a", "openai_chat", "lost-a"), ("b", "openai_chat", "lost-b")])
    store = open_store(redis_url, tmp_path, lease_ttl=1.0)
    engine = Engine(tmp_path, Environment({}), store=store)

    async def run() -> RunResult:
        return await engine.prepare(team, "Which queue?").start()

    try:
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                done: list[RunResult] = []
                tg.start_soon(lambda: collect(run, done))
                while len(provider.requests) < 4:  # both answered, both now wait to vote
                    await anyio.sleep(0.05)
                [run_id] = store.ids()
                getattr(store, "client").set(f"massgen:run:{run_id}:lease",  # noqa: B009
                                             "another-process", px=60_000)
        calls = len(provider.requests)
    finally:
        gate.set()
    [result] = done
    assert result.status == "cancelled"  # with its best answer so far, never presented
    assert "FINAL" not in (result.final_answer or "")
    assert calls == 4  # nothing asked after the loss
