"""The three provider backends, through the real SDKs, against the loopback scripted provider."""

from __future__ import annotations

import asyncio
import base64
import re
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from scripted_provider import (
    Call,
    Delay,
    Error,
    Hang,
    ScriptedProvider,
    Text,
    ToolCalls,
    sequence,
)

from massgen_mcp.backends import Backend, create_backend
from massgen_mcp.backends._common import AZURE_API_VERSION
from massgen_mcp.backends.gemini import GeminiBackend
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.errors import PermanentBackendError, TransientBackendError
from massgen_mcp.messages import Message, ToolCall, ToolSpec, system, tool_result, user

WIRES = ["openai", "anthropic", "gemini"]
SECRET = "sk-secret-0123456789abcdef"
# Provider type and key variable to use when a test needs the key to come from the environment.
HOSTED = {"openai": ("openai", "OPENAI_API_KEY"), "anthropic": ("claude", "ANTHROPIC_API_KEY"),
          "gemini": ("gemini", "GEMINI_API_KEY")}

VOTE = ToolSpec("vote", "Vote for the best answer.", {
    "type": "object",
    "properties": {"agent_id": {"type": "string", "enum": ["agent1", "agent2"]},
                   "reason": {"type": "string"}},
    "required": ["agent_id", "reason"]})
