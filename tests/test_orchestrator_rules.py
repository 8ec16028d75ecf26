"""Orchestrator rules that need precise timing, with in-process function backends.

The provider is not under test here, so these agents are plain functions of the messages
(like pydantic-ai's FunctionModel); everything else is the real orchestrator.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.coordination.orchestrator import Orchestrator
from massgen_mcp.coordination.result import pick_winner
from massgen_mcp.messages import Message, ToolCall, ToolSpec, Turn, Usage


class FunctionBackend:
    provider = "function"

    def __init__(self, fn: Callable[[list[Message], list[ToolSpec]], Turn],
                 shielded_delay: float = 0.0) -> None:
        self.fn, self.model, self.delay = fn, "fn", shielded_delay

    async def turn(self, messages, tools, *, require_tool=False) -> Turn:
        # A provider call that completes even though the agent was restarted meanwhile.
        with anyio.CancelScope(shield=True):
            await anyio.sleep(self.delay)
        return self.fn(messages, tools)

    async def aclose(self) -> None:
        return None


def call(name: str, **args) -> Turn:
    return Turn(tool_calls=(ToolCall(f"id-{name}", name, args),), usage=Usage(1, 1))


def team(*ids: str):
    return team_from_data({"agents": [{"id": i, "backend": {
        "type": "chatcompletion", "base_url": "http://127.0.0.1:9/v1", "model": "m"}}
        for i in ids]}, "t", Environment({}))


async def test_a_vote_on_a_stale_view_is_ignored_and_the_agent_looks_again() -> None:
    seen: list[list[str]] = []

    def slow(messages, tools):
        names = [t.name for t in tools]
        text = messages[-1].content
        if "Present" in text:
            return call("new_answer", content="final")
        if "new_answer" in names and "Your own latest" not in text:
            return call("new_answer", content="slow answer")
        seen.append(next(t.parameters["properties"]["agent_id"]["enum"] for t in tools
                     if t.name == "vote"))
        return call("vote", agent_id="agent1", reason="r")

    def fast(messages, tools):
        text = messages[-1].content
        if "Your own latest" not in text or "Present" in text:
            return call("new_answer", content="fast answer")
        return call("vote", agent_id="agent1", reason="r")

    events: list[tuple[str, dict]] = []
    # "a" answers at once and starts voting with only its own answer in view (0.3 s, not
    # interruptible); "b" answers at 0.1 s, so a's vote arrives on a stale view.
    backends = {"a": FunctionBackend(fast, 0.0), "b": FunctionBackend(slow, 0.1)}
    backends["a"].delay = 0.0

    def fast_then_slow_vote(messages, tools):
        return fast(messages, tools)

    class Staged(FunctionBackend):
        async def turn(self, messages, tools, *, require_tool=False):
            voting = "Your own latest" in messages[-1].content
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.3 if voting else 0.0)
            return fast(messages, tools)

    backends["a"] = Staged(fast_then_slow_vote)
    orch = Orchestrator(team("a", "b"), backends, "task", emit=lambda k, d: events.append((k, d)))
    result = await orch.run()
    kinds = [k for k, _ in events]
    assert "vote_ignored" in kinds
    ignored = next(d for k, d in events if k == "vote_ignored")
    assert ignored["agent"] == "a"
    assert result.status == "completed"
    assert {v.voter for v in result.votes} == {"a", "b"}


def test_pick_winner_most_votes_then_config_order() -> None:
    assert pick_winner({"x": "b", "y": "b", "z": "a"}, ["a", "b"])[0] == "b"
    assert pick_winner({"x": "b", "y": "a"}, ["a", "b"])[0] == "a"
    assert pick_winner({"x": "b", "y": "a"}, ["b", "a"])[0] == "b"
    assert pick_winner({}, ["c", "a"])[0] == "c"
    assert pick_winner({"x": "gone"}, [])[0] is None
