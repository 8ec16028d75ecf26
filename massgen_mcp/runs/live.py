"""Runs that are live in this process: their record, listeners and status writer.

A `LiveRun` is what `get_run` and `cancel_run` see while a run is going; once it has a
result it is served from its files (`RunStore`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from massgen_mcp.coordination.stop import RunStop

if TYPE_CHECKING:
    from massgen_mcp.coordination.orchestrator import Orchestrator
    from massgen_mcp.coordination.result import RunResult
    from massgen_mcp.runs.store import RunRecordWriter

log = logging.getLogger(__name__)

Listener = Callable[[dict[str, Any]], None]
STATUS_INTERVAL = 0.25
# An answer's text in its `answer` event (the run viewer shows every version from these).
EVENT_ANSWER_CHARS = 8_000
# Events after which status.json is rewritten (the rest only go to events.jsonl).
STATUS_EVENTS = frozenset({"answer", "vote", "agent_failed", "consensus", "restart",
                           "presentation_started", "tool_server_failed"})


def notify(listeners: Iterable[Callable[..., Any]], *args: Any, what: str = "listener") -> None:
    """Call every listener; one that raises is logged and skipped: a listener (a progress
    stream, a client that went away) must never break the run it listens to."""
    for listener in list(listeners):
        try:
            listener(*args)
        except Exception:
            log.exception("%s failed", what)


@dataclass(eq=False)
class LiveRun:
    run_id: str
    record: RunRecordWriter
    listeners: list[Listener] = field(default_factory=list)
    orchestrator: Orchestrator | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    result: RunResult | None = None
    outcome: Any = None  # what the run's `after` hook returned
    outcome_error: str | None = None  # why the `after` hook failed
    #: The run's one stop state: cancel_run, a shutdown, a cancel seen in the store, a
    #: budget and the time limit all write to it (coordination/stop.py).
    stop: RunStop = field(default_factory=RunStop)
    dirty: anyio.Event = field(default_factory=anyio.Event)  # status.json is behind
    #: A run executed by a worker (runs/scale/dispatch.py): its status as the store has it.
    remote: Callable[[], RunResult] | None = None
    #: While a dispatched run waits in the queue: what to tell the client.
    waiting: str | None = None
    #: The run this one follows up (modes/consensus/follow_up.py), carried on its results.
    follow_up_of: str | None = None

    def snapshot(self) -> RunResult | None:
        """The run as it stands (redacted and safe to send), or None before it started."""
        if self.result is not None:
            return self.result
        if self.remote is not None:
            return self.remote()
        if self.orchestrator is None:
            return None
        snap = self.record.clean(self.orchestrator.result())
        snap.follow_up_of = self.follow_up_of
        return snap

    def on_event(self, kind: str, data: dict[str, Any]) -> None:
        """Record one event, mark status.json stale when it matters, tell the listeners."""
        if kind == "answer" and self.orchestrator is not None:
            data = {**data, **_answer_body(self.orchestrator, data.get("agent"))}
        line = self.record.event(kind, data)
        if kind in STATUS_EVENTS:
            self.dirty.set()
        notify(self.listeners, line, what="run listener")

    async def write_status(self) -> None:
        """Keep status.json current, at most every STATUS_INTERVAL: rewriting it on every
        event would cost more than the rest of the orchestration."""
        while True:
            await self.dirty.wait()
            self.dirty = anyio.Event()
            if self.orchestrator is not None and self.result is None:
                self.record.status(self.orchestrator.result())
            await anyio.sleep(STATUS_INTERVAL)


def _answer_body(orch: Orchestrator, agent_id: Any) -> dict[str, Any]:
    """The text (and structured data) of an agent's new answer, for its `answer` event: the
    result keeps only each agent's latest answer, the events keep every version."""
    for a in orch.agents:
        if a.spec.id == agent_id and a.answers:
            latest = a.answers[-1]
            text = latest.text
            if len(text) > EVENT_ANSWER_CHARS:  # the event log stays small
                text = text[:EVENT_ANSWER_CHARS] + f"\n… ({len(latest.text)} characters)"
            return {"text": text, **({"data": latest.data} if latest.data else {})}
    return {}
