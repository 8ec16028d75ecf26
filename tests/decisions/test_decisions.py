"""The answer the team chose, and how sure it was (issue 21), through the real SDKs.

Faithful final answers, text that is never an answer, agreement and dissent, min_agreement,
stragglers cut off, early stop, the shuffled answer order and stances. Agents are scripted
on the loopback provider; the misbehaviours are the ones real models and CLIs showed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import answer_then_vote, has_answered, presenting
from helpers import kinds, make_team, run_team
from mcp.types import TextContent
from mcp_harness import EXE, memory_client, server_env, write_team
from scripted_provider import (
    Endless,
    Reply,
    ScriptedProvider,
    ScriptRequest,
    Text,
    answer,
    chatter_after_answer,
    votes_for_itself,
)

from massgen_mcp.coordination.result import RunResult

STORED = "The capital of France is Paris, and it sits on the Seine."


def agent(result: RunResult, agent_id: str) -> Any:
    return next(a for a in result.agents if a.agent_id == agent_id)


# ---------------------------------------------------------------------------- faithful


@pytest.mark.parametrize("presented,why", [
    # measured on SmolLM2: an echo of a vote reason, six times over, longer than the answer
    ("The answer to this question is the best, e.g. agent2. " * 6, "agents"),
    ("Lyon is a large city. " * 4, "repeats itself"),
    ("In summary, this is a question with a well-known response that most people know.",
     "key content"),
])
async def test_a_presentation_that_loses_the_winner_falls_back_to_it(
        provider: ScriptedProvider, tmp_path: Path, presented: str, why: str) -> None:
    provider.script("w", answer_then_vote(STORED, "agent1", final=presented))
    provider.script("v", answer_then_vote("Paris.", "agent1", final=presented))
    team = make_team(provider, [("a", "openai", "w"), ("b", "anthropic", "v")])
    result = await run_team(team, tmp_path)
    assert result.status == "completed"
    assert result.final_answer == STORED == result.winning_answer
    assert not result.presented
    assert any(why in n and "stored answer stands" in n for n in agent(result, "a").notes)


async def test_a_presentation_that_polishes_and_keeps_the_content_is_used(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    final = STORED + " It has been the capital for over a thousand years."
    provider.script("w", answer_then_vote(STORED, "agent1", final=final))
    provider.script("v", answer_then_vote("Paris.", "agent1"))
    result = await run_team(make_team(provider, [("a", "gemini", "w"), ("b", "openai", "v")]),
                            tmp_path)
    assert result.final_answer == final and result.presented
    assert result.winning_answer == STORED  # the stored answer travels with the result


async def test_a_resumed_member_ending_with_chatter_keeps_its_answer(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    # measured with Claude Code: "Submitted." became its new answer, and won
    provider.script("cli", chatter_after_answer(STORED, "Submitted."))
    provider.script("b", answer_then_vote("Paris", "agent1"))
    provider.script("c", answer_then_vote("It is Paris", "agent1"))
    team = make_team(provider, [("a", "anthropic", "cli"), ("b", "openai", "b"),
                                ("c", "gemini", "c")], early_stop=False)
    result = await run_team(team, tmp_path)
    assert result.status == "completed"
    a = agent(result, "a")
    assert a.answers == 1 and a.status == "voted"
    assert {v.voter: v.voted_for for v in result.votes}["a"] == "a"  # stands by its answer
    assert any("counted as no change" in n for n in a.notes)
    assert result.winner is not None and result.winner.agent_id == "a"
    # the presentation is chatter too: the stored answer stands
    assert result.final_answer == STORED == result.winning_answer
    assert "Submitted" not in (result.final_answer or "")
    assert any("stored answer stands" in n for n in a.notes)


async def test_chatter_is_never_a_first_answer(provider: ScriptedProvider,
                                               tmp_path: Path) -> None:
    provider.script("done", Text("Done."))
    provider.script("b", answer_then_vote("Use Kafka", "agent2"))
    provider.script("c", answer_then_vote("Use SQS", "agent2"))
    team = make_team(provider, [("a", "openai", "done"), ("b", "openai", "b"),
                                ("c", "openai", "c")], first_answer_wait_seconds=0)
    result = await run_team(team, tmp_path)
    assert result.status == "degraded"
    assert agent(result, "a").answers == 0 and agent(result, "a").status == "failed"
    assert "'Done.'" in (result.error or "")
    assert all(x.text != "Done." for x in result.answers)


# ---------------------------------------------------------------------------- agreement


async def test_a_split_is_not_a_decision(provider: ScriptedProvider, tmp_path: Path) -> None:
    # measured: 1-1-1 ended `completed`, exit 0, with a "winner"
    for name in ("x", "y", "z"):
        provider.script(name, votes_for_itself(f"answer of {name}"))
    team = make_team(provider, [("a", "openai", "x"), ("b", "anthropic", "y"),
                                ("c", "gemini", "z")])
    result = await run_team(team, tmp_path)
    assert result.status == "no_consensus"
    assert result.final_answer is None and result.winner is None and not result.best_so_far
    assert not any(presenting(r) for r in provider.requests)
    assert result.tally == {"a": 1, "b": 1, "c": 1}
    assert "needs at least 2 votes in a team of 3" in (result.error or "")
    assert result.agreement.kind == "split" and result.agreement.votes == 3
    text = result.summary_text()
    assert "No consensus" in text and all(f"answer of {n}" in text for n in "xyz")


async def test_min_agreement_can_accept_a_split(provider: ScriptedProvider,
                                                tmp_path: Path) -> None:
    for name in ("x", "y", "z"):
        provider.script(name, votes_for_itself(f"answer of {name}"))
    team = make_team(provider, [("a", "openai", "x"), ("b", "anthropic", "y"),
                                ("c", "gemini", "z")], min_agreement=0.3)
    result = await run_team(team, tmp_path)
    assert result.status == "completed"
    assert result.agreement.kind == "split"
    assert result.agreement.share == pytest.approx(1 / 3, abs=1e-3)
    assert {d.agent_id: [v.voter for v in d.voters] for d in result.dissent} == {
        "b": ["b"], "c": ["c"]}
    assert all(d.votes == 1 and d.voters[0].reason for d in result.dissent)
    assert "(split)" in result.summary_text() and "Dissent: b" in result.summary_text()


async def test_min_agreement_turns_a_split_into_no_consensus(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    for name in ("x", "y", "z"):
        provider.script(name, votes_for_itself(f"answer of {name}"))
    team = make_team(provider, [("a", "openai", "x"), ("b", "anthropic", "y"),
                                ("c", "gemini", "z")], min_agreement=0.5)
    events: list[dict[str, Any]] = []
    result = await run_team(team, tmp_path, events=events)
    assert result.status == "no_consensus"
    assert result.final_answer is None and result.winner is None and not result.best_so_far
    assert not any(presenting(r) for r in provider.requests)  # no presentation
    assert result.tally == {"a": 1, "b": 1, "c": 1}
    assert "min_agreement 0.5" in (result.error or "")
    text = result.summary_text()
    assert "No consensus" in text and all(f"answer of {n}" in text for n in "xyz")
    assert "no_consensus" in kinds(events)


async def test_unanimous_vote_has_no_dissent(provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("u1", answer_then_vote("one", "agent1"))
    provider.script("u2", answer_then_vote("two", "agent1"))
    result = await run_team(make_team(provider, [("a", "openai", "u1"),
                                                 ("b", "anthropic", "u2")],
                                      min_agreement=1.0), tmp_path)
    assert result.status == "completed"
    assert result.agreement.kind == "unanimous" and result.agreement.share == 1.0
    assert result.dissent == []


def test_cli_exit_code_5_for_no_consensus(provider: ScriptedProvider, tmp_path: Path) -> None:
    for name in ("x", "y"):
        provider.script(name, votes_for_itself(f"answer of {name}"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "x"),
                                                        ("b", "anthropic", "y")])
    done = subprocess.run([EXE, "run", "Which queue?", "--team", str(team),
                           "--min-agreement", "0.6"], cwd=tmp_path, env=server_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 5, done.stderr
    assert done.stdout == ""
    assert "No consensus" in done.stderr and "answer of x" in done.stderr
    # by default, a 1-1-1 split of three agents is no decision either
    provider.script("z", votes_for_itself("answer of z"))
    three = write_team(tmp_path / "three.yaml", provider, [
        ("a", "openai", "x"), ("b", "anthropic", "y"), ("c", "gemini", "z")])
    split = subprocess.run([EXE, "run", "Which queue?", "--team", str(three)], cwd=tmp_path,
                           env=server_env(), capture_output=True, text=True, timeout=120)
    assert split.returncode == 5, split.stderr
    assert split.stdout == "" and "needs at least 2 votes" in split.stderr
    bad = subprocess.run([EXE, "run", "Which queue?", "--team", str(team),
                          "--min-agreement", "1.5"], cwd=tmp_path, env=server_env(),
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--min-agreement" in bad.stderr


# ---------------------------------------------------------------------------- no stragglers


async def test_a_member_that_never_stops_talking_is_cut_off(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("fast1", answer_then_vote("Use Kafka", "agent1"))
    provider.script("fast2", answer_then_vote("Use SQS", "agent1"))
    provider.script("talker", Endless())
    team = make_team(provider, [("a", "openai", "fast1"), ("b", "anthropic", "fast2"),
                                ("slow", "openai", "talker")],
                     orchestrator_timeout_seconds=300, straggler_grace_seconds=0.5,
                     straggler_grace_factor=0)
    with anyio.fail_after(60):  # a hang guard: the run limit is 300 s
        result = await run_team(team, tmp_path)
    assert result.status == "degraded"
    assert "slow: cut off" in (result.error or "") and "straggler grace" in (result.error or "")
    assert agent(result, "slow").status == "failed"
    assert agent(result, "slow").usage.cancelled_calls >= 1
    assert result.winner is not None and result.winner.agent_id == "a"
    # the endless call was really abandoned, not left running
    talked = provider.requests_for("talker")
    with anyio.fail_after(10):
        while not talked[0].disconnected.is_set():
            await anyio.sleep(0.01)


async def test_a_member_stuck_on_its_vote_is_cut_off_once_the_others_voted(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    def answers_then_talks(req: ScriptRequest) -> Reply:
        return Endless() if has_answered(req) else answer("Use RabbitMQ")

    provider.script("fast1", answer_then_vote("Use Kafka", "agent1"))
    provider.script("fast2", answer_then_vote("Use SQS", "agent1"))
    provider.script("voter", answers_then_talks)
    team = make_team(provider, [("a", "gemini", "fast1"), ("b", "anthropic", "fast2"),
                                ("slow", "openai", "voter")], early_stop=False,
                     straggler_grace_seconds=0.5, straggler_grace_factor=0)
    with anyio.fail_after(60):  # a hang guard: the run limit is 1800 s
        result = await run_team(team, tmp_path)
    assert result.status == "degraded"
    assert "slow: cut off: still on its turn" in (result.error or "")
    assert agent(result, "slow").answers == 1  # its answer stays a candidate
    assert {v.voter for v in result.votes} == {"a", "b"}


async def test_every_call_has_a_deadline_and_an_output_cap(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("fast", answer_then_vote("Use Kafka", "agent1"))
    provider.script("talker", Endless())
    data = {"agents": [
        {"id": "a", "backend": provider.backend("openai", "fast", max_retries=0)},
        {"id": "capped", "backend": provider.backend("anthropic", "fast", max_retries=0,
                                                    max_tokens=77)},
        {"id": "slow", "backend": provider.backend("openai", "talker", max_retries=0)}],
        "orchestrator": {"call_timeout_seconds": 0.5, "straggler_grace_seconds": None}}
    from massgen_mcp.config.env import Environment
    from massgen_mcp.config.load import team_from_data

    result = await run_team(team_from_data(data, "t.yaml", Environment({})), tmp_path)
    assert result.status == "degraded"
    assert "deadline of one call" in (agent(result, "slow").error or "")
    assert agent(result, "slow").usage.provider_calls == 2  # the turn was retried once
    caps = {r.raw.get("max_tokens") for r in provider.requests_for("talker")}
    assert caps == {4096}  # the consensus mode's default cap
    assert {r.raw.get("max_tokens") for r in provider.requests_for("fast")
            if r.wire == "anthropic"} == {77}  # the team file's own wins


# ---------------------------------------------------------------------------- early stop


async def test_early_stop_waits_when_min_agreement_is_not_yet_sure(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    for i in range(3):
        provider.script(f"e{i}", answer_then_vote(f"answer {i}", "agent1"))
    team = make_team(provider, [(f"a{i}", "openai", f"e{i}") for i in range(3)],
                     min_agreement=0.8)
    result = await run_team(team, tmp_path)
    assert result.status == "completed" and result.totals.early_stop_cancelled_turns == 0
    assert result.totals.votes == 3 and result.agreement.kind == "unanimous"


# ---------------------------------------------------------------------------- order, stances


async def test_the_answer_order_is_seeded_and_recorded(provider: ScriptedProvider,
                                                       tmp_path: Path) -> None:
    for i in range(3):
        provider.script(f"s{i}", answer_then_vote(f"answer {i}", "agent1"))
    events: list[dict[str, Any]] = []
    team = make_team(provider, [(f"a{i}", "openai", f"s{i}") for i in range(3)],
                     shuffle_seed=11, early_stop=False)
    result = await run_team(team, tmp_path, events=events)
    assert result.shuffle_seed == 11
    assert next(e for e in events if e["kind"] == "run_started")["shuffle_seed"] == 11
    # what each agent was shown is what it was sent, in that order
    for e in events:
        if e["kind"] == "turn_started" and len(e["sees"]) == 3:
            sent = [r for r in provider.requests
                    if all(f"<{lb}>" in r.last_user_text for lb in e["sees"])]
            assert any([r.last_user_text.index(f"<{lb}>") for lb in e["sees"]]
                       == sorted(r.last_user_text.index(f"<{lb}>") for lb in e["sees"])
                       for r in sent)


def test_no_answer_is_always_shown_first() -> None:
    from massgen_mcp.backends import create_backend
    from massgen_mcp.config.env import Environment
    from massgen_mcp.config.load import team_from_data
    from massgen_mcp.coordination.agent import AgentState
    from massgen_mcp.coordination.answers import ParsedAnswer
    from massgen_mcp.coordination.turns import answer_order

    team = team_from_data({"agents": [{"id": i, "backend": {"type": "function", "model": i}}
                                      for i in "abc"]}, "t.yaml", Environment({}))
    agents = [AgentState(s, f"agent{n}", create_backend(s), answers=[ParsedAnswer(s.id)])
              for n, s in enumerate(team.agents, 1)]
    voter = agents[0]
    firsts = set()
    for turn in range(30):
        voter.turns = turn
        order = answer_order(agents, voter, seed=5)
        assert answer_order(agents, voter, seed=5) == order  # reproducible from the seed
        firsts.add(order[0].spec.id)
    assert firsts == {"a", "b", "c"}
    assert [b.spec.id for b in answer_order(agents, voter, seed=None)] == ["b", "c", "a"]


async def test_stances_reach_each_agent_and_the_result(provider: ScriptedProvider,
                                                       tmp_path: Path) -> None:
    provider.script("p", answer_then_vote("Use Kafka", "agent1"))
    provider.script("q", answer_then_vote("Use SQS", "agent1"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "p"),
                                                        ("b", "anthropic", "q")])
    async with memory_client(tmp_path, team=team) as client:
        result = await client.call_tool("run_consensus", {
            "task": "Which queue?", "stances": ["for", "b=check it for data loss"]})
        assert not result.is_error, result.content
        data = result.structured_content
        assert data is not None
        lines = {line.split(" ", 1)[0]: line for line in data["agents"]}
        assert lines["a"].endswith("; stance: for")
        assert lines["b"].endswith("; stance: check it for data loss")
        full = await client.call_tool("get_run", {"run_id": data["run_id"], "detail": "agents"})
        detail = full.structured_content
        assert detail is not None
        assert {x["agent_id"]: x["stance"] for x in detail["agent_details"]} == {
            "a": "for", "b": "check it for data loss"}
        assert data["agreement"]["kind"] == "unanimous"
        bad = await client.call_tool("run_consensus", {"task": "Which queue?",
                                                       "stances": ["for", "against", "x"]})
        text = bad.content[0]
        assert bad.is_error and isinstance(text, TextContent)
        assert "3 stances for a team of 2" in text.text
    assert all("argue FOR" in r.system for r in provider.requests_for("p") if not presenting(r))
    assert all("Your stance: check it for data loss" in r.system
               for r in provider.requests_for("q") if not presenting(r))


def test_a_single_provider_default_team_is_not_three_copies() -> None:
    from massgen_mcp.config.choose import resolve_team
    from massgen_mcp.config.env import Environment

    team = resolve_team(env=Environment({"ANTHROPIC_API_KEY": "sk-ant-secret"}))
    configs = {(a.model, a.backend.temperature, a.stance) for a in team.agents}
    assert len(team.agents) == 3 and len(configs) == 3
    notes = "\n".join(team.notes)
    assert "ANTHROPIC_API_KEY" in notes and "endpoint" in notes
    assert "sk-ant-secret" not in notes
    assert all(a.key_source == "ANTHROPIC_API_KEY" for a in team.agents)
