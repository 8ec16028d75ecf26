"""OpenAI Chat Completions, for OpenAI, Azure OpenAI and every OpenAI-compatible endpoint.

Retries and timeouts are the SDK's: `max_retries` attempts with exponential backoff that
honours ``Retry-After`` / ``retry-after-ms`` (up to two minutes) on 408, 409, 429 and 5xx,
and connection errors; `request_timeout_seconds` bounds each attempt.

The helpers in `_common.py` (argument parsing, key redaction, error messages) are shared
with the Anthropic and Gemini backends, so all three fail the same way.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from massgen_mcp.backends._common import (
    AZURE_API_VERSION,
    TOOL_ERROR_PREFIX,
    count,
    reading_reply,
    ssl_context,
    stainless_errors,
    tool_call,
)
from massgen_mcp.messages import Message, ToolSpec, Turn, Usage, new_call_id

if TYPE_CHECKING:
    import openai

    from massgen_mcp.backends import BackendContext
    from massgen_mcp.config.team import AgentSpec

# ---------------------------------------------------------------------------- the backend


def openai_errors(spec: AgentSpec) -> AbstractContextManager[None]:
    """The OpenAI SDK's errors as ours (both OpenAI wire formats use it)."""
    import openai

    return stainless_errors(spec, openai, openai.OpenAIError)


def openai_client(spec: AgentSpec) -> openai.AsyncOpenAI:
    """The SDK client for an agent (Azure's when it is an Azure deployment)."""
    import openai

    # Local servers ignore the key, but the SDK refuses to start without one.
    key = spec.api_key.get_secret_value() if spec.api_key else "not-needed"
    common: dict[str, Any] = {
        "api_key": key, "max_retries": spec.backend.max_retries,
        "timeout": spec.backend.request_timeout_seconds,
        "http_client": openai.DefaultAsyncHttpxClient(verify=ssl_context())}
    if spec.provider.name == "azure_openai":
        return openai.AsyncAzureOpenAI(
            azure_endpoint=spec.base_url or "",
            api_version=spec.backend.api_version or AZURE_API_VERSION, **common)
    return openai.AsyncOpenAI(base_url=spec.base_url, **common)


class OpenAIClientBackend:
    """What the backends of both OpenAI wire formats hold: the spec and the SDK client."""

    def __init__(self, spec: AgentSpec, context: BackendContext | None = None) -> None:
        self.provider = spec.provider.name
        self.model = spec.model
        self._spec = spec
        self._client = openai_client(spec)

    async def aclose(self) -> None:
        await self._client.close()


class OpenAIChatBackend(OpenAIClientBackend):
    """`Backend` for the Chat Completions wire format."""

    async def turn(self, messages: list[Message], tools: list[ToolSpec]) -> Turn:
        from openai.types.chat import ChatCompletion

        params = self._params(messages, tools)
        with openai_errors(self._spec):
            # The SDK's public `post` (its retries, timeouts, auth and errors) with our body
            # as is: `chat.completions.create` would first re-walk these plain dicts against
            # its TypedDicts, a third of the SDK's CPU per call, for nothing.
            response = await self._client.post("/chat/completions", body=params,
                                               cast_to=ChatCompletion)
        with reading_reply(self._spec):
            return _read_reply(response)

    def _params(self, messages: list[Message], tools: list[ToolSpec]) -> dict[str, Any]:
        b = self._spec.backend
        params: dict[str, Any] = {"model": self.model, "messages": _wire_messages(messages)}
        if tools:
            params["tools"] = [
                {"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}}
                for t in tools]
            params["tool_choice"] = "auto"
        if b.temperature is not None:
            params["temperature"] = b.temperature
        if b.top_p is not None:
            params["top_p"] = b.top_p
        if b.max_tokens is not None:
            # OpenAI's reasoning models reject max_tokens; most compatible servers only
            # know max_tokens.
            native = self.provider in ("openai", "azure_openai")
            params["max_completion_tokens" if native else "max_tokens"] = b.max_tokens
        if b.effort:
            params["reasoning_effort"] = b.effort
        if self.provider != "azure_openai":  # vLLM/SGLang-style extra sampling fields
            extra = {"top_k": b.top_k, "chat_template_kwargs": b.chat_template_kwargs}
            params.update({k: v for k, v in extra.items() if v is not None})
        body = (b.model_extra or {}).get("extra_body")
        if isinstance(body, dict):  # MassGen's extra_body (sglang, vLLM): sent as given,
            # except for the fields this request is made of
            params.update({k: v for k, v in body.items() if k not in _OWN_FIELDS})
        return params


_OWN_FIELDS = frozenset({"model", "messages", "tools", "tool_choice", "stream"})


def _read_reply(response: Any) -> Turn:
    from openai.types.chat import ChatCompletion

    if not isinstance(response, ChatCompletion):
        raise ValueError(f"the body is not a chat completion: {str(response)[:120]!r}")
    if not response.choices:
        raise ValueError("the reply has no choices")
    choice = response.choices[0]
    message = choice.message
    if message is None:
        raise ValueError("the reply's message is null")
    calls = []
    for tc in message.tool_calls or []:
        function = getattr(tc, "function", None)
        if function is None:  # a non-function (custom) tool call: we offered none
            continue
        calls.append(tool_call(tc.id or new_call_id(), function.name, function.arguments))
    usage = Usage(calls=1)
    if response.usage is not None:
        usage.input_tokens = count(response.usage.prompt_tokens)
        usage.output_tokens = count(response.usage.completion_tokens)
    content = message.content if isinstance(message.content, str) else ""
    return Turn(content, tuple(calls), usage, choice.finish_reason)


def _wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            # "" rather than null: OpenAI accepts both, but several compatible servers
            # (llama.cpp's Python server among them) answer 500 to a null content.
            msg: dict[str, Any] = {"role": "assistant", "content": m.content or ""}
            if m.tool_calls:
                msg["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                    for c in m.tool_calls]
            out.append(msg)
        elif m.role == "tool":
            content = m.content
            if m.is_error and not content.startswith(TOOL_ERROR_PREFIX):
                content = TOOL_ERROR_PREFIX + content
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": content})
        else:
            out.append({"role": m.role, "content": m.content})
    return out