SEARCH = ToolSpec("search", "Search the docs.", {
    "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})
READ = ToolSpec("read", "Read a file.", {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})

MakeBackend = Callable[..., Backend]


@pytest.fixture(autouse=True)
def _fast_gemini_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    # google-genai ignores Retry-After and backs off from 1 s; keep the suite fast.
    monkeypatch.setattr(GeminiBackend, "retry_initial_delay", 0.01)
    monkeypatch.setattr(GeminiBackend, "retry_max_delay", 0.02)


@pytest.fixture
def model(request: pytest.FixtureRequest) -> str:
    """A model name unique to this test, so scripts and request logs never mix."""
    return re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")


@pytest.fixture
async def make(provider: ScriptedProvider, tmp_path: Path) -> AsyncIterator[MakeBackend]:
    """Build a backend from a team-file dict pointing at the provider; closed afterwards."""
    made: list[Backend] = []

    def build(wire: str, model: str, *, env: dict[str, str] | None = None,
              **fields: Any) -> Backend:
        data = {"agents": [{"id": "a", "backend": provider.backend(wire, model, **fields)}]}
        team = team_from_data(data, "test", Environment(env or {}, dotenv_dir=tmp_path))
        backend = create_backend(team.agents[0])
        made.append(backend)
        return backend

    yield build
    for b in made:
        await b.aclose()


E = TypeVar("E", bound=Exception)


async def _expect(exc: type[E], call: Awaitable[Any]) -> E:
    with pytest.raises(exc) as info:
        await call
    return info.value


# ---------------------------------------------------------------------------- replies


@pytest.mark.parametrize("wire", WIRES)
async def test_text_reply_and_usage(wire: str, provider, make, model) -> None:
    provider.script(model, Text("The answer is 42."))
    backend = make(wire, model)
    turn = await backend.turn([system("Be brief."), user("What is six times seven?")], [])
    assert turn.text == "The answer is 42."
    assert turn.tool_calls == ()
    assert turn.stop_reason in {"stop", "end_turn", "STOP"}
    assert turn.usage.input_tokens > 0 and turn.usage.output_tokens > 0
    assert turn.usage.calls == 1
    (req,) = provider.requests_for(model)
    assert req.wire == wire
    assert req.system == "Be brief."
    assert [m["role"] for m in req.messages] == ["user"]
    assert req.last_user_text == "What is six times seven?"
    assert backend.model == model
    assert backend.provider == {"openai": "chatcompletion"}.get(wire, HOSTED[wire][0])


@pytest.mark.parametrize("wire", WIRES)
async def test_tool_call_parsed(wire: str, provider, make, model) -> None:
    provider.script(model, ToolCalls(
        [Call("vote", {"agent_id": "agent2", "reason": "clearer"})], text="Voting now."))
    turn = await make(wire, model).turn([user("vote")], [VOTE, SEARCH])
    (call,) = turn.tool_calls
    assert (call.name, call.arguments, call.arguments_error) == (
        "vote", {"agent_id": "agent2", "reason": "clearer"}, None)
    assert call.id
    assert turn.text == "Voting now."
    (req,) = provider.requests_for(model)
    assert req.tool_names == ["vote", "search"]
    assert req.tool_enum("vote", "agent_id") == ["agent1", "agent2"]  # the raw schema went out


async def test_gemini_without_call_ids_gets_generated_unique_ids(provider, make, model) -> None:
    provider.script(model, ToolCalls([Call("search", {"q": "a"}), Call("search", {"q": "b"})]))
    provider.gemini_call_ids = False
    try:
        turn = await make("gemini", model).turn([user("look twice")], [SEARCH])
    finally:
        provider.gemini_call_ids = True
    ids = [c.id for c in turn.tool_calls]
    assert len(set(ids)) == 2 and all(ids)
    assert [c.arguments for c in turn.tool_calls] == [{"q": "a"}, {"q": "b"}]


@pytest.mark.parametrize("raw", ['{"content": "unterminated', "[1, 2]"])
@pytest.mark.parametrize("wire", WIRES)
async def test_malformed_arguments(wire: str, raw: str, provider, make, model) -> None:
    provider.script(model, ToolCalls([Call("new_answer", raw)]))
    turn = await make(wire, model).turn([user("answer")], [SEARCH])
    (call,) = turn.tool_calls
    # Gemini reports a broken call only by its finish reason; the name may be lost.
    assert call.name == "new_answer" or (wire == "gemini" and call.name)
    assert call.arguments == {}
    assert call.arguments_error and call.id


# ---------------------------------------------------------------------------- conversations


@pytest.mark.parametrize("wire", WIRES)
async def test_conversation_with_tool_results_is_mapped(wire: str, provider, make, model) -> None:
    provider.script(model, sequence(
        ToolCalls([Call("search", {"q": "queues"}), Call("read", {"path": "/nope"})],
                  text="Let me look."),
        Text("Use a durable queue.")))
    backend = make(wire, model)
    history: list[Message] = [system("You are careful."), user("Which queue?")]
    first = await backend.turn(history, [SEARCH, READ])
    search, read = first.tool_calls
    history += [first.as_message(), tool_result(search, "found: SQS, Kafka"),
                tool_result(read, "no such file", is_error=True), user("Now answer.")]
    second = await backend.turn(history, [SEARCH, READ])
    assert second.text == "Use a durable queue."

    req = provider.requests_for(model)[1]
    assert req.system == "You are careful."
    assert [m["role"] for m in req.messages] == ["user", "assistant", "tool", "tool", "user"]
    assistant = req.messages[1]
    assert assistant["content"] == "Let me look."
    assert [(c["name"], c["arguments"]) for c in assistant["tool_calls"]] == [
        ("search", {"q": "queues"}), ("read", {"path": "/nope"})]
    assert [c["id"] for c in assistant["tool_calls"]] == [search.id, read.id]
    ok, failed = req.tool_results
    assert ok == {"name": "search", "content": "found: SQS, Kafka", "is_error": False}
    assert failed["name"] == "read" and failed["is_error"] is True
    assert failed["content"].endswith("no such file")
    assert [m.get("tool_call_id") for m in req.messages[2:4]] == [search.id, read.id]
    assert req.last_user_text == "Now answer."

    if wire == "anthropic":  # strictly alternating roles; tool results first in their message
        assert [m["role"] for m in req.raw["messages"]] == ["user", "assistant", "user"]
        assert [b["type"] for b in req.raw["messages"][2]["content"]] == [
            "tool_result", "tool_result", "text"]
    if wire == "gemini":  # one user content for both answers, thought signature echoed
        contents = req.raw["contents"]
        assert [c["role"] for c in contents] == ["user", "model", "user"]
        signed = [p for p in contents[1]["parts"] if "thoughtSignature" in p]
        assert base64.b64decode(signed[0]["thoughtSignature"]) == b"sig-0"
        assert first.provider_data is not None


async def test_anthropic_thinking_blocks_are_echoed_first(provider, make, model) -> None:
    provider.script(model, Text("ok"))
    thinking = {"type": "thinking", "thinking": "compare both", "signature": "c2ln"}
    call = ToolCall("toolu_1", "search", {"q": "x"})
    earlier = Message(role="assistant", content="Looking.", tool_calls=(call,),
                      provider_data={"wire": "anthropic", "thinking": [thinking]})
    await make("anthropic", model).turn(
        [user("q"), earlier, tool_result(call, "found")], [SEARCH])
    content = provider.requests_for(model)[0].raw["messages"][1]["content"]
    assert content[0] == thinking
    assert [b["type"] for b in content] == ["thinking", "text", "tool_use"]


@pytest.mark.parametrize("wire", WIRES)
async def test_the_model_chooses_whether_to_call_a_tool(wire: str, provider, make,
                                                        model) -> None:
    """No wire forces a tool call: a model that replies in text gets a reminder instead
    (coordination/converse.py), and forcing one breaks e.g. Anthropic extended thinking."""
    provider.script(model, Text("ok"))
    await make(wire, model).turn([user("a")], [VOTE])
    [request] = provider.requests_for(model)
    expected = {"openai": "auto", "anthropic": {"type": "auto"},
                "gemini": {"functionCallingConfig": {"mode": "AUTO"}}}
    assert request.tool_choice == expected[wire]


@pytest.mark.parametrize(("kind", "token_field"), [
    ("azure_openai", "max_completion_tokens"), ("chatcompletion", "max_tokens")])
async def test_openai_options(kind: str, token_field: str, provider, make, model) -> None:
    # (type: openai is the Responses API: see test_responses_backend.py)
    provider.script(model, Text("ok"))
    azure = {"base_url": provider.root} if kind == "azure_openai" else {}
    await make("openai", model, type=kind, max_tokens=321, temperature=0.2,
               reasoning={"effort": "low"}, **azure).turn([user("hi")], [])
    raw = provider.requests_for(model)[0].raw
    assert raw[token_field] == 321
    other = ({"max_tokens", "max_completion_tokens"} - {token_field}).pop()
    assert other not in raw
    assert (raw["temperature"], raw["reasoning_effort"]) == (0.2, "low")


async def test_anthropic_options(provider, make, model) -> None:
    provider.script(model, Text("ok"))
    backend = make("anthropic", model, temperature=0.3)
    await backend.turn([system("one"), system("two"), user("hi")], [])
    await make("anthropic", model, max_tokens=100, reasoning="high").turn([user("hi")], [])
    default, custom = (r.raw for r in provider.requests_for(model))
    assert default["max_tokens"] == 8192 and default["temperature"] == 0.3
    assert default["system"] == "one\n\ntwo"
    assert all(m["role"] != "system" for m in default["messages"])
    assert custom["max_tokens"] == 100 and custom["output_config"] == {"effort": "high"}


async def test_gemini_options(provider, make, model) -> None:
    provider.script(model, Text("ok"))
    await make("gemini", model, max_tokens=77, temperature=0.5, reasoning="low").turn(
        [system("sys"), user("hi")], [SEARCH])
    raw = provider.requests_for(model)[0].raw
    gen = raw["generationConfig"]
    assert (gen["maxOutputTokens"], gen["temperature"]) == (77, 0.5)
    assert gen["thinkingConfig"] == {"thinkingLevel": "LOW"}
    assert raw["systemInstruction"]["parts"] == [{"text": "sys"}]
    (decl,) = raw["tools"][0]["functionDeclarations"]
    assert decl["parametersJsonSchema"] == SEARCH.parameters


async def test_azure_openai_uses_deployment_url_and_api_version(provider, make, model) -> None:
    provider.script(model, Text("ok"))
    turn = await make("openai", model, type="azure_openai", base_url=provider.root).turn(
        [user("hi")], [])
    assert turn.text == "ok"
    (req,) = provider.requests_for(model)
    assert req.path == f"/openai/deployments/{model}/chat/completions"
    assert req.query["api-version"] == AZURE_API_VERSION
    assert req.headers["api-key"] == "test-key"


# ---------------------------------------------------------------------------- failures


@pytest.mark.parametrize("wire", WIRES)
async def test_rate_limit_is_retried_then_succeeds(wire: str, provider, make, model) -> None:
    provider.script(model, sequence(Error(429, headers={"Retry-After": "0.01"}), Text("ok")))
    turn = await make(wire, model, max_retries=2).turn([user("hi")], [])
    assert turn.text == "ok"
    assert len(provider.requests_for(model)) == 2


@pytest.mark.parametrize("status", [500, 503])
@pytest.mark.parametrize("wire", WIRES)
async def test_server_error_is_retried_then_succeeds(
    wire: str, status: int, provider, make, model
) -> None:
    provider.script(model, sequence(Error(status, headers={"retry-after-ms": "10"}), Text("ok")))
    turn = await make(wire, model, max_retries=1).turn([user("hi")], [])
    assert turn.text == "ok"
    assert len(provider.requests_for(model)) == 2


async def test_anthropic_overloaded_529_is_retried(provider, make, model) -> None:
    provider.script(model, sequence(Error(529, headers={"retry-after-ms": "10"}), Text("ok")))
    assert (await make("anthropic", model, max_retries=1).turn([user("hi")], [])).text == "ok"


@pytest.mark.parametrize("wire", WIRES)
async def test_rate_limit_after_retries_is_transient(wire: str, provider, make, model) -> None:
    provider.script(model, Error(429, "slow down", headers={"retry-after-ms": "10"}))
    err = await _expect(TransientBackendError,
                        make(wire, model, max_retries=1).turn([user("hi")], []))
    assert err.status == 429 and "rate limited" in str(err)
    assert len(provider.requests_for(model)) == 2


@pytest.mark.parametrize("wire", WIRES)
async def test_bad_key_is_permanent_names_the_variable_and_hides_the_key(
    wire: str, provider, make, model
) -> None:
    provider.script(model, Error(401, f"Incorrect API key provided: {SECRET}"))
    kind, var = HOSTED[wire]
    backend = make(wire, model, type=kind, api_key=None, env={var: SECRET})
    err = await _expect(PermanentBackendError, backend.turn([user("hi")], []))
    assert var in str(err) and "authentication failed" in str(err)
    assert SECRET not in str(err) and SECRET not in repr(err.args)
    assert err.__cause__ is None and err.__suppress_context__
    assert (err.status, err.provider, err.model) == (401, kind, model)
    (req,) = provider.requests_for(model)  # not retried
    assert any(v.endswith(SECRET) for v in req.headers.values())  # the env key was used


async def test_gemini_invalid_key_400_is_an_auth_error(provider, make, model) -> None:
    provider.script(model, Error(400, "API key not valid. Please pass a valid API key."))
    err = await _expect(PermanentBackendError, make("gemini", model).turn([user("hi")], []))
    assert "authentication failed" in str(err) and "backend.api_key" in str(err)


@pytest.mark.parametrize("wire", WIRES)
async def test_bad_request_is_permanent_and_redacts_the_key(
    wire: str, provider, make, model
) -> None:
    provider.script(model, Error(400, f"max_tokens too large for key {SECRET}"))
    kind, var = HOSTED[wire]
    backend = make(wire, model, type=kind, api_key=None, env={var: SECRET})
    err = await _expect(PermanentBackendError, backend.turn([user("hi")], []))
    assert err.status == 400 and "max_tokens too large" in str(err)
    assert SECRET not in str(err) and "***" in str(err)
    assert "\n" not in str(err)


@pytest.mark.parametrize("wire", WIRES)
async def test_unknown_model_is_permanent(wire: str, make, model) -> None:
    err = await _expect(PermanentBackendError, make(wire, model).turn([user("hi")], []))
    assert f"model '{model}' not found" in str(err)
    assert err.status == 404


@pytest.mark.parametrize("wire", WIRES)
async def test_timeout_is_transient(wire: str, provider, make, model) -> None:
    provider.script(model, Delay(5.0, Text("too late")))
    backend = make(wire, model, request_timeout_seconds=0.5, max_retries=0)
    # The reply would arrive after 5 s as text: an error naming the timeout is the proof.
    err = await _expect(TransientBackendError, backend.turn([user("hi")], []))
    assert "request_timeout_seconds" in str(err)
    # No retry (max_retries=0). Under load the client's timeout may even fire before its one
    # request has reached the server, so the server saw it once or not at all.
    assert len(provider.requests_for(model)) <= 1


@pytest.mark.parametrize("wire", WIRES)
async def test_unreachable_server_is_transient(wire: str, make, model) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}" + ("/v1" if wire == "openai" else "")
    backend = make(wire, model, base_url=url, max_retries=0)
    err = await _expect(TransientBackendError, backend.turn([user("hi")], []))
    assert "cannot reach" in str(err) and str(port) in str(err)


@pytest.mark.parametrize("wire", WIRES)
async def test_cancel_against_a_hanging_provider_returns_promptly(
    wire: str, provider, make, model
) -> None:
    provider.script(model, Hang())
    backend = make(wire, model)
    task = asyncio.create_task(backend.turn([user("hi")], []))
    (req,) = await provider.wait_for(model)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5)
    assert task in done and task.cancelled()
    # The HTTP request really went away: the server saw the client disconnect.
    assert await asyncio.to_thread(req.disconnected.wait, 2)


def test_backend_modules_do_not_import_sdks() -> None:
    code = ("import sys, massgen_mcp.backends.openai_chat, massgen_mcp.backends.anthropic, "
            "massgen_mcp.backends.gemini; "
            "print([m for m in ('openai', 'anthropic', 'google.genai') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("wire", WIRES)
async def test_anyio_deadline_cancels_the_call(wire: str, provider, make, model) -> None:
    provider.script(model, Hang())
    backend = make(wire, model)
    # The reply never comes: only a call that honours cancellation returns at all (the
    # outer bound turns a call that ignores it into a failure instead of a hang).
    with anyio.fail_after(30), anyio.move_on_after(0.1) as scope:
        await backend.turn([user("hi")], [])
    assert scope.cancelled_caught
