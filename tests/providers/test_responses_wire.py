# mypy: disable-error-code="union-attr"
# (read as the client gets them: a field of another kind fails the test)
"""The scripted provider's OpenAI Responses API, checked with the real `openai` SDK.

The SDK's stream helper (`responses.stream`) is strict about event order and identity, so it
is the conformance check for the SSE events Codex and our backend read.
"""

from __future__ import annotations

import json

import openai
import pytest
import scripted_responses
from scripted_provider import Call, Error, ScriptedProvider, Text, ToolCalls, sequence

NAMESPACE_TOOLS = [{"type": "namespace", "name": "mcp__w", "description": "workflow", "tools": [
    {"type": "function", "name": "new_answer", "description": "submit",
     "parameters": {"type": "object", "properties": {"content": {"type": "string"}}}}]}]


def _client(p: ScriptedProvider) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=p.openai_base_url, api_key="test-key", max_retries=0)


async def test_non_streaming_text_and_usage(provider: ScriptedProvider) -> None:
    provider.script("m", Text("hello there"))
    async with _client(provider) as client:
        r = await client.responses.create(model="m", input="hi", instructions="be brief")
    assert r.output_text == "hello there"
    assert r.usage is not None and r.usage.input_tokens > 0 and r.usage.output_tokens > 0
    req = provider.requests_for("m")[0]
    assert (req.wire, req.system, req.last_user_text) == ("responses", "be brief", "hi")


async def test_stream_events_in_order_with_sequence_numbers(provider: ScriptedProvider) -> None:
    provider.script("m", ToolCalls([Call("vote", {"agent_id": "a1", "reason": "r" * 40})],
                                   text="thinking about it at length"))
    client = _client(provider)
    async with client, client.responses.stream(model="m", input="hi") as stream:
        events = [e async for e in stream]
        final = await stream.get_final_response()
    types = [e.type for e in events]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    for kind in ("response.output_item.added", "response.content_part.added",
                 "response.output_text.delta", "response.output_text.done",
                 "response.content_part.done", "response.function_call_arguments.delta",
                 "response.function_call_arguments.done", "response.output_item.done"):
        assert kind in types
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert final.output_text == "thinking about it at length"
    call = next(i for i in final.output if i.type == "function_call")
    assert call.name == "vote" and json.loads(call.arguments)["agent_id"] == "a1"
    assert final.usage is not None and final.usage.total_tokens > 0


async def test_function_call_output_round_trip(provider: ScriptedProvider) -> None:
    provider.script("m", sequence(ToolCalls([Call("lookup", {"q": "x"})]), Text("done")))
    tools = [{"type": "function", "name": "lookup", "description": "look up",
              "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]
    async with _client(provider) as client:
        first = await client.responses.create(model="m", input="go", tools=tools)  # type: ignore[arg-type]
        call = first.output[0]
        assert call.type == "function_call"
        await client.responses.create(model="m", tools=tools, input=[  # type: ignore[arg-type]
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": call.call_id, "name": call.name,
             "arguments": call.arguments},
            {"type": "function_call_output", "call_id": call.call_id, "output": "Error: boom"}])
    second = provider.requests_for("m")[1]
    assert second.tool_names == ["lookup"]
    assert second.messages[1]["tool_calls"][0] == {
        "id": call.call_id, "name": "lookup", "arguments": {"q": "x"}}
    assert second.tool_results == [{"name": "lookup", "content": "Error: boom", "is_error": True}]


async def test_codex_namespaced_tools(provider: ScriptedProvider) -> None:
    provider.script("m", ToolCalls([Call("mcp__w__new_answer", {"content": "42"})]))
    async with _client(provider) as client:
        r = await client.responses.create(model="m", input="hi", tools=NAMESPACE_TOOLS,  # type: ignore[arg-type]
                                          stream=False, store=False)
    assert provider.requests_for("m")[0].tool_names == ["mcp__w__new_answer"]
    item = r.output[0]
    assert item.type == "function_call"
    assert (item.namespace, item.name) == ("mcp__w", "new_answer")


async def test_reasoning_items_are_sent_and_replayed(provider: ScriptedProvider) -> None:
    provider.script("m", Text("ok"))
    async with _client(provider) as client:
        r = await client.responses.create(model="m", input="hi", reasoning={"effort": "low"},
                                          include=["reasoning.encrypted_content"], store=False)
        reasoning = r.output[0]
        assert reasoning.type == "reasoning" and reasoning.encrypted_content == "enc:m:0"
        assert r.usage is not None
        assert r.usage.output_tokens_details.reasoning_tokens == scripted_responses.REASONING_TOKENS
        await client.responses.create(model="m", store=False, input=[
            {"role": "user", "content": "hi"}, reasoning.model_dump(exclude_none=True)])  # type: ignore[list-item]
    replayed = scripted_responses.replayed_reasoning(provider.requests_for("m")[1].raw)
    assert [i["encrypted_content"] for i in replayed] == ["enc:m:0"]


async def test_errors_are_openai_shaped(provider: ScriptedProvider) -> None:
    provider.script("m", Error(429, "slow down"))
    async with _client(provider) as client:
        with pytest.raises(openai.RateLimitError) as e:
            await client.responses.create(model="m", input="hi")
        with pytest.raises(openai.NotFoundError):
            await client.responses.create(model="nobody", input="hi")
    assert "slow down" in str(e.value)
