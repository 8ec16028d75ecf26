"""`type: openai` on the OpenAI Responses API, through the real `openai` SDK's responses client
against the loopback scripted provider."""

from __future__ import annotations

from pathlib import Path

import pytest
import scripted_responses
from agents import answer_then_vote
from helpers import make_team, run_team
from scripted_provider import Error, Reply, ScriptedProvider, ScriptRequest, Text

from massgen_mcp.backends import create_backend
from massgen_mcp.backends.openai_responses import OpenAIResponsesBackend
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.errors import PermanentBackendError
from massgen_mcp.messages import ToolSpec, user

VOTE = ToolSpec("vote", "vote", {"type": "object", "properties": {"agent_id": {"type": "string"}}})


def _spec(provider: ScriptedProvider, model: str, **fields: object):
    data = {"agents": [{"id": "a", "backend": provider.backend("responses", model,
                                                                max_retries=0, **fields)}]}
    return team_from_data(data, "t.yaml", Environment({})).agents[0]


def thinks_first(text: str) -> object:
    """Reply with plain text (no tool call) on an agent's first request of its first turn,
    so the orchestrator reminds it and the next request must replay the reasoning."""

    inner = answer_then_vote(text, "agent1")

    def script(req: ScriptRequest) -> Reply:
        if req.call_index == 0:
            return Text("let me think")
        return inner(req)

    return script


async def test_type_openai_is_the_responses_backend(provider: ScriptedProvider) -> None:
    spec = _spec(provider, "gpt-4.1")
    assert spec.provider.wire == "openai_responses"
    backend = create_backend(spec)
    assert isinstance(backend, OpenAIResponsesBackend)
    provider.script("gpt-4.1", Text("hi"))
    turn = await backend.turn([user("hello")], [])
    await backend.aclose()
    assert turn.text == "hi"
    raw = provider.requests_for("gpt-4.1")[0].raw
    assert provider.requests_for("gpt-4.1")[0].path == "/v1/responses"
    assert raw["store"] is False and "include" not in raw  # not a reasoning model


async def test_full_consensus_keeps_reasoning_across_the_tool_loop(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("gpt-5-a", thinks_first("Use Kafka"))  # type: ignore[arg-type]
    provider.script("gpt-5-b", answer_then_vote("Use SQS", "agent1"))
    team = make_team(provider, [("a", "responses", "gpt-5-a"), ("b", "responses", "gpt-5-b")])
    result = await run_team(team, tmp_path)

    assert result.status == "completed"
    assert result.winner is not None and result.winner.agent_id == "a"
    assert result.final_answer == "FINAL: Use Kafka"
    first, second = provider.requests_for("gpt-5-a")[:2]
    assert first.raw["store"] is False
    assert first.raw["include"] == ["reasoning.encrypted_content"]
    # The reminder request carries the first reply's reasoning item, encrypted, verbatim.
    replayed = scripted_responses.replayed_reasoning(second.raw)
    assert [r["encrypted_content"] for r in replayed] == ["enc:gpt-5-a:0"]
    message = next(i for i in second.raw["input"] if i.get("type") == "message")
    assert (message["role"], message["status"]) == ("assistant", "completed")  # verbatim
    assert [c["text"] for c in message["content"]] == ["let me think"]
    assert all(r.wire == "responses" for r in provider.requests)
    # Output tokens include the reasoning tokens of every call.
    calls = len(provider.requests_for("gpt-5-a"))
    agent_a = next(a for a in result.agents if a.agent_id == "a")
    assert agent_a.usage.output_tokens >= calls * scripted_responses.REASONING_TOKENS


async def test_function_call_output_carries_the_tool_result(provider: ScriptedProvider) -> None:
    from massgen_mcp.messages import ToolCall, tool_result

    provider.script("gpt-5-t", Text("ok"))
    backend = create_backend(_spec(provider, "gpt-5-t"))
    first = await backend.turn([user("hi")], [VOTE])
    call = ToolCall("call_9", "vote", {"agent_id": "agent1"})
    assistant = first.as_message()
    await backend.turn([user("hi"), assistant, tool_result(call, "bad id", is_error=True)],
                       [VOTE])
    await backend.aclose()
    second = provider.requests_for("gpt-5-t")[1]
    outputs = [i for i in second.raw["input"] if i.get("type") == "function_call_output"]
    assert outputs == [{"type": "function_call_output", "call_id": "call_9",
                        "output": "Error: bad id"}]
    assert second.raw["tool_choice"] == "auto"
    assert second.raw["tools"][0] == {"type": "function", "name": "vote", "description": "vote",
                                      "parameters": VOTE.parameters, "strict": False}


async def test_reasoning_effort_verbosity_and_tokens_map_through(
        provider: ScriptedProvider) -> None:
    provider.script("gpt-5-o", Text("ok"))
    backend = create_backend(_spec(provider, "gpt-5-o", reasoning={"effort": "high",
                                                                   "summary": "auto"},
                                   text={"verbosity": "low"}, max_tokens=900, temperature=0.3))
    turn = await backend.turn([user("hi")], [])
    await backend.aclose()
    raw = provider.requests_for("gpt-5-o")[0].raw
    assert raw["reasoning"] == {"effort": "high", "summary": "auto"}
    assert raw["text"] == {"verbosity": "low"}
    assert (raw["max_output_tokens"], raw["temperature"]) == (900, 0.3)
    assert "max_tokens" not in raw and "messages" not in raw
    assert turn.provider_data["reasoning_tokens"] == scripted_responses.REASONING_TOKENS


async def test_errors_map_like_the_other_backends(provider: ScriptedProvider) -> None:
    provider.script("gpt-5-e", Error(401, "bad key test-key"))
    backend = create_backend(_spec(provider, "gpt-5-e"))
    with pytest.raises(PermanentBackendError) as e:
        await backend.turn([user("hi")], [])
    await backend.aclose()
    assert "authentication failed" in str(e.value) and "test-key" not in str(e.value)


async def test_chatcompletion_and_presets_stay_on_chat_completions(
        provider: ScriptedProvider) -> None:
    provider.script("m", answer_then_vote("x"))
    data = {"agents": [{"id": "a", "backend": provider.backend("openai", "m")},
                       {"id": "b", "backend": {"type": "groq", "model": "m", "api_key": "k"}}]}
    team = team_from_data(data, "t.yaml", Environment({}))
    assert [a.provider.wire for a in team.agents] == ["openai_chat", "openai_chat"]
