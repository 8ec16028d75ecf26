"""Every provider exchange of an eval, live, recorded or replayed.

Each team member is put behind a `function` backend (backends/function.py) whose function is
a `Member`: live, it passes the conversation to the member's real backend; with a cassette
being recorded, it also stores the request's fingerprint and the reply; replaying, it answers
from the cassette and never builds a real backend, so a replay needs no key and no network.
A request the cassette does not hold is an error naming the member and the item, never a
call out. The same fingerprint asked twice (self-consistency samples, a retried turn) is
answered in the order it was recorded.

The cassette is one JSON-lines file per member (`<agent_id>.jsonl`) plus `team.json`.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from massgen_mcp.errors import (
    BackendError,
    InputError,
    PermanentBackendError,
    TransientBackendError,
)
from massgen_mcp.messages import Message, ToolCall, ToolSpec, Turn, Usage
from massgen_mcp.paths import open_private

if TYPE_CHECKING:
    from massgen_mcp.backends import Backend
    from massgen_mcp.backends.function import FunctionCall
    from massgen_mcp.config.team import AgentSpec, Team


class ReplayMiss(PermanentBackendError):
    """A replayed eval asked something the cassette does not hold."""


def fingerprint(item_id: str, messages: list[Message], tools: list[ToolSpec]) -> str:
    body = {
        "item": item_id,
        "messages": [[m.role, m.content, [[c.name, c.arguments] for c in m.tool_calls],
                      m.name, m.is_error] for m in messages],
        "tools": [[t.name, t.parameters] for t in tools],
    }
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def turn_to_json(turn: Turn) -> dict[str, Any]:
    return {"text": turn.text, "stop_reason": turn.stop_reason,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments,
                            "arguments_error": c.arguments_error, "repaired": c.repaired}
                           for c in turn.tool_calls],
            "usage": {"input_tokens": turn.usage.input_tokens,
                      "output_tokens": turn.usage.output_tokens,
                      "estimated_input_tokens": turn.usage.estimated_input_tokens}}


def turn_from_json(data: dict[str, Any]) -> Turn:
    u = data.get("usage", {})
    return Turn(text=data.get("text", ""), stop_reason=data.get("stop_reason"),
                tool_calls=tuple(ToolCall(c["id"], c["name"], c.get("arguments") or {},
                                          c.get("arguments_error"), c.get("repaired"))
                                 for c in data.get("tool_calls", [])),
                usage=Usage(u.get("input_tokens", 0), u.get("output_tokens", 0), 1, 0,
                            u.get("estimated_input_tokens", 0)))


@dataclass
class Spend:
    """What one member spent on one item (cancelled calls included)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0


REPLAY_STALL_S = 30.0


class _Clock:
    """How one item's exchanges interleaved: how many requests had been sent when each reply
    came, and the order replies came in. A replay serves each reply only once the same
    requests have been sent and the replies before it served, so the orchestrator sees the
    run unfold as it did when it was recorded (who was already working when an answer came
    decides who is restarted)."""

    def __init__(self) -> None:
        self.issued = 0
        self.done = 0  # replies served in order: seq 1..done
        #: Replaying: how long the recorded run waited on calls it then cancelled (a time
        #: limit, a straggler cut off); the replay waits as long before it calls it diverged.
        self.slack = 0.0
        self._finished: set[int] = set()
        self._changed = anyio.Event()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def sent(self) -> None:
        self.issued += 1
        self._notify()

    def next_seq(self) -> int:
        """Recording: the next reply's place."""
        self.done += 1
        self._notify()
        return self.done

    def finish(self, seq: int) -> None:
        """Replaying: the reply at `seq` was served (or its request cancelled)."""
        self._finished.add(seq)
        while self.done + 1 in self._finished:
            self.done += 1
        self._notify()

    async def wait_for(self, seq: int, issued: int) -> None:
        while self.done < seq - 1 or self.issued < issued:
            await self._changed.wait()


