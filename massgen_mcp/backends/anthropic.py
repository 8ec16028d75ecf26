"""Anthropic Messages.

The system prompt travels outside the messages, tool results are ``tool_result`` blocks in a
user message, consecutive messages of one role are merged (the API wants user and assistant
to alternate), and ``max_tokens`` is required (8192 when unset).

Retries and timeouts are the SDK's: `max_retries` attempts with exponential backoff that
honours ``Retry-After`` / ``retry-after-ms`` on 408, 409, 429, 5xx and 529 (overloaded),
and connection errors; `request_timeout_seconds` bounds each attempt. Thinking blocks are
echoed back unchanged through `Turn.provider_data`, as the API requires during tool use.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from massgen_mcp.backends._common import (
    count,
    reading_reply,
    role_turns,
    ssl_context,
    stainless_errors,
    tool_call,
)
from massgen_mcp.backends.native_tools import anthropic_tools, read_anthropic
from massgen_mcp.messages import Message, ToolCall, ToolSpec, Turn, Usage, new_call_id

if TYPE_CHECKING:
    from massgen_mcp.backends import BackendContext
    from massgen_mcp.config.team import AgentSpec

DEFAULT_MAX_TOKENS = 8192
_WIRE = "anthropic"


def _api_errors(spec: AgentSpec) -> AbstractContextManager[None]:
    import anthropic

    return stainless_errors(spec, anthropic, anthropic.AnthropicError)


class AnthropicBackend:
    """`Backend` for the Anthropic Messages wire format."""

    def __init__(self, spec: AgentSpec, context: BackendContext | None = None) -> None:
        import anthropic

        self.provider = spec.provider.name
        self.model = spec.model
        self._spec = spec
        key = spec.api_key.get_secret_value() if spec.api_key else "not-needed"
        self._client = anthropic.AsyncAnthropic(
            api_key=key, base_url=spec.base_url, max_retries=spec.backend.max_retries,
            timeout=spec.backend.request_timeout_seconds,
            http_client=anthropic.DefaultAsyncHttpxClient(verify=ssl_context()))

    async def turn(self, messages: list[Message], tools: list[ToolSpec]) -> Turn:
        params = self._params(messages, tools)
        with _api_errors(self._spec):
            response = await self._client.messages.create(**params)
        with reading_reply(self._spec):
            return _read_reply(response)

    async def aclose(self) -> None:
        await self._client.close()

    def _params(self, messages: list[Message], tools: list[ToolSpec]) -> dict[str, Any]:
        b = self._spec.backend
        system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
        params: dict[str, Any] = {
            "model": self.model,
            "messages": _wire_messages(messages),
            "max_tokens": b.max_tokens or DEFAULT_MAX_TOKENS,
        }
        if system:
            params["system"] = system
        server_tools, betas = anthropic_tools(b)
        if tools or server_tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in tools] + server_tools
        if tools:
            params["tool_choice"] = {"type": "auto"}
        if betas:
            params["extra_headers"] = {"anthropic-beta": ",".join(betas)}
        # anthropic>=1.0 dropped the sampling arguments (newer models reject them), but the
        # API still takes them on models that support them.
        sampling = {"temperature": b.temperature, "top_p": b.top_p}
        if extra := {k: v for k, v in sampling.items() if v is not None}:
            params["extra_body"] = extra
        if b.effort:
            params["output_config"] = {"effort": b.effort}
        return params


def _blocks(m: Message) -> list[dict[str, Any]]:
    if m.role == "tool":
        return [{"type": "tool_result", "tool_use_id": m.tool_call_id,
                 "content": m.content, "is_error": m.is_error}]
    # Anthropic rejects empty text blocks.
    text = [{"type": "text", "text": m.content}] if m.content else []
    if m.role != "assistant":
        return text
    data = m.provider_data
    thinking = data.get("thinking", []) if isinstance(data, dict) and data.get(
        "wire") == _WIRE else []
    uses = [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
            for c in m.tool_calls]
    return [*thinking, *text, *uses]


def _read_reply(response: Any) -> Turn:
    from anthropic.types import Message as AnthropicMessage

    if not isinstance(response, AnthropicMessage):
        raise ValueError(f"the body is not a message: {str(response)[:120]!r}")
    if response.content is None:
        raise ValueError("the reply's content is null")
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[dict[str, Any]] = []
    for block in response.content or []:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(tool_call(block.id or new_call_id(), block.name, block.input))
        elif block.type == "thinking":
            thinking.append(
                {"type": "thinking", "thinking": block.thinking, "signature": block.signature})
        elif block.type == "redacted_thinking":
            thinking.append({"type": "redacted_thinking", "data": block.data})
    u = response.usage
    usage = Usage(calls=1)
    if u is not None:
        usage.input_tokens = (count(u.input_tokens) + count(u.cache_read_input_tokens)
                              + count(u.cache_creation_input_tokens))
        usage.output_tokens = count(u.output_tokens)
    data: dict[str, Any] | None = {"wire": _WIRE, "thinking": thinking} if thinking else None
    if (native := read_anthropic(list(response.content or []), u).as_data()) is not None:
        data = {**(data or {}), "native": native}  # web searches are billed per call
    return Turn("".join(texts), tuple(calls), usage, response.stop_reason, data)



def _wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    # The API wants tool results first in a user message.
    return [{"role": role, "content": sorted(blocks, key=lambda b: b["type"] != "tool_result")}
            for role, blocks in role_turns(messages, "assistant", _blocks)]
