"""An echo is not an answer (issue 31), through the real SDKs against the scripted provider.

Measured: SmolLM2-135M answered "Your complete answer." (the tool schema's own field
description); it was accepted, voted for, and won. An answer that only repeats the protocol
(the schema, the instructions, a placeholder, the task, an agent's label, a vote's reason) is
refused the way a text reply is: the problem goes back once, then there is no answer. Each
refusal is noted on the agent as a repair. A vote's reason may say anything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agents import answer_then_vote, best_label, has_answered, presenting
from helpers import make_team, run_team
from scripted_provider import Reply, ScriptedProvider, ScriptRequest, Text, answer, vote

from massgen_mcp.coordination.echo import EchoSources, echo_problem, schema_texts
from massgen_mcp.coordination.result import RunResult

TASK = "What is the capital of France?"
REAL = "Paris is the capital of France."
ECHOES: dict[str, Reply] = {
    "schema description": answer("Your complete answer."),
    "vote schema description": answer("The agent whose answer is best, e.g. agent1."),
    "placeholder": answer("<your complete answer>"),
    "reminder example as text": Text(json.dumps(
        {"tool": "new_answer", "arguments": {"content": "<your complete answer>"}})),
    "instruction": answer("Call new_answer or vote."),
    "system prompt": answer("Judge the answers on their merits, not on who wrote them."),
    "task": answer(TASK),
    "label": answer("agent2"),
    "label with filler": answer("I vote for Agent 2, it is the most complete."),
}


def told_it_echoed(req: ScriptRequest) -> bool:
    return any("this is not an answer" in str(m.get("content") or "") for m in req.messages)


def echoer(echo: Reply, recovers: bool) -> Any:
    """Echoes instead of answering; once told, answers for real when `recovers`."""
    follow = answer_then_vote(REAL, best_label)

    def script(req: ScriptRequest) -> Reply:
        if presenting(req) or has_answered(req) or (recovers and told_it_echoed(req)):
            return follow(req)
        return echo

    return script


def notes(result: RunResult, agent_id: str) -> list[str]:
    return next(a.notes for a in result.agents if a.agent_id == agent_id)


@pytest.mark.parametrize("kind", list(ECHOES))
async def test_an_echo_is_refused_and_the_agent_told_once(
        provider: ScriptedProvider, tmp_path: Path, kind: str) -> None:
    provider.script("echo", echoer(ECHOES[kind], recovers=True))
    provider.script("b", answer_then_vote("It is Paris.", best_label))
    provider.script("c", answer_then_vote("Paris, on the Seine.", best_label))
    team = make_team(provider, [("a", "openai", "echo"), ("b", "anthropic", "b"),
                                ("c", "gemini", "c")])
    result = await run_team(team, tmp_path, task=TASK)
    assert result.status == "completed", result.error
    answers = {x.agent_id: x.text for x in result.answers}
    assert answers["a"] == REAL  # the echo never became its answer
    assert any(n.startswith("refused an echo as an answer") for n in notes(result, "a"))
    told = [r for r in provider.requests_for("echo") if told_it_echoed(r)]
    assert told and "Call new_answer with your own complete answer" in str(told[0].messages)


async def test_an_agent_that_only_echoes_gives_no_answer(provider: ScriptedProvider,
                                                         tmp_path: Path) -> None:
    provider.script("echo", echoer(ECHOES["schema description"], recovers=False))
    provider.script("b", answer_then_vote("It is Paris.", best_label))
    provider.script("c", answer_then_vote("Paris, on the Seine.", best_label))
    team = make_team(provider, [("a", "openai", "echo"), ("b", "anthropic", "b"),
                                ("c", "gemini", "c")], first_answer_wait_seconds=0)
    result = await run_team(team, tmp_path, task=TASK)
    assert result.status == "degraded"
    assert "a: echoed the protocol instead of answering" in (result.error or "")
    assert all("Your complete answer" not in x.text for x in result.answers)
    assert "Your complete answer" not in (result.final_answer or "")
    assert result.winner is not None and result.winner.agent_id in ("b", "c")


async def test_a_second_echo_from_an_agent_with_an_answer_is_no_change(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    def later_echoes(req: ScriptRequest) -> Reply:
        if presenting(req):
            return answer(REAL)
        return answer("Your complete answer.") if has_answered(req) else answer(REAL)

    provider.script("echo", later_echoes)
    provider.script("b", answer_then_vote("It is Paris.", "agent1"))
    provider.script("c", answer_then_vote("Paris, on the Seine.", "agent1"))
    team = make_team(provider, [("a", "openai", "echo"), ("b", "anthropic", "b"),
                                ("c", "gemini", "c")], early_stop=False)
    result = await run_team(team, tmp_path, task=TASK)
    assert result.status == "completed"
    assert {v.voter: v.voted_for for v in result.votes} == {"a": "a", "b": "a", "c": "a"}
    assert result.answers[0].text == REAL and result.final_answer == REAL
    assert any("echoed again" in n for n in notes(result, "a"))


async def test_a_vote_reason_may_say_anything(provider: ScriptedProvider,
                                              tmp_path: Path) -> None:
    def echoing_reason(req: ScriptRequest) -> Reply:
        if not has_answered(req):
            return answer("It is Paris.")
        return vote("agent1", "Your complete answer.")

    provider.script("a", answer_then_vote(REAL, "agent1"))
    provider.script("b", echoing_reason)
    team = make_team(provider, [("a", "openai", "a"), ("b", "anthropic", "b")])
    result = await run_team(team, tmp_path, task=TASK)
    assert result.status == "completed"
    assert {v.voter: v.reason for v in result.votes}["b"] == "Your complete answer."


# ---------------------------------------------------------------------------- the rules

def _sources() -> EchoSources:
    from massgen_mcp.coordination import prompts
    from massgen_mcp.coordination.answers import TextAnswer
    from massgen_mcp.coordination.workflow import new_answer_tool, vote_tool

    tools = [new_answer_tool(TextAnswer()), vote_tool(["agent1", "agent2"])]
    system = prompts.coordination_system(None, "answer", "lenient").content
    return EchoSources.of([*schema_texts(tools), *prompts.protocol_texts(
        system, tools, "answer", "", "agent1.1", False)], TASK,
        ["It names the right city and the river it sits on."])


@pytest.mark.parametrize("text", [
    "Your complete answer.", "your complete answer", "**Your complete answer.**",
    "Your complete answer.&amp;#34;",  # measured on SmolLM2: it won a run
    "<your answer here>", "[Answer]", "...", "Why this answer is the best.",
    "Vote for the best existing answer.", "Call new_answer or vote.",
    "Your own latest answer is agent1.1.", TASK, "agent2.1", "Agent 2 is correct.",
    "It names the right city and the river it sits on.",
    "<CURRENT ANSWERS from the agents>\n<agent1.1>\nParis\n<end of agent1.1>",
])
def test_echoes_are_recognised(text: str) -> None:
    assert echo_problem(text, _sources()), text


@pytest.mark.parametrize("text", [
    "Paris.", "Paris", "4", "Yes.", "Use Kafka: it keeps order per partition.",
    "Building on agent2's answer: Paris, which sits on the Seine.",
    "The capital of France is Paris.", "Answer: Paris",
    "A complete answer needs a source; here it is: Paris (INSEE).",
    '{"city": "Paris"}', "<br>", "[1, 2, 3]", "No.",
])
def test_real_answers_are_not_echoes(text: str) -> None:
    assert echo_problem(text, _sources()) is None, text
