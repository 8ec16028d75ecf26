"""Every vote that arrives counts (issue 31), through a real MCP client and the real SDKs.

Early stop used to cancel the votes still on their way once the outcome was settled, so a
unanimous team of three was reported "majority, 2 votes". Now the winner presents at once,
the outstanding votes run beside the presentation and count if they arrive before the final
answer is out; only the turns still running then are cancelled, and the result says who did
not vote and why.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import anyio
from agents import answer_then_vote, has_answered, presenting
from helpers import text_of
from mcp_harness import memory_client, write_team
from scripted_provider import Hang, Reply, ScriptedProvider, ScriptRequest, answer, vote

from massgen_mcp.coordination.early_stop import CUT_AT_FINAL


def three_voters(provider: ScriptedProvider, tmp_path: Path, third: Any) -> Path:
    """a, b and c answer, then vote for agent1 (a); c's vote turn is `third`."""
    provider.script("e0", answer_then_vote("Use Kafka", "agent1", final="FINAL: Use Kafka"))
    provider.script("e1", answer_then_vote("Use SQS", "agent1"))
    provider.script("e2", third)
    return write_team(tmp_path / "team.yaml", provider, [
        ("a", "openai", "e0"), ("b", "anthropic", "e1"), ("c", "gemini", "e2")])


async def test_every_vote_that_arrives_before_the_final_answer_counts(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    # measured: early stop discarded the third vote of a unanimous team ("majority, 2 votes")
    counted = threading.Event()  # set once the server reports c's vote

    async def third(req: ScriptRequest) -> Reply:
        if not has_answered(req):
            return answer("Use RabbitMQ")
        await provider.wait_for("e0", 3, timeout=60)  # a is presenting: the vote is decided
        return vote("agent1", "agent1 is the most complete")

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        if (message or "").startswith("c voted for a"):
            counted.set()

    async def presenter(req: ScriptRequest) -> Reply:
        if presenting(req):  # the final answer waits for c's vote, which runs beside it
            await asyncio.get_running_loop().run_in_executor(None, counted.wait, 60)
        return script(req)

    team = three_voters(provider, tmp_path, third)
    script = answer_then_vote("Use Kafka", "agent1", final="FINAL: Use Kafka")
    provider.script("e0", presenter)
    async with memory_client(tmp_path, team=team) as client:
        r = await client.call_tool("run_consensus", {"task": "Which queue?"},
                                   progress_callback=on_progress)  # type: ignore[arg-type]
    data = r.structured_content
    assert not r.is_error and data is not None, r.content
    assert data["status"] == "completed" and data["final_answer"] == "FINAL: Use Kafka"
    assert presenting(provider.requests_for("e0")[2])
    assert data["agreement"]["kind"] == "unanimous" and data["agreement"]["votes"] == 3
    assert data["agreement"]["share"] == 1.0 and data["agreement"]["not_voted"] == 0
    assert data["tally"] == {"a": 3, "b": 0, "c": 0} and data["dissent"] == []
    assert data["totals"]["early_stop_cancelled_turns"] == 0
    assert "3 of 3 votes cast (unanimous)" in text_of(r)


async def test_a_vote_still_running_when_the_final_answer_is_out_is_cancelled(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    def third(req: ScriptRequest) -> Reply:
        return Hang() if has_answered(req) else answer("Use RabbitMQ")

    team = three_voters(provider, tmp_path, third)
    async with memory_client(tmp_path, team=team) as client:
        r = await client.call_tool("run_consensus", {"task": "Which queue?"})
        data = r.structured_content
        assert not r.is_error and data is not None, r.content
        full = await client.call_tool("get_run", {"run_id": data["run_id"], "detail": "all"})
    detail = full.structured_content
    assert detail is not None
    assert data["status"] == "completed" and data["final_answer"] == "FINAL: Use Kafka"
    agreement = data["agreement"]
    assert agreement["kind"] == "unanimous" and agreement["votes"] == 2  # over votes cast
    assert agreement["not_voted"] == 1
    assert agreement["missing_votes"] == [{"agent_id": "c", "reason": CUT_AT_FINAL}]
    assert data["totals"]["early_stop_cancelled_turns"] == 1
    c = next(a for a in detail["agent_details"] if a["agent_id"] == "c")
    assert c["usage"]["cancelled_calls"] == 1 and c["status"] == "answered"
    assert any(CUT_AT_FINAL in n for n in c["notes"])
    assert f"No vote from c: {CUT_AT_FINAL}" in text_of(r) or "1 did not vote" in text_of(r)
    stop = next(e for e in detail["events"] if e["kind"] == "early_stop")
    assert stop["agents"] == ["c"] and stop["winner"] == "a"
    cut = next(e for e in detail["events"] if e["kind"] == "votes_cancelled")
    assert cut["agents"] == ["c"]
    # the hanging call was really abandoned
    hung = provider.requests_for("e2")[-1]
    with anyio.fail_after(10):
        while not hung.disconnected.is_set():
            await anyio.sleep(0.01)


async def test_the_winner_votes_before_it_presents(provider: ScriptedProvider,
                                                   tmp_path: Path) -> None:
    decided = threading.Event()  # set once the server reports the vote decided
    final = answer_then_vote("Use Kafka", "agent1", final="FINAL: Use Kafka")

    async def winner(req: ScriptRequest) -> Reply:
        if has_answered(req) and not presenting(req):  # its own vote is the outstanding one
            await asyncio.get_running_loop().run_in_executor(None, decided.wait, 60)
        return final(req)

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        if (message or "").startswith("outcome decided"):
            decided.set()

    team = three_voters(provider, tmp_path, answer_then_vote("Use RabbitMQ", "agent1"))
    provider.script("e0", winner)
    async with memory_client(tmp_path, team=team) as client:
        r = await client.call_tool("run_consensus", {"task": "Which queue?"},
                                   progress_callback=on_progress)  # type: ignore[arg-type]
        data = r.structured_content
        assert not r.is_error and data is not None, r.content
        full = await client.call_tool("get_run", {"run_id": data["run_id"], "detail": "events"})
    assert data["agreement"]["kind"] == "unanimous" and data["agreement"]["votes"] == 3
    events = [e["kind"] + ":" + str(e.get("agent", "")) for e in full.structured_content["events"]]
    # one agent does one thing at a time: its vote turn ends before its presentation starts
    assert events.index("vote:a") < events.index("presentation_started:a")
    assert [presenting(q) for q in provider.requests_for("e0")] == [False, False, True]
