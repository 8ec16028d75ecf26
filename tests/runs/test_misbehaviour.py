"""What real models and servers do wrong, through the real SDKs against the scripted provider.

Every run stays bounded, counts every call, reports a truthful status, and reads sloppy output
the way a careful human would (noting each repair on the agent).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from agents import answer_then_vote, has_answered, presenting
from helpers import make_team, run_team
from scripted_provider import (
    TEST_KEY,
    Call,
    Error,
    Hang,
    Raw,
    ScriptRequest,
    ToolCalls,
    always_new_answer,
    answer,
    fenced,
    never_votes,
    raw_call,
    single_quoted,
    twice,
    vote,
    with_control_characters,
    written_call,
)

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.config.prices import price_for

WIRES = ["openai", "anthropic", "gemini"]
ANSWERED = re.compile(r"answered \((\d+) of (\d+) agents have answered\)")


def notes(result, agent_id: str) -> list[str]:
    return next(a.notes for a in result.agents if a.agent_id == agent_id)


# ---------------------------------------------------------------------------- bounded


async def test_a_team_that_never_votes_ends_within_its_call_cap(provider, tmp_path: Path):
    """Every model re-submits its answer and the team file sets no limits."""
    for i in range(len(WIRES)):
        provider.script(f"stubborn-{i}", never_votes(f"my answer {i}"))
    team = make_team(provider, [(f"s{i}", w, f"stubborn-{i}") for i, w in enumerate(WIRES)])
    events: list[dict] = []
    result = await run_team(team, tmp_path, events=events)
    # told once that a repeat is no new answer, then its repeat counts as its vote: each
    # for its own answer, a 1-1-1 split, which is no decision
    assert result.status == "no_consensus" and result.tally == {"s0": 1, "s1": 1, "s2": 1}
    assert all(a.answers == 1 for a in result.agents)
    assert all(any("counted as a vote for its own answer" in n for n in a.notes)
               for a in result.agents)
    assert result.totals.provider_calls == len(provider.requests)
    assert result.totals.provider_calls <= 3 * len(WIRES) + 1
    for e in events:
        if e["kind"] == "answer":
            done, live = map(int, ANSWERED.search(e["message"]).groups())  # type: ignore[union-attr]
            assert done <= live == 3


async def test_models_that_answer_anew_forever_are_bounded(provider, tmp_path: Path) -> None:
    for i in range(3):
        provider.script(f"eager-{i}", always_new_answer(f"idea {i}"))
    team = make_team(provider, [(f"e{i}", "openai", f"eager-{i}") for i in range(3)])
    events: list[dict] = []
    result = await run_team(team, tmp_path, events=events)
    cap = team.orchestrator.provider_call_cap(3)
    # a call cancelled before its request left is counted too: counting errs on the high side
    assert len(provider.requests) <= result.totals.provider_calls <= cap
    # answers stop at the default limit; agents that then never vote are dropped
    assert all(a.answers <= team.orchestrator.max_new_answers_per_agent for a in result.agents)  # type: ignore[operator]
    assert result.status == "failed"
    assert result.final_answer and result.best_so_far  # labelled: not agreed on
    assert "every agent failed" in (result.error or "")
    events_file = Path(result.log_dir) / "events.jsonl"
    assert events_file.stat().st_size < 64_000


async def test_the_provider_call_cap_stops_the_run(provider, tmp_path: Path) -> None:
    provider.script("loop", always_new_answer("draft"))
    provider.script("peer", never_votes("steady"))
    team = make_team(provider, [("a", "openai", "loop"), ("b", "openai", "peer")],
                     max_provider_calls=4, max_new_answers_per_agent=None)
    result = await run_team(team, tmp_path)
    assert result.status == "budget_exceeded"
    assert "cap of 4 provider calls" in (result.error or "")
    assert result.totals.provider_calls == len(provider.requests) <= 4
    assert result.best_so_far and result.final_answer


# ---------------------------------------------------------------------------- no wasted calls


@pytest.mark.parametrize("n", [3, 5])
async def test_jittered_answers_cost_exactly_2n_plus_1_calls(provider, tmp_path: Path, n: int):
    provider.jitter = 0.15
    for i in range(n):
        provider.script(f"j{i}", answer_then_vote(f"answer {i}", "agent1"))
    # every vote is counted here (early stop would cancel the last ones: test_decisions.py)
    team = make_team(provider, [(f"a{i}", WIRES[i % 3], f"j{i}") for i in range(n)],
                     early_stop=False)
    result = await run_team(team, tmp_path)
    assert result.status == "completed"
    assert result.totals.provider_calls == len(provider.requests) == 2 * n + 1
    assert result.totals.cancelled_calls == 0 and result.totals.restarts == 0


async def test_a_cancelled_call_is_counted_with_estimated_prompt_tokens(provider, tmp_path):
    async def late(req: ScriptRequest):
        if presenting(req):
            return answer("final")
        if not has_answered(req):
            return answer("first draft")
        if "better draft" not in req.last_user_text:
            await provider.wait_for("quick", 2)  # quick's vote call is in flight: cancel it
            return answer("better draft")
        return vote("agent1", "done")

    def quick(req: ScriptRequest):
        return Hang() if req.call_index == 1 else answer_then_vote("quick", "agent1")(req)

    provider.script("late", late)
    provider.script("quick", quick)
    team = make_team(provider, [("late", "anthropic", "late"), ("quick", "openai", "quick")])
    result = await run_team(team, tmp_path)
    assert result.status == "completed"
    q = next(a for a in result.agents if a.agent_id == "quick")
    assert q.usage.cancelled_calls == 1 and q.usage.estimated_input_tokens > 0
    assert result.totals.provider_calls == len(provider.requests)  # served = counted


# ---------------------------------------------------------------------------- sloppy output


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("style,note", [
    (lambda a: fenced(a), "removed a code fence"),
    (lambda a: with_control_characters(a), "control characters"),
    (lambda a: single_quoted(a), "single-quoted"),
])
async def test_sloppy_json_arguments_are_repaired(provider, tmp_path: Path, wire, style, note):
    text = "line one\nline\ttwo"

    def sloppy(req: ScriptRequest):
        if presenting(req) or has_answered(req):
            return answer_then_vote(text, "agent1")(req)
        return raw_call("new_answer", style({"content": text}))

    provider.script("sloppy", sloppy)
    result = await run_team(make_team(provider, [("s", wire, "sloppy")]), tmp_path)
    assert result.status == "completed"
    assert result.answers[0].text == text.strip()
    assert any(note in n for n in notes(result, "s"))


async def test_extra_fields_are_dropped_not_fatal(provider, tmp_path: Path) -> None:
    def chatty(req: ScriptRequest):
        if presenting(req):
            return ToolCalls([Call("new_answer", {"content": "final", "confidence": 0.9})])
        if not has_answered(req):
            return ToolCalls([Call("new_answer", {"content": "mine", "summary": "short"})])
        return ToolCalls([Call("vote", {"agent_id": "agent1", "reason": "r", "score": 10})])

    provider.script("chatty", chatty)
    result = await run_team(make_team(provider, [("c", "gemini", "chatty")]), tmp_path)
    assert result.status == "completed" and result.final_answer == "final"


@pytest.mark.parametrize("label", ["Agent 1", "agent1.2", "1", 1, "agent_1"])
async def test_vote_label_variants_mean_agent1(provider, tmp_path: Path, label) -> None:
    def voter(req: ScriptRequest):
        if presenting(req) or not has_answered(req):
            return answer("the answer")
        return ToolCalls([Call("vote", {"agent_id": label, "reason": "best"})])

    provider.script("v", voter)
    provider.script("w", answer_then_vote("other", "agent1"))
    team = make_team(provider, [("a", "openai", "v"), ("b", "anthropic", "w")])
    result = await run_team(team, tmp_path)
    assert result.status == "completed"
    assert {v.voter: v.voted_for for v in result.votes} == {"a": "a", "b": "a"}
    if label != "agent1":
        assert any("read vote target" in n for n in notes(result, "a"))


@pytest.mark.parametrize("wire", WIRES)
async def test_a_call_written_as_text_is_the_call(provider, tmp_path: Path, wire) -> None:
    def textual(req: ScriptRequest):
        if presenting(req):
            return written_call("new_answer", {"content": "final in text"})
        if not has_answered(req):
            return written_call("new_answer", {"content": "answer in text"})
        return written_call("vote", {"agent_id": "agent1", "reason": "mine"}, prose="I vote:")

    provider.script("t", textual)
    result = await run_team(make_team(provider, [("t", wire, "t")]), tmp_path)
    assert result.status == "completed" and result.final_answer == "final in text"
    assert len(provider.requests) == 3  # no reminder needed
    assert any("written as text" in n for n in notes(result, "t"))


async def test_the_same_call_twice_in_one_reply_is_read_once(provider, tmp_path: Path) -> None:
    def doubled(req: ScriptRequest):
        return twice(answer_then_vote("twice", "agent1")(req))  # type: ignore[arg-type]

    provider.script("d", doubled)
    result = await run_team(make_team(provider, [("d", "openai", "d")]), tmp_path)
    assert result.status == "completed" and len(provider.requests) == 3
    assert any("sent 2 times" in n for n in notes(result, "d"))


async def test_replayed_assistant_messages_suit_a_null_intolerant_server(provider, tmp_path):
    provider.strict_content = True  # like llama.cpp's server: content null is a 500

    def retrier(req: ScriptRequest):
        if presenting(req) or not has_answered(req):
            return answer("the answer")
        if not req.tool_results:
            return vote("agent9", "wrong id")  # forces a replay of this tool-call message
        return vote("agent1", "fixed")

    provider.script("r", retrier)
    result = await run_team(make_team(provider, [("r", "openai", "r")]), tmp_path)
    assert result.status == "completed"
    replayed = [m for r in provider.requests for m in r.raw["messages"]
                if m["role"] == "assistant"]
    assert replayed and all(m["content"] == "" for m in replayed)


async def test_a_one_megabyte_answer_keeps_the_record_small(provider, tmp_path: Path) -> None:
    huge = "word " * 200_000
    provider.script("big", answer_then_vote(huge, "agent1", final=huge))
    provider.script("small", answer_then_vote("small answer", "agent1"))
    team = make_team(provider, [("big", "openai", "big"), ("small", "anthropic", "small")])
    result = await run_team(team, tmp_path)
    assert result.status == "completed" and result.final_answer == huge.strip()
    assert (Path(result.log_dir) / "events.jsonl").stat().st_size < 20_000
    assert result.totals.provider_calls == 5


# ---------------------------------------------------------------------------- presentation


@pytest.mark.parametrize("presented,why", [
    ("Your complete answer.", "description text"),
    ('{"agent_id": "agent1", "reason": "best"}', "protocol text"),
    ("Paris.", "fragment"),
])
async def test_a_bad_presentation_falls_back_to_the_stored_answer(provider, tmp_path, presented,
                                                                  why) -> None:
    stored = "Paris is the capital of France. " * 5
    provider.script("p", answer_then_vote(stored, "agent1", final=presented))
    result = await run_team(make_team(provider, [("p", "anthropic", "p")]), tmp_path)
    assert result.status == "completed"
    assert result.final_answer == stored.strip()
    assert any(why in n and "stored answer stands" in n for n in notes(result, "p"))


# ---------------------------------------------------------------------------- provider errors


async def test_a_transient_error_costs_a_turn_not_the_agent(provider, tmp_path: Path) -> None:
    def flaky(req: ScriptRequest):
        return Error(500, "boom") if req.call_index == 0 else answer_then_vote("ok")(req)

    provider.script("f", flaky)
    result = await run_team(make_team(provider, [("f", "gemini", "f")]), tmp_path)
    assert result.status == "completed"
    assert any("turn failed and was retried" in n for n in notes(result, "f"))
    assert result.totals.provider_calls == len(provider.requests) == 4


def _body(wire: str, kind: str) -> Raw:
    if kind == "html":
        return Raw("<html><body><h1>502 Bad Gateway</h1></body></html>",
                   content_type="text/html")
    if kind == "list":
        return Raw("[]")
    usage = {"openai": {"prompt_tokens": "12", "completion_tokens": "3", "total_tokens": "15"},
             "anthropic": {"input_tokens": "12", "output_tokens": "3"},
             "gemini": {"promptTokenCount": "12", "candidatesTokenCount": "3"}}[wire]
    call = {"content": "from a strange server"}
    null = kind == "null_message"
    if wire == "openai":
        message = None if null else {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "new_answer", "arguments": json.dumps(call)}}]}
        body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                "usage": usage}
    elif wire == "anthropic":
        body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                "content": None if null else [
                    {"type": "tool_use", "id": "toolu_1", "name": "new_answer", "input": call}],
                "stop_reason": "tool_use", "stop_sequence": None, "usage": usage}
    else:
        body = {"candidates": [{"content": None if null else {"role": "model", "parts": [
            {"functionCall": {"name": "new_answer", "args": call}}]}, "finishReason": "STOP"}],
                "usageMetadata": usage}
    return Raw(json.dumps(body))


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("kind", ["html", "list", "null_message"])
async def test_a_malformed_200_is_that_agents_failed_turn(provider, tmp_path, wire, kind):
    def odd(req: ScriptRequest):
        if req.call_index == 0:
            return _body(wire, kind)
        return answer_then_vote("after the odd reply")(req)

    provider.script("odd", odd)
    provider.script("always-odd", _body(wire, kind))
    # both live agents back one answer (a 1-1 split would be no decision)
    provider.script("fine", answer_then_vote("fine answer", "agent1"))
    team = make_team(provider, [("odd", wire, "odd"), ("zz", wire, "always-odd"),
                                ("fine", "openai", "fine")])
    result = await run_team(team, tmp_path)
    by_id = {a.agent_id: a for a in result.agents}
    # once: a failed turn, retried; every time: that agent is dropped, the run goes on
    # (google-genai reads a list or a null content as an empty reply: a reminder, not an error)
    assert by_id["odd"].status == "voted" and by_id["odd"].answers == 1
    assert by_id["zz"].status == "failed"
    assert "unexpected reply" in (by_id["zz"].error or "") or "did not call" in (
        by_id["zz"].error or "")
    assert result.status == "degraded" and "zz: " in (result.error or "")


@pytest.mark.parametrize("wire", WIRES)
async def test_string_token_counts_are_read(provider, tmp_path: Path, wire: str) -> None:
    def strings(req: ScriptRequest):
        if req.call_index == 0:
            return _body(wire, "strings")
        return answer_then_vote("from a strange server")(req)

    provider.script("s", strings)
    result = await run_team(make_team(provider, [("s", wire, "s")]), tmp_path)
    assert result.status == "completed"
    assert result.agents[0].usage.input_tokens >= 12


# ---------------------------------------------------------------------------- cost


def _priced_team(provider, model: str, **orchestrator) -> object:
    data = {"agents": [{"id": "p", "backend": {
        "type": "openai", "model": model, "base_url": provider.openai_base_url,
        "api_key": TEST_KEY, "max_retries": 0}}], "orchestrator": orchestrator}
    return team_from_data(data, "t.yaml", Environment({}))


async def test_cost_is_estimated_from_the_price_table(provider, tmp_path: Path) -> None:
    provider.script("gpt-5-mini", answer_then_vote("priced"))
    result = await run_team(_priced_team(provider, "gpt-5-mini"), tmp_path)  # type: ignore[arg-type]
    price = price_for("openai", "gpt-5-mini")
    assert price is not None
    u = result.agents[0].usage
    assert u.cost_usd == pytest.approx(price.cost(u.input_tokens, u.output_tokens), abs=1e-6)
    assert result.totals.cost_usd == u.cost_usd and u.cost_usd > 0  # type: ignore[operator]


async def test_unknown_model_cost_is_unknown_not_guessed(provider, tmp_path: Path) -> None:
    provider.script("gpt-unheard-of", answer_then_vote("priced"))
    result = await run_team(_priced_team(provider, "gpt-unheard-of"), tmp_path)  # type: ignore[arg-type]
    assert result.status == "completed"
    assert result.agents[0].usage.cost_usd is None and result.totals.cost_usd is None


async def test_max_cost_usd_stops_the_run(provider, tmp_path: Path) -> None:
    provider.script("gpt-5", lambda req: answer("x" * 40_000) if not has_answered(req)
                    else Hang())
    result = await run_team(_priced_team(provider, "gpt-5", max_cost_usd=0.001), tmp_path)  # type: ignore[arg-type]
    assert result.status == "budget_exceeded" and result.best_so_far
    assert "max_cost_usd" in (result.error or "")
    assert result.final_answer and result.final_answer.startswith("xxx")