@dataclass
class Member:
    """One team member's door to its model for the whole eval."""

    spec: AgentSpec
    cassette: Path | None
    replay: bool
    clocks: dict[str, _Clock]
    #: (item, arm) -> what this member spent there
    spend: dict[tuple[str, str], Spend] = field(default_factory=lambda: defaultdict(Spend))
    _backend: Backend | None = None
    _recorded: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: defaultdict(list))
    _served: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    #: Calls that failed (the arm counts them wrong), and replay misses (the eval stops).
    errors: list[str] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    #: Applied to every recorded row (a model's reply can repeat a key it was shown).
    redact: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        if self.replay and self.cassette is not None and self._file().exists():
            for line in self._file().read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                self._recorded[row["key"]].append(row)
                if row.get("cancelled"):
                    clock = self.clocks.setdefault(row["item"], _Clock())
                    clock.slack += float(row.get("seconds", 0.0))

    def _file(self) -> Path:
        assert self.cassette is not None
        return self.cassette / f"{self.spec.id}.jsonl"

    async def ask(self, item_id: str, arm: str, messages: list[Message],
                  tools: list[ToolSpec]) -> Turn:
        key = fingerprint(item_id, messages, tools)
        spent = self.spend[(item_id, arm)]
        clock = self.clocks.setdefault(item_id, _Clock())
        spent.calls += 1
        if self.replay:
            turn, seconds = await self._replayed(key, item_id, arm, clock)
        else:
            turn, seconds = await self._live(key, item_id, arm, clock, messages, tools)
        spent.input_tokens += turn.usage.input_tokens
        spent.output_tokens += turn.usage.output_tokens
        spent.seconds += seconds
        return turn

    async def _replayed(self, key: str, item_id: str, arm: str, clock: _Clock
                        ) -> tuple[Turn, float]:
        rows = self._recorded.get(key, [])
        n = self._served[key]
        where = f"{self.spec.id} on item {item_id} ({arm}, request {key[:12]}, occurrence {n + 1})"
        clock.sent()
        if n >= len(rows):
            self.misses.append(f"replay: the cassette has no reply for {where}; record the "
                               "eval again with --record")
            raise ReplayMiss(self.misses[-1], provider=self.spec.provider.name,
                             model=self.spec.model)
        self._served[key] = n + 1
        row = rows[n]
        seq = int(row["seq"])
        try:
            with anyio.move_on_after(REPLAY_STALL_S + clock.slack) as stalled:
                await clock.wait_for(seq, int(row.get("issued", 0)))
                if row.get("cancelled"):  # it was cancelled while recording: wait to be
                    await anyio.sleep_forever()
        finally:
            clock.finish(seq)
        if "error" in row and not stalled.cancelled_caught:
            error = TransientBackendError if row.get("transient") else PermanentBackendError
            raise error(row["error"], provider=self.spec.provider.name, model=self.spec.model)
        if stalled.cancelled_caught:
            self.misses.append(f"replay diverged from the recording at {where}: the "
                               "exchanges recorded before it never came")
            raise ReplayMiss(self.misses[-1], provider=self.spec.provider.name,
                             model=self.spec.model)
        return turn_from_json(row["turn"]), float(row.get("seconds", 0.0))

    async def _live(self, key: str, item_id: str, arm: str, clock: _Clock,
                    messages: list[Message], tools: list[ToolSpec]) -> tuple[Turn, float]:
        if self._backend is None:
            from massgen_mcp.backends import create_backend

            self._backend = create_backend(self.spec)
        t0 = time.monotonic()
        clock.sent()
        try:
            turn = await self._backend.turn(messages, tools)
        except anyio.get_cancelled_exc_class():
            self._write({"key": key, "item": item_id, "arm": arm, "cancelled": True,
                         "issued": clock.issued, "seq": clock.next_seq(),
                         "seconds": round(time.monotonic() - t0, 3)})
            raise
        except BackendError as e:  # replayed as the same failure
            self._write({"key": key, "item": item_id, "arm": arm, "issued": clock.issued,
                         "seq": clock.next_seq(), "seconds": round(time.monotonic() - t0, 3),
                         "error": str(e), "transient": isinstance(e, TransientBackendError)})
            raise
        seconds = time.monotonic() - t0
        self._write({"key": key, "item": item_id, "arm": arm, "issued": clock.issued,
                     "seq": clock.next_seq(), "seconds": round(seconds, 3),
                     "turn": turn_to_json(turn)})
        return turn, seconds

    def _write(self, row: dict[str, Any]) -> None:
        if self.cassette is not None:
            if self.redact is not None:
                row = self.redact(row)
            with open_private(self._file()) as f:
                f.write(json.dumps(row, sort_keys=True) + "\n")

    async def aclose(self) -> None:
        if self._backend is not None:
            await self._backend.aclose()
            self._backend = None


class Members:
    """The team's members, and the function-backed team that routes a consensus through
    them for one item."""

    def __init__(self, team: Team, cassette: Path | None, replay: bool,
                 redact: Callable[[Any], Any] | None = None) -> None:
        self.team = team
        self.clocks: dict[str, _Clock] = {}
        self.members = {a.id: Member(a, cassette, replay, self.clocks, redact=redact)
                        for a in team.agents}
        self._names: list[str] = []

    def team_for_item(self, item_id: str, arm: str = "team") -> Team:
        from massgen_mcp.backends.function import register_function
        from massgen_mcp.config.providers import PROVIDERS
        from massgen_mcp.config.team import Team as TeamType

        agents = []
        for spec in self.team.agents:
            name = f"eval-{uuid.uuid4().hex[:12]}-{spec.id}"
            member = self.members[spec.id]

            async def fn(call: FunctionCall, m: Member = member) -> Turn:
                return await m.ask(item_id, arm, call.messages, call.tools)

            register_function(name, fn)
            self._names.append(name)
            agents.append(replace(spec, provider=PROVIDERS["function"], model=name,
                                  api_key=None, base_url=None))
        return TeamType(self.team.name, tuple(agents), self.team.orchestrator,
                        self.team.source)

    async def aclose(self) -> None:
        from massgen_mcp.backends.function import unregister_function

        for name in self._names:
            unregister_function(name)
        for m in self.members.values():
            await m.aclose()


def check_cassette(path: Path, *, replay: bool, resuming: bool = False) -> Path:
    if replay:
        if not (path / "team.json").is_file():
            raise InputError(f"--replay {path}: not a recorded eval (no team.json); make one "
                             "with --record")
    else:
        path.mkdir(parents=True, exist_ok=True)
        if not resuming and any(path.glob("*.jsonl")):
            raise InputError(f"--record {path}: the directory already holds a recording; "
                             "use a new directory")
    return path
