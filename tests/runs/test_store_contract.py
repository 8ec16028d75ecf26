"""The run records' interface (`RunRecords`), the same tests against both stores: the files
(`RunStore`) and Redis (`RedisStore` on a real redis-server).

A second store object on the same files or the same Redis plays another process: it reads,
follows, attaches to and cancels what the first one wrote. The viewer and `export` read
through the interface, so they are tested here too.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from agents import answer_then_vote
from helpers import make_team
from scripted_provider import ScriptedProvider

from massgen_mcp.config.env import Environment
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import InputError, RunNotFoundError
from massgen_mcp.redaction import Redactor
from massgen_mcp.runs.engine import Engine
from massgen_mcp.runs.store import RUN_FINISHED, RunRecords, RunStore, new_run_id
from massgen_mcp.runs.store_export import export_run
from massgen_mcp.runs.store_open import open_store
from massgen_mcp.runs.view import report_html
from massgen_mcp.runs.view.model import load_run_view
from massgen_mcp.runs.view.web import viewer_app

WAIT = 30.0  # bound on every wait (a loaded machine); never a sleep
LEASE_TTL = 3.0  # the Redis store's leases: short, so a cancel flag is polled often


@pytest.fixture(params=["file", pytest.param("redis", marks=pytest.mark.redis)])
def url(request: pytest.FixtureRequest) -> str | None:
    """None: the file store; else a Redis URL (a real redis-server, emptied per test)."""
    return None if request.param == "file" else str(request.getfixturevalue("redis_url"))


def store_at(url: str | None, state: Path) -> RunRecords:
    return open_store(url, state, lease_ttl=LEASE_TTL)


@pytest.fixture
def records(url: str | None, tmp_path: Path) -> RunRecords:
    return store_at(url, tmp_path / "state")


@pytest.fixture
def other(url: str | None, tmp_path: Path) -> RunRecords:
    """Another process's view of the same records (same files; same Redis, its own dir)."""
    return store_at(url, tmp_path / "state" if url is None else tmp_path / "elsewhere")


def running(run_id: str) -> RunResult:
    return RunResult(run_id=run_id, status="running", task="Which queue?", team="t")


def finished(run_id: str, answer: str = "SQS") -> RunResult:
    return RunResult(run_id=run_id, status="completed", task="Which queue?", team="t",
                     final_answer=answer)


async def test_a_run_reads_back_the_same_through_another_store(
        provider: ScriptedProvider, records: RunRecords, other: RunRecords,
        tmp_path: Path) -> None:
    provider.script("contract-a", answer_then_vote("42"))
    provider.script("contract-b", answer_then_vote("42"))
    team = make_team(provider, [("a", "openai_chat", "contract-a"),
                                ("b", "openai_chat", "contract-b")])
    engine = Engine(tmp_path / "state", Environment({}), store=records)
    first = await engine.prepare(team, "What is six times seven?").start()
    second = await engine.prepare(team, "What is seven times six?").start()
    assert (first.status, second.status) == ("completed", "completed")

    assert other.ids() == [second.run_id, first.run_id]  # newest first
    assert other.ids(1) == [second.run_id]
    back = other.load(first.run_id)
    assert (back.status, back.final_answer) == ("completed", first.final_answer)
    assert other.exists(first.run_id) and not other.exists(new_run_id())
    meta = other.meta(first.run_id)
    assert meta["task"] == "What is six times seven?"
    assert [a["model"] for a in meta["agents"]] == ["contract-a", "contract-b"]
    events = other.events(first.run_id)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["kind"] == RUN_FINISHED and {"answer", "vote"} <= {e["kind"]
                                                                          for e in events}
    listed = Engine(tmp_path / "elsewhere", Environment({}), store=other).list()
    assert [r.run_id for r in listed] == [second.run_id, first.run_id]
    # The counters: each run added its calls once, readable from the other store.
    usage = other.usage()[first.agents[0].provider]
    calls = sum(a.usage.provider_calls for r in (first, second) for a in r.agents)
    assert usage["runs"] == 2 and usage["provider_calls"] == calls > 0
    assert usage["total_tokens"] == sum(r.totals.total_tokens for r in (first, second))


def test_an_unknown_run_is_not_found_in_either_store(records: RunRecords) -> None:
    run_id = new_run_id()
    for read in (records.load, records.events, records.meta):
        with pytest.raises(RunNotFoundError):
            read(run_id)
    assert not records.exists(run_id) and not records.request_cancel(run_id)
    with pytest.raises(InputError):
        records.load("../../etc/passwd")


async def test_follow_gets_every_event_then_ends_with_the_final_record(
        records: RunRecords, other: RunRecords) -> None:
    run_id = new_run_id()
    writer = records.open(run_id, Redactor(), {"task": "Which queue?"})
    writer.status(running(run_id))
    for n in range(3):
        writer.event("answer", {"agent": f"a{n}"})
    got: list[dict[str, Any]] = []
    three = anyio.Event()

    async def follow() -> None:
        async for event in other.follow(run_id):
            got.append(event)
            if len(got) == 3:
                three.set()

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            await three.wait()
            writer.event("vote", {"agent": "a0"})
            writer.event(RUN_FINISHED, {"status": "completed"})
            writer.finish(finished(run_id))
    assert [e["seq"] for e in got] == [1, 2, 3, 4, 5]
    assert got[-1]["kind"] == RUN_FINISHED
    assert other.load(run_id).status == "completed"  # the record is final once it ended
    with anyio.fail_after(WAIT):  # a finished run: the rest at once, then the end
        assert [e["seq"] async for e in other.follow(run_id, after_seq=3)] == [4, 5]


