"""Consensus scenarios through the real SDKs against the loopback scripted provider."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agents import answer_then_vote, best_label, has_answered, presenting
from helpers import kinds, make_team, run_team
from scripted_provider import (
    Call,
    Delay,
    Error,
    Hang,
    ScriptRequest,
    Text,
    ToolCalls,
    answer,
    vote,
)

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.errors import ConfigError

WIRES = ["openai", "anthropic", "gemini"]


@pytest.mark.parametrize("wire", WIRES)
async def test_full_consensus_on_each_backend(provider, tmp_path: Path, wire: str) -> None:
    for name, text in (("m-a", "Use Kafka"), ("m-b", "Use RabbitMQ"), ("m-c", "Use SQS")):
        provider.script(name, answer_then_vote(text, "agent2", final="FINAL: RabbitMQ"))
    # every vote (early stop would end it after two: test_decisions.py)
    team = make_team(provider, [("a", wire, "m-a"), ("b", wire, "m-b"), ("c", wire, "m-c")],
                     early_stop=False)
    events: list[dict] = []
    result = await run_team(team, tmp_path, events=events)

    assert result.status == "completed"
    assert result.winner is not None and result.winner.agent_id == "b"
    assert result.final_answer == "FINAL: RabbitMQ"  # presented by the winner
    assert result.tally == {"a": 0, "b": 3, "c": 0}
    assert {v.voter for v in result.votes} == {"a", "b", "c"}
    assert all(v.voted_for == "b" and v.reason for v in result.votes)
    assert result.totals.input_tokens > 0 and result.totals.output_tokens > 0
    assert all(a.usage.provider_calls >= 2 for a in result.agents)
    assert kinds(events)[0] == "run_started" and kinds(events)[-1] == "run_finished"
    assert "presentation_started" in kinds(events)


async def test_mixed_wire_formats(provider, tmp_path: Path) -> None:
    provider.script("gpt", answer_then_vote("A from gpt", "agent3"))
    provider.script("claude", answer_then_vote("A from claude", "agent3"))
    provider.script("gemini", answer_then_vote("A from gemini", "agent3"))
    team = make_team(provider, [("openai-agent", "openai", "gpt"),
                                ("anthropic-agent", "anthropic", "claude"),
                                ("gemini-agent", "gemini", "gemini")])
    result = await run_team(team, tmp_path)
    # anonymous ids come from the sorted real ids: anthropic=agent1, gemini=agent2, openai=agent3
    assert result.winner is not None and result.winner.agent_id == "openai-agent"
    assert {a.agent_id: a.anonymous_id for a in result.agents} == {
        "openai-agent": "agent3", "anthropic-agent": "agent1", "gemini-agent": "agent2"}
    wires = {r.wire for r in provider.requests}
    assert wires == {"openai", "anthropic", "gemini"}


async def test_agents_never_see_real_ids_or_models(provider, tmp_path: Path) -> None:
    provider.script("secret-model-x", answer_then_vote("alpha answer", "agent1"))
    provider.script("secret-model-y", answer_then_vote("beta answer", "agent1"))
    # unshuffled, to see the fixed order (the shuffle: test_decisions.py)
    team = make_team(provider, [("zeta-agent", "openai", "secret-model-x"),
                                ("alpha-agent", "anthropic", "secret-model-y")],
                     shuffle_answers=False)
    await run_team(team, tmp_path)
    coordination = [r for r in provider.requests if not presenting(r)]
    assert coordination
    for req in coordination:
        assert "zeta-agent" not in req.text and "alpha-agent" not in req.text
        assert "secret-model" not in req.text
    # labels agentN.M, the agent's own answer placed last
    seen = next(r for r in provider.requests_for("secret-model-x")
            if "<agent1.1>" in r.last_user_text and "<agent2.1>" in r.last_user_text)
    text = seen.last_user_text
    # zeta sorts second (agent2); its own answer comes last even though agent1 < agent2
    assert text.index("<agent1.1>") < text.index("<agent2.1>")
    seen_y = next(r for r in provider.requests_for("secret-model-y")
              if "<agent1.1>" in r.last_user_text and "<agent2.1>" in r.last_user_text)
    assert seen_y.last_user_text.index("<agent2.1>") < seen_y.last_user_text.index("<agent1.1>")


async def test_vote_for_agent_without_answer_is_rejected_then_retried(provider, tmp_path):
    def picky(req: ScriptRequest):
        if not has_answered(req):
            return answer("answer one")
        if "<agent2.1>" not in req.last_user_text:
            # b has not answered yet (only when nothing holds a back): a plain vote, which
            # b's answer clears; the bad vote below is always made with both answers in view
            return vote("agent1", "the only answer so far")
        if not req.tool_results:
            return vote("agent7", "no such agent")
        return vote("agent1", "fixed")

    provider.script("m1", picky)
    provider.script("m2", answer_then_vote("answer two", "agent1"))
    team = make_team(provider, [("a", "openai", "m1"), ("b", "openai", "m2")])
    events: list[dict] = []
    result = await run_team(team, tmp_path, events=events)
    assert result.status == "completed"
    invalid = [e for e in events if e["kind"] == "invalid_call"]
    assert invalid and "agent7" in invalid[0]["problems"][0]
    retried = [r for r in provider.requests_for("m1") if r.tool_results]
    assert retried and retried[0].tool_results[0]["is_error"]
    assert "valid choices: agent1, agent2" in retried[0].tool_results[0]["content"]


async def test_both_tools_in_one_turn_is_an_error(provider, tmp_path: Path) -> None:
    def greedy(req: ScriptRequest):
        if not has_answered(req):
            return answer("mine")
        if not req.tool_results:
            return ToolCalls([Call("new_answer", {"content": "x"}),
                              Call("vote", {"agent_id": "agent1", "reason": "r"})])
        return vote("agent1", "ok")

    provider.script("g", greedy)
    provider.script("h", answer_then_vote("other", "agent1"))
    events: list[dict] = []
    result = await run_team(make_team(provider, [("a", "anthropic", "g"),
                                                 ("b", "anthropic", "h")]), tmp_path,
                            events=events)
    assert result.status == "completed"
    problems = [p for e in events if e["kind"] == "invalid_call" for p in e["problems"]]
    assert any("exactly one of new_answer or vote" in p for p in problems)


async def test_agent_that_only_writes_text_gets_one_reminder_then_its_text_is_its_answer(
        provider, tmp_path: Path) -> None:
    provider.script("chatty", Text("I think Kafka is nice."))
    provider.script("m2", answer_then_vote("answer two", "agent1"))  # b sorts first
    provider.script("m3", answer_then_vote("answer three", "agent1"))
    # no early stop: chatty's own vote turn is what this test looks at
    team = make_team(provider, [("chatty", "gemini", "chatty"), ("b", "gemini", "m2"),
                                ("c", "gemini", "m3")], early_stop=False)
    events: list[dict] = []
    result = await run_team(team, tmp_path, events=events)
    assert result.status == "completed"
    chatty_requests = provider.requests_for("chatty")
    assert "Call new_answer or vote" not in chatty_requests[0].text[-10:]
    assert "You did not call a tool" in chatty_requests[1].text  # one reminder per turn
    assert "You did not call a tool" not in chatty_requests[0].text
    chatty = next(a for a in result.agents if a.agent_id == "chatty")
    assert chatty.answers == 1 and chatty.status == "voted"
    assert any("took a text reply" in n for n in chatty.notes)
    assert next(a.text for a in result.answers if a.agent_id == "chatty") == (
        "I think Kafka is nice.")
    # on its vote turn, text again (even after a reminder): no change, it stands by its answer
    assert any("counted as no change, a vote for its own answer" in n for n in chatty.notes)
    assert {v.voter: v.voted_for for v in result.votes}["chatty"] == "chatty"
    assert len(chatty_requests) <= 6
    assert result.winner is not None and result.winner.agent_id == "b"


async def test_answer_limit_makes_an_agent_vote_only(provider, tmp_path: Path) -> None:
    counter = {"n": 0}

    def eager(req: ScriptRequest):
        if presenting(req):
            return answer("final")
        if "new_answer" in req.tool_names:
            counter["n"] += 1
            return answer(f"improved answer number {counter['n']} " + "word " * counter["n"])
        return vote(best_label(req), "limit reached")

    provider.script("eager", eager)
    provider.script("calm", answer_then_vote("calm answer", "agent1"))
    team = make_team(provider, [("eager", "openai", "eager"), ("calm", "openai", "calm")],
                     max_new_answers_per_agent=2)
    result = await run_team(team, tmp_path)
    assert result.status == "completed"
    eager_info = next(a for a in result.agents if a.agent_id == "eager")
    assert eager_info.answers == 2
    vote_only = [r for r in provider.requests_for("eager")
                 if "vote" in r.tool_names and "new_answer" not in r.tool_names]
    assert vote_only and "may not submit more" in vote_only[0].last_user_text


async def test_new_answer_clears_votes_and_restarts_others(provider, tmp_path: Path) -> None:
    def late_improver(req: ScriptRequest):
        if presenting(req):
            return answer("final from late")
        if not has_answered(req):
            return answer("first draft")
        if "better second draft" not in req.last_user_text:
            # wait until the other agent has voted, then improve (restarting it)
            return Delay(0.3, answer("better second draft"))
        return vote(best_label(req), "done")

    provider.script("late", late_improver)
    provider.script("quick", answer_then_vote("quick answer", "agent1"))
    team = make_team(provider, [("late", "anthropic", "late"), ("quick", "anthropic", "quick")])
    events: list[dict] = []
    result = await run_team(team, tmp_path, events=events)
    assert result.status == "completed"
    ks = kinds(events)
    second = next(i for i, e in enumerate(events)
              if e["kind"] == "answer" and e["label"] == "agent1.2")
    assert "vote" in ks[:second]  # quick had voted before the new answer...
    assert any(e["kind"] == "restart" and "quick" in e["agents"] for e in events[second:])
    quick_votes = [e for e in events[second:] if e["kind"] == "vote" and e["agent"] == "quick"]
    assert quick_votes  # ...and had to vote again after it
    assert result.winner is not None and result.winner.label == "agent1.2"


async def test_first_answer_is_never_interrupted(provider, tmp_path: Path) -> None:
    provider.script("fast", answer_then_vote("fast answer", "agent1"))
    provider.script("slow", lambda req: Delay(0.4, answer("slow answer")) if not has_answered(
        req) else vote("agent1", "fast is right"))
    team = make_team(provider, [("fast", "openai", "fast"), ("slow", "openai", "slow")])
    events: list[dict] = []
    result = await run_team(team, tmp_path, events=events)
    assert result.status == "completed"
    # the slow agent's first request was answered (not cancelled and resent)
    first_turns = [r for r in provider.requests_for("slow") if not has_answered(r)]
    assert len(first_turns) == 1
    assert any(e["kind"] == "answer" and e["agent"] == "slow" for e in events)


async def test_tie_goes_to_config_order(provider, tmp_path: Path) -> None:
    provider.script("x", answer_then_vote("answer x", "agent2"))  # zed=agent2
    provider.script("y", answer_then_vote("answer y", "agent1"))  # ann=agent1
    team = make_team(provider, [("zed", "gemini", "x"), ("ann", "gemini", "y")],
                     skip_final_presentation=True)
    result = await run_team(team, tmp_path)
    assert result.tally == {"zed": 1, "ann": 1}
    assert result.winner is not None and result.winner.agent_id == "zed"  # first in config
    assert result.final_answer == "answer x"  # skipped presentation: the stored answer


async def test_single_agent_team(provider, tmp_path: Path) -> None:
    provider.script("solo", answer_then_vote("solo answer", "agent1", final="solo final"))
    result = await run_team(make_team(provider, [("solo", "anthropic", "solo")]), tmp_path)
    assert result.status == "completed"
    assert result.final_answer == "solo final"
    assert result.tally == {"solo": 1}


async def test_429_then_success_is_retried(provider, tmp_path: Path) -> None:
    calls = {"n": 0}

    def flaky(req: ScriptRequest):
        calls["n"] += 1
        if calls["n"] == 1:
            return Error(429, "rate limited", headers={"retry-after": "0"})
        return answer_then_vote("after retry", "agent1")(req)

    provider.script("flaky", flaky)
    data = {"agents": [{"id": "f", "backend": provider.backend("openai", "flaky",
                                                               max_retries=2)}]}
    team = team_from_data(data, "t.yaml", Environment({}))
    result = await run_team(team, tmp_path)
    assert result.status == "completed"
    assert result.final_answer and "after retry" in result.final_answer
    assert calls["n"] >= 3  # the 429, the retried answer turn, the vote...


async def test_401_drops_the_agent_and_the_run_is_degraded(provider, tmp_path: Path) -> None:
    provider.script("locked", Error(401, "invalid x-api-key"))
    provider.script("ok1", answer_then_vote("ok one", "agent1"))  # b=agent1, c=agent2
    provider.script("ok2", answer_then_vote("ok two", "agent1"))
    team = make_team(provider, [("locked", "anthropic", "locked"), ("b", "openai", "ok1"),
                                ("c", "gemini", "ok2")])
    result = await run_team(team, tmp_path)
    # the live agents agreed, but the run lost an agent: it says so, and which, and why
    assert result.status == "degraded"
    assert result.error and "locked: " in result.error and "authentication failed" in result.error
    assert not result.best_so_far and result.final_answer
    locked = next(a for a in result.agents if a.agent_id == "locked")
    assert locked.status == "failed"
    # the key came from the team file, so that is what the message points at
    assert "authentication failed" in (locked.error or "")
    assert "api_key" in (locked.error or "")
    assert "test-key" not in (locked.error or "")
    assert result.winner is not None and result.winner.agent_id == "b"


async def test_every_agent_failing_gives_failed_with_each_error(provider, tmp_path: Path):
    provider.script("d1", Error(401, "bad key"))
    team = make_team(provider, [("one", "openai", "d1"), ("two", "gemini", "not-a-model")])
    result = await run_team(team, tmp_path)
    assert result.status == "failed"
    assert result.error and "one:" in result.error and "two:" in result.error
    assert "not-a-model" in result.error  # the unknown model is named


async def test_hanging_provider_times_out_with_best_answer_so_far(provider, tmp_path: Path):
    provider.script("fine", answer_then_vote("the answer so far", "agent1"))
    provider.script("stuck", Hang())
    # no first-answer wait, so "fine" votes while "stuck" hangs
    team = make_team(provider, [("fine", "openai", "fine"), ("stuck", "anthropic", "stuck")],
                     orchestrator_timeout_seconds=1.0, first_answer_wait_seconds=0,
                     call_timeout_seconds=60, straggler_grace_seconds=None)
    events: list[dict] = []
    result = await run_team(team, tmp_path, events=events)
    assert result.status == "timeout"
    assert result.final_answer == "the answer so far" and result.best_so_far
    assert result.winner is not None and result.winner.agent_id == "fine"
    assert [v.voter for v in result.votes] == ["fine"]  # the votes so far
    assert "time limit" in (result.error or "")
    assert "timeout" in kinds(events)
    # What the record says, not how fast it went: it did not stop before its limit.
    assert result.elapsed_seconds >= 1.0


async def test_novelty_requirement_rejects_a_near_copy(provider, tmp_path: Path) -> None:
    def copier(req: ScriptRequest):
        if presenting(req):
            return answer("final")
        if not has_answered(req):
            return answer("use a durable queue with retries and a dead letter queue")
        if not req.tool_results:
            return answer("use a durable queue with retries and a dead letter queue!")
        return vote("agent1", "fine")

    provider.script("copier", copier)
    provider.script("other", answer_then_vote("other answer", "agent1"))
    team = make_team(provider, [("copier", "openai", "copier"), ("other", "openai", "other")],
                     answer_novelty_requirement="strict")
    events: list[dict] = []
    result = await run_team(team, tmp_path, events=events)
    assert result.status == "completed"
    problems = [p for e in events if e["kind"] == "invalid_call" for p in e["problems"]]
    assert any("too similar" in p for p in problems)


async def test_token_budget_stops_the_run_with_best_so_far(provider, tmp_path: Path) -> None:
    provider.script("big", lambda req: answer("x" * 4000) if not has_answered(req)
                    else Delay(5, vote("agent1", "late")))
    team = make_team(provider, [("big", "openai", "big")], max_total_tokens=500)
    result = await run_team(team, tmp_path)
    assert result.status == "budget_exceeded"
    assert result.final_answer and result.final_answer.startswith("xxx")
    assert "max_total_tokens" in (result.error or "")


def test_config_with_a_typo_is_rejected_before_any_call(provider, tmp_path: Path) -> None:
    bad = tmp_path / "team.yaml"
    bad.write_text("agents:\n  - id: a\n    backend: {type: openai, model: m}\n"
                   "  - id: b\n    backend: {type: opnai, model: m}\n")
    from massgen_mcp.config.load import load_team_file

    with pytest.raises(ConfigError) as info:
        load_team_file(bad, Environment({"OPENAI_API_KEY": "k"}))
    assert str(info.value) == ("team.yaml: agents[1].backend.type: 'opnai' is not a known "
                               "backend; did you mean 'openai'?")
    assert provider.requests == []


async def test_run_records_are_written_without_keys(provider, tmp_path: Path) -> None:
    provider.script("r", answer_then_vote("recorded", "agent1"))
    data = {"agents": [{"id": "r", "backend": {**provider.backend("openai", "r"),
                                               "api_key": "supersecretvalue-1234567890"}}]}
    team = team_from_data(data, "t.yaml", Environment({}))
    result = await run_team(team, tmp_path)
    run_dir = Path(result.log_dir)
    assert {p.name for p in run_dir.iterdir()} >= {"events.jsonl", "status.json",
                                                   "result.json", "meta.json"}
    stored = json.loads((run_dir / "result.json").read_text())
    assert stored["status"] == "completed" and stored["final_answer"] == result.final_answer
    assert json.loads((run_dir / "status.json").read_text())["status"] == "completed"
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    assert [json.loads(x)["seq"] for x in lines] == list(range(1, len(lines) + 1))
    for f in run_dir.iterdir():
        assert "supersecretvalue" not in f.read_text()
