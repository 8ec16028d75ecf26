"""Results that fit the client: a run's result is compact by default (the decision and the
final answer), and every answer, usage detail and event is one `get_run` away.

The sizes are what Claude Code 2.1.332 keeps inline (its bundle: a tool result over 50,000
characters is saved to a file unless the tool's `tools/list` entry allows more with
`_meta["anthropic/maxResultSizeChars"]`; past `MAX_MCP_OUTPUT_TOKENS`, 25,000 tokens counted
as characters / 4, it is cut). Its model reads the structured content as JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agents import answer_then_vote
from mcp_harness import memory_client, write_team
from scripted_provider import ScriptedProvider

from massgen_mcp.server.result_size import CLAUDE_CODE_INLINE_CHARS, COMPACT_BYTES

ANSWER_CHARS = 40_000


def big(tag: str) -> str:
    """A 40 KB answer whose every part says whose it is."""
    line = f"{tag}: the queue should be durable, ordered per key and replayable.\n"
    return (line * (ANSWER_CHARS // len(line) + 1))[:ANSWER_CHARS]


def three_big_answers(provider: ScriptedProvider, tmp_path: Path) -> Path:
    for model, tag in (("f-a", "ALPHA"), ("f-b", "BRAVO"), ("f-c", "CHARLIE")):
        provider.script(model, answer_then_vote(big(tag), "agent2", final=big("FINAL")))
    return write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "f-a"), ("b", "openai", "f-b"), ("c", "openai", "f-c")],
                      early_stop=False)  # every vote is counted: the result carries all three


def result_size(result: object) -> int:
    """What a client receives: every text block and the structured content (as JSON)."""
    texts = [b.text for b in result.content if b.type == "text"]  # type: ignore[attr-defined]
    return sum(len(t.encode()) for t in texts) + len(json.dumps(
        result.structured_content, ensure_ascii=False).encode())  # type: ignore[attr-defined]


async def test_three_40kb_answers_give_a_result_under_20000_tokens(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    team = three_big_answers(provider, tmp_path)
    async with memory_client(tmp_path, team=team) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        r = await client.call_tool("run_consensus", {"task": "Which queue?"})
        assert not r.is_error, r.content
        data = r.structured_content
        assert data is not None
        # The decision, and the final answer whole.
        assert data["status"] == "completed"
        assert data["final_answer"] == big("FINAL") and not data["final_answer_truncated"]
        assert data["winner"]["agent_id"] == "b"
        assert [v["voted_for"] for v in data["votes"]] == ["b", "b", "b"]
        assert all(v["reason"] for v in data["votes"])
        assert len(data["agents"]) == 3 and all("/f-" in a and "voted" in a for a in data["agents"])
        assert data["totals"]["answers"] == 3 and data["totals"]["votes"] == 3
        # Small enough to stay inline; nothing sent twice.
        size = result_size(r)
        assert size < COMPACT_BYTES, size
        assert size < 20_000 * 4  # Claude Code's token count is characters / 4
        dumped = json.dumps(data)
        for tag in ("ALPHA", "BRAVO", "CHARLIE"):
            assert tag not in dumped  # the other answers are not in the default result
        text = r.content[0].text  # type: ignore[union-attr]
        assert "Winner: b (f-b), with 3 of 3 votes cast" in text
        assert text.startswith("FINAL:") and len(text) < 1_500
        meta = listed["run_consensus"].meta or {}
        assert meta["anthropic/maxResultSizeChars"] == CLAUDE_CODE_INLINE_CHARS
        assert listed["get_run"].meta == listed["run_consensus"].meta
        links = [b for b in r.content if b.type == "resource_link"]
        assert [str(b.uri) for b in links] == [f"massgen://runs/{data['run_id']}/answer"]

        # Everything else is one call away.
        run_id = data["run_id"]
        full = await client.call_tool("get_run", {"run_id": run_id, "detail": "answers"})
        answers = {a["agent_id"]: a["text"] for a in full.structured_content["answers"]}
        assert answers == {"a": big("ALPHA"), "b": big("BRAVO"), "c": big("CHARLIE")}
        agents = await client.call_tool("get_run", {"run_id": run_id, "detail": "agents"})
        details = agents.structured_content["agent_details"]
        assert [a["usage"]["provider_calls"] > 0 for a in details] == [True] * 3
        events = await client.call_tool("get_run", {"run_id": run_id, "detail": "events"})
        kinds = [e["kind"] for e in events.structured_content["events"]]
        assert kinds[0] == "run_started" and "vote" in kinds
        plain = await client.call_tool("get_run", {"run_id": run_id})
        assert plain.structured_content == data
        whole = await client.read_resource(f"massgen://runs/{run_id}/answer")
        assert whole.contents[0].text == big("FINAL")  # type: ignore[union-attr]


async def test_a_huge_final_answer_is_shortened_with_a_link(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    # A real long answer (its presentation is checked against it: it must keep its content).
    huge = "".join(f"Step {i}: move shard {i} to the new queue.\n" for i in range(4000))
    huge = huge[:149_999] + "."
    provider.script("h-a", answer_then_vote(huge, final=huge))
    provider.script("h-b", answer_then_vote("short b", final=huge))
    team = write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "h-a"), ("b", "openai", "h-b")])
    async with memory_client(tmp_path, team=team) as client:
        r = await client.call_tool("run_consensus", {"task": "Which queue?"})
        data = r.structured_content
        assert data["final_answer_truncated"] and data["final_answer_chars"] == 150_000
        assert f"massgen://runs/{data['run_id']}/answer" in data["final_answer"]
        assert result_size(r) < COMPACT_BYTES
        whole = await client.read_resource(data["answer_resource"])
        assert whole.contents[0].text == huge  # type: ignore[union-attr]


async def test_get_run_detail_is_checked(provider: ScriptedProvider, tmp_path: Path) -> None:
    async with memory_client(tmp_path) as client:
        r = await client.call_tool("get_run", {"run_id": "run_20261130T183300Z_a1b2c3",
                                               "detail": "everything"})
        assert r.is_error
        assert "detail" in r.content[0].text  # type: ignore[union-attr]


@pytest.mark.npm
def test_claude_code_shows_the_decision_and_the_final_answer_inline(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    """The real Claude Code CLI (headless, the allow rule for massgen's tools): the model's
    next request holds the decision and the whole final answer, not a saved-file notice."""
    from claude_client import DONE, run_claude

    team = three_big_answers(provider, tmp_path)
    run = run_claude(provider, tmp_path, "run_consensus", {"task": "Which queue?"},
                     ["--team", str(team)], env={"CLAUDE_CODE_DISABLE_MCP_TASKS": "1"})
    seen = run.tool_result
    assert "<persisted-output>" not in seen and "Output too large" not in seen, seen[:3000]
    assert "OUTPUT TRUNCATED" not in seen
    assert big("FINAL") in seen.replace("\\n", "\n")
    assert '"winner"' in seen and '"votes"' in seen and "is the most complete" in seen
    assert "ALPHA" not in seen and "CHARLIE" not in seen
    assert DONE in run.proc.stdout
