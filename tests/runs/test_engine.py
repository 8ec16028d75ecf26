"""The engine's parts.

The backend pool: provider backends are kept across runs, the least recently used one is
evicted past the pool's size, and an evicted backend's client is closed, but never while a run
still uses it (real OpenAI-SDK backends against the loopback scripted provider). The run
records: one interface, which a store other than the files can fill."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agents import answer_then_vote
from helpers import make_team
from scripted_provider import ScriptedProvider

from massgen_mcp.backends import Backend, BackendContext
from massgen_mcp.config.env import Environment
from massgen_mcp.config.team import Team
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import RunNotFoundError
from massgen_mcp.redaction import Redactor
from massgen_mcp.runs.engine import Engine
from massgen_mcp.runs.pool import BackendPool
from massgen_mcp.runs.store import RunRecords


def _closed(backend: Backend) -> bool:
    """Whether the backend's SDK client (and so its connection pool) is closed."""
    client: Any = backend._client  # type: ignore[attr-defined]
    return bool(client.is_closed())


def _team(provider: ScriptedProvider, model: str) -> Team:
    return make_team(provider, [("a", "openai_chat", model)])


async def _acquire(pool: BackendPool, team: Team) -> dict[str, Backend]:
    return await pool.acquire(team, BackendContext(), BackendContext())


async def test_the_least_recently_used_backend_is_evicted_and_closed(
        provider: ScriptedProvider) -> None:
    pool = BackendPool(size=2)
    one, two, three = (_team(provider, f"pool-{n}") for n in ("one", "two", "three"))
    first = await _acquire(pool, one)
    await pool.release(first)
    second = await _acquire(pool, two)
    await pool.release(second)
    again = await _acquire(pool, one)  # `one` is now the most recently used
    await pool.release(again)
    assert again["a"] is first["a"]  # kept across runs
    await pool.release(await _acquire(pool, three))
    assert len(pool) == 2
    assert _closed(second["a"])  # least recently used: evicted, and its client closed
    assert not _closed(first["a"])
    await pool.aclose()
    assert _closed(first["a"])


async def test_a_backend_evicted_while_a_run_uses_it_is_closed_when_the_run_ends(
        provider: ScriptedProvider) -> None:
    pool = BackendPool(size=1)
    running = await _acquire(pool, _team(provider, "pool-busy"))
    other = await _acquire(pool, _team(provider, "pool-new"))  # evicts the busy one
    assert not _closed(running["a"])  # the first run still calls it
    await pool.release(running)
    assert _closed(running["a"])
    await pool.release(other)
    assert not _closed(other["a"])  # still kept
    await pool.aclose()


class WatchedPool(BackendPool):
    """The engine's pool, remembering the backends it handed out."""

    seen: list[Backend]

    async def acquire(self, team: Team, context: BackendContext,
                      run_context: BackendContext) -> dict[str, Backend]:
        backends = await super().acquire(team, context, run_context)
        self.seen = [*getattr(self, "seen", []), *backends.values()]
        return backends


async def test_runs_close_the_backends_they_evict(provider: ScriptedProvider,
                                                  tmp_path: Path) -> None:
    """Through the engine: two runs on different models with a pool of one."""
    for model in ("pool-run-1", "pool-run-2"):
        provider.script(model, answer_then_vote("42"))
    pool = WatchedPool(size=1)
    engine = Engine(tmp_path / ".massgen", Environment({}), pool=pool)
    first = await engine.prepare(_team(provider, "pool-run-1"), "What is six times seven?").start()
    second = await engine.prepare(_team(provider, "pool-run-2"), "What is six times seven?").start()
    assert (first.status, second.status) == ("completed", "completed")
    seen = pool.seen
    assert len(seen) == 2 and _closed(seen[0]) and not _closed(seen[1])
    await pool.aclose()


class MemoryRecord:
    """A run record kept in memory: what a second store (Redis) has to provide."""

    def __init__(self, run_dir: Path, run_id: str, redactor: Redactor) -> None:
        self.run_id, self.dir, self.redact = run_id, run_dir, redactor
        self.events: list[dict[str, Any]] = []
        self.last: RunResult | None = None
        self.final = False
        self.cancel = False

    def event(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        line = {"seq": len(self.events) + 1, "kind": kind, **self.redact.value(data)}
        self.events.append(line)
        return line

    def clean(self, result: RunResult) -> RunResult:
        return RunResult.model_validate(self.redact.value(result.model_dump(mode="json")))

    def status(self, result: RunResult) -> None:
        self.last = self.clean(result)

    def finish(self, result: RunResult) -> None:
        self.last, self.final = self.clean(result), True

    def cancel_requested(self) -> bool:
        return self.cancel


class MemoryRuns:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.records: dict[str, MemoryRecord] = {}
        self.metas: dict[str, dict[str, Any]] = {}
        self.tasks: dict[str, dict[str, Any]] = {}

    @property
    def location(self) -> str:
        return "memory"

    def open(self, run_id: str, redactor: Redactor, meta: dict[str, Any]) -> MemoryRecord:
        record = MemoryRecord(self.root / run_id, run_id, redactor)
        self.records[run_id] = record
        self.metas[run_id] = dict(meta)
        return record

    def attach(self, run_id: str, redactor: Redactor) -> MemoryRecord:
        return self.records[run_id]

    def meta(self, run_id: str) -> dict[str, Any]:
        return self.metas[run_id]

    def exists(self, run_id: str) -> bool:
        return run_id in self.records

    async def follow(self, run_id: str, after_seq: int = 0, *, idle: float | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        for event in self.records[run_id].events[after_seq:]:
            yield event

    def request_cancel(self, run_id: str) -> bool:
        record = self.records.get(run_id)
        if record is None or record.final:
            return False
        record.cancel = True
        return True

    def put_task(self, digest: str, pointer: dict[str, Any]) -> None:
        self.tasks[digest] = pointer

    def task_pointer(self, digest: str) -> dict[str, Any] | None:
        return self.tasks.get(digest)

    def usage(self) -> dict[str, dict[str, float]]:
        return {}

    def load(self, run_id: str) -> RunResult:
        record = self.records.get(run_id)
        if record is None or record.last is None:
            raise RunNotFoundError(f"no run {run_id}")
        return record.last

    def ids(self, limit: int | None = None) -> list[str]:
        return list(reversed(self.records))[:limit]

    def events(self, run_id: str) -> list[dict[str, Any]]:
        return list(self.records[run_id].events)


async def test_the_run_records_are_one_interface_another_store_can_fill(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("store-a", answer_then_vote("42"))
    runs = MemoryRuns(tmp_path / "work")
    records: RunRecords = runs
    engine = Engine(tmp_path / ".massgen", Environment({}), store=records)
    result = await engine.prepare(_team(provider, "store-a"), "What is six times seven?").start()
    assert result.status == "completed"
    [run_id] = runs.ids()
    assert runs.records[run_id].final
    assert engine.get(run_id).final_answer == result.final_answer
    assert [r.run_id for r in engine.list()] == [run_id]
    assert {"answer", "vote"} <= {e["kind"] for e in runs.events(run_id)}
    assert not (tmp_path / ".massgen" / "runs").exists()  # nothing went to the file store