async def test_follow_of_an_unknown_run_is_not_found(records: RunRecords) -> None:
    with pytest.raises(RunNotFoundError):
        async for _ in records.follow(new_run_id()):
            pass


def test_a_writer_attached_elsewhere_continues_the_run(records: RunRecords,
                                                       other: RunRecords) -> None:
    run_id = new_run_id()
    writer = records.open(run_id, Redactor(), {"task": "Which queue?"})
    writer.status(running(run_id))
    writer.event("run_started", {})
    writer.event("answer", {"agent": "a"})
    attached = other.attach(run_id, Redactor(["sk-attached-secret-1234"]))
    assert attached.event("vote", {"reason": "sk-attached-secret-1234"})["seq"] == 3
    attached.finish(finished(run_id, "SQS, said the worker"))
    assert records.load(run_id).final_answer == "SQS, said the worker"
    events = records.events(run_id)
    assert [e["seq"] for e in events][:3] == [1, 2, 3]
    assert "sk-attached-secret-1234" not in str(events)  # the attached writer redacts
    with pytest.raises(RunNotFoundError):
        other.attach(new_run_id(), Redactor())


async def test_a_cancel_asked_through_the_store_reaches_the_writer(
        records: RunRecords, other: RunRecords) -> None:
    run_id = new_run_id()
    writer = records.open(run_id, Redactor(), {"task": "Which queue?"})
    writer.status(running(run_id))
    assert not writer.cancel_requested()
    assert other.request_cancel(run_id)
    with anyio.fail_after(WAIT):  # the executing process polls it (≤ 1 s on Redis)
        while not writer.cancel_requested():
            await anyio.sleep(0.05)
    writer.finish(finished(run_id))
    assert not other.request_cancel(run_id)  # over: nothing to cancel


def test_task_pointers_are_shared(records: RunRecords, other: RunRecords) -> None:
    digest = hashlib.sha256(b"mgt_a-task-id").hexdigest()
    assert other.task_pointer(digest) is None
    records.put_task(digest, {"run_id": "run_20261201T000000Z_abcdef", "tool": "plan"})
    assert other.task_pointer(digest) == {"run_id": "run_20261201T000000Z_abcdef",
                                          "tool": "plan"}
    with pytest.raises(InputError):
        records.put_task("../../escape", {"run_id": "x"})


async def test_export_writes_files_the_file_store_and_the_viewer_read(
        provider: ScriptedProvider, records: RunRecords, tmp_path: Path) -> None:
    provider.script("export-a", answer_then_vote("Use SQS"))
    team = make_team(provider, [("a", "openai_chat", "export-a")])
    result = await Engine(tmp_path / "state", Environment({}), store=records).prepare(
        team, "Which queue?").start()
    out = export_run(records, result.run_id, tmp_path / "exported")
    assert sorted(p.name for p in out.iterdir()) == ["events.jsonl", "meta.json",
                                                     "result.json", "status.json"]
    files = RunStore(tmp_path / "exported")
    assert files.ids() == [result.run_id]
    assert files.load(result.run_id).model_dump() == records.load(result.run_id).model_dump()
    assert files.events(result.run_id) == records.events(result.run_id)
    assert files.meta(result.run_id) == records.meta(result.run_id)
    view = load_run_view(files, result.run_id)
    assert view.final_answer == result.final_answer and not view.live
    assert "FINAL: Use SQS" in report_html(tmp_path / "exported", result.run_id)

    live = new_run_id()
    writer = records.open(live, Redactor(), {"task": "still going"})
    writer.status(running(live))
    with pytest.raises(InputError, match="still running"):
        export_run(records, live, tmp_path / "exported")
    writer.finish(finished(live))


async def test_the_viewer_serves_and_streams_a_run_from_the_store(
        provider: ScriptedProvider, records: RunRecords, other: RunRecords,
        tmp_path: Path) -> None:
    provider.script("viewer-a", answer_then_vote("Use SQS"))
    team = make_team(provider, [("a", "openai_chat", "viewer-a")])
    result = await Engine(tmp_path / "state", Environment({}), store=records).prepare(
        team, "Which queue for the viewer?").start()
    transport = httpx.ASGITransport(app=viewer_app(other))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        listing = await http.get("/runs")
        assert listing.status_code == 200 and result.run_id in listing.text
        page = await http.get(f"/runs/{result.run_id}")
        assert page.status_code == 200 and "Which queue for the viewer?" in page.text
        with anyio.fail_after(WAIT):
            stream = await http.get(f"/runs/{result.run_id}/events")
        body = stream.text
        ids = [int(line[4:]) for line in body.splitlines() if line.startswith("id: ")]
        assert ids == list(range(1, len(records.events(result.run_id)) + 1))
        assert body.rstrip().endswith("event: end\ndata: {}")
        missing = await http.get(f"/runs/{new_run_id()}/events")
        assert missing.status_code == 404
