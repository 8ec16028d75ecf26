"""Orchestrator rules that depend on the order of events, with function backends.

The provider is not under test here, so the agents are plain (async) Python functions
registered as `type: function` models and built through the real backend registry; the
engine and orchestrator are the real ones. Ordering comes from events the functions wait
on, never from sleeps; where in the run a call is comes from `call.step`, never from the
prompt's wording.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from massgen_mcp.backends.function import (
    FunctionCall,
    ModelFunction,
    register_function,
    unregister_function,
)
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.config.team import Team
from massgen_mcp.coordination.tally import pick_winner
from massgen_mcp.messages import Step, Turn
from massgen_mcp.runs.engine import Engine


@pytest.fixture
def functions() -> Iterator[dict[str, ModelFunction]]:
    """Register agent functions by agent id; they are removed after the test."""

    class Registry(dict[str, ModelFunction]):
        def __setitem__(self, agent_id: str, fn: ModelFunction) -> None:
            super().__setitem__(agent_id, fn)
            register_function(f"rules-{agent_id}", fn)

    reg = Registry()
    yield reg
    for agent_id in list(reg):
        unregister_function(f"rules-{agent_id}")


def team(*ids: str, **orchestrator: Any) -> Team:
    return team_from_data({"agents": [{"id": i, "backend": {"type": "function",
                                                            "model": f"rules-{i}"}}
                                      for i in ids], "orchestrator": orchestrator},
                          "rules.yaml", Environment({}))


async def run(tmp_path: Path, t: Team, events: list[dict[str, Any]]) -> Any:
    engine = Engine(tmp_path / ".massgen", Environment({}))
    with anyio.fail_after(30):
        return await engine.prepare(t, "task", listener=events.append).start()


async def test_a_vote_on_a_stale_view_is_ignored_and_the_agent_looks_again(
        tmp_path: Path, functions: dict[str, ModelFunction]) -> None:
    a_is_voting, b_answered = anyio.Event(), anyio.Event()
    events: list[dict[str, Any]] = []

    def listener(line: dict[str, Any]) -> None:
        events.append(line)
        if line["kind"] == "answer" and line.get("agent") == "b":
            b_answered.set()

    async def a(call: FunctionCall) -> Turn:
        if call.step.presenting:
            return call.answer("final")
        if not call.step.answered:
            return call.answer("a's answer")
        if "agent2" not in call.vote_targets():
            # Voting with only its own answer in view; this provider call cannot be
            # interrupted, so it completes after b's answer has changed the picture.
            a_is_voting.set()
            with anyio.CancelScope(shield=True):
                await b_answered.wait()
        return call.vote("agent1", "mine is fine")

    async def b(call: FunctionCall) -> Turn:
        if call.step.presenting:
            return call.answer("final")
        if not call.step.answered:
            await a_is_voting.wait()
            return call.answer("b's answer")
        return call.vote("agent1", "a's is better")

    functions["a"], functions["b"] = a, b
    engine = Engine(tmp_path / ".massgen", Environment({}))
    with anyio.fail_after(30):
        # MassGen's behaviour (no first-answer wait): a answers and votes before b's first
        # answer exists.
        result = await engine.prepare(team("a", "b", first_answer_wait_seconds=0), "task",
                                  listener=listener).start()

    ignored = [e for e in events if e["kind"] == "vote_ignored"]
    assert [e["agent"] for e in ignored] == ["a"]
    assert result.status == "completed"
    assert {v.voter for v in result.votes} == {"a", "b"}
    # a voted again after looking at b's answer too: its counted vote came later.
    a_votes = [e for e in events if e["kind"] == "vote" and e.get("agent") == "a"]
    assert a_votes and a_votes[-1]["t"] >= ignored[0]["t"]


async def test_a_new_answer_clears_the_votes_cast_before_it(
        tmp_path: Path, functions: dict[str, ModelFunction]) -> None:
    a_voted = anyio.Event()
    events: list[dict[str, Any]] = []

    def a(call: FunctionCall) -> Turn:
        if call.step.presenting:
            return call.answer("final")
        if not call.step.answered:
            return call.answer("a's answer")
        a_voted.set()
        return call.vote(call.vote_targets()[-1], "latest looks best")

    async def b(call: FunctionCall) -> Turn:
        if call.step.presenting:
            return call.answer("final")
        if not call.step.answered:
            await a_voted.wait()  # a has voted on a one-answer view
            return call.answer("b's answer")
        return call.vote("agent2", "mine")

    functions["a"], functions["b"] = a, b
    result = await run(tmp_path, team("a", "b", first_answer_wait_seconds=0), events)

    kinds = [e["kind"] for e in events]
    first_vote = kinds.index("vote")
    b_answer = next(i for i, e in enumerate(events)
                    if e["kind"] == "answer" and e.get("agent") == "b")
    assert first_vote < b_answer
    # Only votes cast after b's answer count, one per agent.
    assert sorted(v.voter for v in result.votes) == ["a", "b"]
    assert sum(result.tally.values()) == 2
    assert result.status == "completed"


async def test_a_tie_goes_to_the_earliest_agent_in_the_team_file(
        tmp_path: Path, functions: dict[str, ModelFunction]) -> None:
    both_answered = anyio.Event()
    answered: set[str] = set()
    events: list[dict[str, Any]] = []

    def voter_for_self(agent: str, label: str) -> ModelFunction:
        async def fn(call: FunctionCall) -> Turn:
            if call.step.presenting:
                return call.answer(f"final by {agent}")
            if not call.step.answered:
                return call.answer(f"{agent}'s answer")
            answered.add(agent)
            if len(answered) == 2:
                both_answered.set()
            await both_answered.wait()
            return call.vote(label, "mine")
        return fn

    # Sorted ids give the anonymous labels: "a" is agent1, "z" is agent2; the team file
    # lists z first, so z wins the 1-1 tie.
    functions["z"] = voter_for_self("z", "agent2")
    functions["a"] = voter_for_self("a", "agent1")
    result = await run(tmp_path, team("z", "a"), events)
    assert result.tally == {"z": 1, "a": 1}
    assert result.winner is not None and result.winner.agent_id == "z"
    assert result.final_answer == "final by z"


async def test_an_unregistered_function_fails_that_agent_only(
        tmp_path: Path, functions: dict[str, ModelFunction]) -> None:
    def ok(call: FunctionCall) -> Turn:
        if call.step.presenting:
            return call.answer("final")
        if not call.step.answered:
            return call.answer("the answer")
        return call.vote(call.vote_targets()[0], "fine")

    functions["a"], functions["b"] = ok, ok
    t = team_from_data({"agents": [
        {"id": "a", "backend": {"type": "function", "model": "rules-a"}},
        {"id": "b", "backend": {"type": "function", "model": "rules-b"}},
        {"id": "ghost", "backend": {"type": "function", "model": "not-registered"}}]},
        "rules.yaml", Environment({}))
    events: list[dict[str, Any]] = []
    result = await run(tmp_path, t, events)
    ghost = next(a for a in result.agents if a.agent_id == "ghost")
    assert ghost.status == "failed"
    assert "not-registered" in (ghost.error or "")
    assert result.final_answer == "final"


def test_pick_winner_most_votes_then_config_order() -> None:
    assert pick_winner({"x": "b", "y": "b", "z": "a"}, ["a", "b"])[0] == "b"
    assert pick_winner({"x": "b", "y": "a"}, ["a", "b"])[0] == "a"
    assert pick_winner({"x": "b", "y": "a"}, ["b", "a"])[0] == "b"
    assert pick_winner({}, ["c", "a"])[0] == "c"
    assert pick_winner({"x": "gone"}, [])[0] is None


async def test_a_function_is_told_the_step_of_every_call(
        tmp_path: Path, functions: dict[str, ModelFunction]) -> None:
    seen: dict[str, list[Step]] = {"a": [], "b": []}

    def agent(name: str) -> ModelFunction:
        def fn(call: FunctionCall) -> Turn:
            seen[name].append(call.step)
            if call.step.presenting:
                return call.answer("final")
            if not call.step.answered:
                return call.answer(f"{name}'s answer")
            return call.vote(call.step.vote_targets[0], "first is fine")
        return fn

    functions["a"], functions["b"] = agent("a"), agent("b")
    result = await run(tmp_path, team("a", "b"), [])
    assert result.status == "completed" and result.final_answer == "final"
    winner = result.winner.agent_id if result.winner else ""
    for name, steps in seen.items():
        first, *rest = steps
        assert first == Step("coordinate", "answer", None, first.vote_targets, True)
        label = "agent1.1" if name == "a" else "agent2.1"
        coordinating = [s for s in rest if not s.presenting]
        assert coordinating and all(s.own_label == label for s in coordinating)
        assert coordinating[-1].vote_targets == ("agent1", "agent2")
        presenting = [s for s in rest if s.presenting]
        assert presenting == ([Step("present", "answer", label, (), True)]
                              if name == winner else [])
