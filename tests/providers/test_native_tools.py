"""Provider-native tools from MassGen's keys: the exact request shape each provider documents,
captured by the scripted provider, and what comes back (sources, billed calls)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents import answer_then_vote
from helpers import make_team, run_team
from scripted_provider import ScriptedProvider, Text

from massgen_mcp.backends import Backend, create_backend
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.messages import ToolSpec, user

SOURCES = [("https://example.org/queues", "Queues compared"),
           ("https://example.org/kafka", "Kafka docs")]
VOTE = ToolSpec("vote", "vote", {"type": "object", "properties": {}})


def _backend(provider: ScriptedProvider, wire: str, model: str, **fields: Any) -> Backend:
    if wire == "grok":
        backend = {**provider.backend("responses", model, max_retries=0, **fields),
                   "type": "grok"}
    else:
        backend = provider.backend(wire, model, max_retries=0, **fields)
    team = team_from_data({"agents": [{"id": "a", "backend": backend}]}, "t.yaml",
                          Environment({}))
    return create_backend(team.agents[0])


async def _one_turn(provider: ScriptedProvider, wire: str, model: str,
                    **fields: Any) -> tuple[dict[str, Any], Any]:
    provider.script(model, Text("ok"))
    backend = _backend(provider, wire, model, **fields)
    try:
        turn = await backend.turn([user("hi")], [VOTE])
    finally:
        await backend.aclose()
    req = provider.requests_for(model)[0]
    return req.raw | {"_headers": req.headers, "_path": req.path}, turn


async def test_openai_web_search_is_the_responses_web_search_tool(provider) -> None:
    provider.web_sources = SOURCES
    raw, turn = await _one_turn(provider, "responses", "gpt-5-ws", enable_web_search=True)
    assert raw["_path"] == "/v1/responses"
    assert {"type": "web_search"} in raw["tools"]
    assert raw["tools"][0]["type"] == "function"  # our tools stay offered alongside
    native = turn.provider_data["native"]
    assert native["sources"] == [{"url": u, "title": t} for u, t in SOURCES]
    assert native["calls"] == {"web_search": 1}


async def test_openai_code_interpreter_runs_in_an_auto_container(provider) -> None:
    raw, _ = await _one_turn(provider, "responses", "gpt-5-ci", enable_code_interpreter=True)
    assert {"type": "code_interpreter", "container": {"type": "auto"}} in raw["tools"]
    assert {"type": "web_search"} not in raw["tools"]


async def test_grok_web_search_is_xai_responses_web_search(provider) -> None:
    raw, _ = await _one_turn(provider, "grok", "grok-4-ws", enable_web_search=True)
    assert raw["_path"] == "/v1/responses"
    assert {"type": "web_search"} in raw["tools"]
    assert "search_parameters" not in raw  # xAI retired Live Search's search_parameters


async def test_anthropic_web_search_is_the_server_tool(provider) -> None:
    provider.web_sources = SOURCES
    raw, turn = await _one_turn(provider, "anthropic", "claude-ws", enable_web_search=True)
    assert {"type": "web_search_20250305", "name": "web_search", "max_uses": 5} in raw["tools"]
    assert raw["tools"][0]["name"] == "vote"
    assert "anthropic-beta" not in raw["_headers"]  # web search needs no beta
    native = turn.provider_data["native"]
    assert native["sources"] == [{"url": u, "title": t} for u, t in SOURCES]
    assert native["calls"] == {"web_search": 1}  # from usage.server_tool_use


async def test_anthropic_code_execution_sends_the_tool_and_its_beta(provider) -> None:
    raw, _ = await _one_turn(provider, "anthropic", "claude-ce", enable_code_execution=True)
    assert {"type": "code_execution_20250825", "name": "code_execution"} in raw["tools"]
    assert raw["_headers"]["anthropic-beta"] == "code-execution-2025-08-25"


async def test_gemini_web_search_is_google_search_grounding(provider) -> None:
    provider.web_sources = SOURCES
    raw, turn = await _one_turn(provider, "gemini", "gemini-ws", enable_web_search=True)
    assert {"googleSearch": {}} in raw["tools"]
    assert any("functionDeclarations" in t for t in raw["tools"])
    native = turn.provider_data["native"]
    assert native["sources"] == [{"url": u, "title": t} for u, t in SOURCES]
    assert native["calls"] == {"google_search": 1}


async def test_gemini_code_execution_is_the_code_execution_tool(provider) -> None:
    raw, _ = await _one_turn(provider, "gemini", "gemini-ce", enable_code_execution=True)
    assert {"codeExecution": {}} in raw["tools"]
    assert {"googleSearch": {}} not in raw["tools"]


async def test_no_native_tool_unless_asked(provider) -> None:
    raw, turn = await _one_turn(provider, "responses", "gpt-5-none")
    assert [t["type"] for t in raw["tools"]] == ["function"]
    assert "native" not in turn.provider_data


async def test_sources_reach_the_answer_record_and_calls_the_usage(
        provider, tmp_path: Path) -> None:
    provider.web_sources = SOURCES
    provider.script("gpt-5-s1", answer_then_vote("Kafka", "agent1"))
    provider.script("gpt-5-s2", answer_then_vote("SQS", "agent1"))
    team = make_team(provider, [("a", "responses", "gpt-5-s1"), ("b", "responses", "gpt-5-s2")])
    team = team_from_data({"agents": [
        {"id": a.id, "backend": {**a.backend.model_dump(exclude_none=True),
                                 "api_key": "test-key", "enable_web_search": a.id == "a"}}
        for a in team.agents]}, "t.yaml", Environment({}))
    result = await run_team(team, tmp_path)
    assert result.status == "completed"
    by_agent = {a.agent_id: a for a in result.answers}
    assert by_agent["a"].sources == [{"url": u, "title": t} for u, t in SOURCES]
    assert by_agent["b"].sources == []
    usage = {a.agent_id: a.usage for a in result.agents}
    assert usage["a"].native_tool_calls["web_search"] == usage["a"].provider_calls
    assert usage["b"].native_tool_calls == {}


def test_a_native_tool_the_provider_lacks_is_a_warning() -> None:
    data = {"agents": [
        {"id": "c", "backend": {"type": "claude", "model": "m", "api_key": "k",
                                "enable_code_interpreter": True}},
        {"id": "g", "backend": {"type": "groq", "model": "m", "api_key": "k",
                                "enable_web_search": True}}]}
    team = team_from_data(data, "t.yaml", Environment({}))
    (warning,) = team.warnings
    assert "agents[0].backend.enable_code_interpreter: agents will have no code interpreter " \
           "(not available on type claude)" in warning
    assert "agents[1].backend.enable_web_search: agents will have no web search " \
           "(not available on type groq)" in warning
