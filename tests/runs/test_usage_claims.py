"""A provider reply claiming absurd token counts is a bad reply (that turn fails and is
retried), not spending that ends the run: the budget counts only what is believable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import scripted_responses
from agents import answer_then_vote
from helpers import make_team, run_team
from scripted_provider import Call, Raw, ScriptedProvider, ScriptRequest

from massgen_mcp.backends._common import MAX_TOKENS_PER_CALL, count

CALL = {"content": "from a boastful server"}


def _boast(wire: str, req: ScriptRequest, tokens: Any) -> Raw:
    if wire == "openai":
        return Raw(json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [{
                    "id": "c1", "type": "function",
                    "function": {"name": "new_answer", "arguments": json.dumps(CALL)}}]}}],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 3, "total_tokens": tokens}}))
    if wire == "anthropic":
        return Raw(json.dumps({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "new_answer",
                         "input": CALL}],
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": tokens}}))
    if wire == "gemini":
        return Raw(json.dumps({
            "candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"name": "new_answer", "args": CALL}}]},
                "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": tokens, "candidatesTokenCount": 3}}))
    items = scripted_responses.output_items(req.raw, req.model, req.call_index, "",
                                            [Call("new_answer", CALL)], [1])
    body = scripted_responses.response_object(req.raw, req.model, "resp_1", items, (0, 3))
    body["usage"]["input_tokens"] = tokens
    return Raw(json.dumps(body))


@pytest.mark.parametrize("tokens", [10**30, 2**63, MAX_TOKENS_PER_CALL + 1])
@pytest.mark.parametrize("wire", ["openai", "anthropic", "gemini", "responses"])
async def test_an_absurd_usage_report_fails_that_turn_not_the_run(
        provider: ScriptedProvider, tmp_path: Path, wire: str, tokens: int) -> None:
    def boastful(req: ScriptRequest) -> Any:
        if req.call_index == 0:
            return _boast(wire, req, tokens)
        return answer_then_vote("after the boast")(req)

    provider.script("b", boastful)
    provider.script("fine", answer_then_vote("fine answer", "agent1"))
    team = make_team(provider, [("b", wire, "b"), ("fine", "openai", "fine")],
                     max_total_tokens=1_000_000)
    result = await run_team(team, tmp_path)
    assert result.status == "completed", result.error
    assert result.totals.total_tokens < 1_000_000
    notes = next(a.notes for a in result.agents if a.agent_id == "b")
    assert any("turn failed and was retried" in n for n in notes), notes
    events = (Path(result.log_dir) / "events.jsonl").read_text()
    assert "more than any model reads or writes" in events


@pytest.mark.parametrize("value", ["1e30", "inf", 1e30, float("inf"), "9" * 40,
                                   pytest.param(10**5000, id="5000-digit-int")])
def test_count_refuses_what_no_call_can_reach(value: Any) -> None:
    with pytest.raises(ValueError, match="more than any model"):
        count(value)


@pytest.mark.parametrize(("value", "n"), [(12, 12), ("12", 12), (None, 0), ("nan", 0),
                                          (-5, 0), (True, 0), ("x", 0),
                                          (MAX_TOKENS_PER_CALL, MAX_TOKENS_PER_CALL)])
def test_count_reads_believable_values(value: Any, n: int) -> None:
    assert count(value) == n
