"""OpenAI Chat Completions, for OpenAI, Azure OpenAI and every OpenAI-compatible endpoint.

Retries and timeouts are the SDK's: `max_retries` attempts with exponential backoff that
honours ``Retry-After`` / ``retry-after-ms`` (up to two minutes) on 408, 409, 429 and 5xx,
and connection errors; `request_timeout_seconds` bounds each attempt.

The helpers at the top (argument parsing, key redaction, the error messages) are shared by
the Anthropic and Gemini backends, so all three fail the same way.
"""

from __future__ import annotations

import functools
import json
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import BackendError, PermanentBackendError, TransientBackendError
from ..messages import Message, ToolCall, ToolSpec, Turn, Usage
from ..providers import provider_for_base_url

if TYPE_CHECKING:
    import ssl

    from ..config import AgentSpec

# An Azure API version that accepts everything this backend sends (tools, tool_choice,
# max_completion_tokens, reasoning_effort); backend.api_version overrides it.
AZURE_API_VERSION = "2025-04-01-preview"
# Chat Completions has no error flag on tool results; the model reads this prefix instead.
TOOL_ERROR_PREFIX = "Error: "
_KEY_SHAPES = re.compile(
    r"\b(?:sk-[A-Za-z0-9_*-]{8,}|AIza[0-9A-Za-z_-]{20,}|xai-[A-Za-z0-9]{8,}|gsk_[A-Za-z0-9]{8,})")

# ---------------------------------------------------------------------------- shared helpers


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """One TLS context for every client: building one loads the trust store, which takes
    ~0.1 s of blocking CPU, and each SDK client would otherwise build its own."""
    try:
        import httpx2 as httpx_module  # what the current SDKs use (honours SSL_CERT_FILE)
    except ImportError:
        import httpx as httpx_module
    return httpx_module.create_ssl_context()


def new_call_id() -> str:
    """A tool call id for providers that do not give one."""
    return f"call_{uuid.uuid4().hex[:24]}"


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments as a dict, or ``({}, why)`` when they are not a JSON object."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None  # a call without arguments
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError as e:
            return {}, f"the arguments are not valid JSON ({e}): {_clip(raw, 200)}"
    if not isinstance(value, dict):
        return {}, (f"the arguments must be a JSON object, not {type(value).__name__}: "
                    f"{_clip(json.dumps(value), 200)}")
    return value, None


def redact(text: str, spec: AgentSpec) -> str:
    """`text` without the agent's API key or anything shaped like a provider key."""
    if spec.api_key is not None:
        secret = spec.api_key.get_secret_value()
        if len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEY_SHAPES.sub("***", text)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def key_hint(spec: AgentSpec) -> str:
    """Where this agent's key comes from, to tell the user what to fix."""
    if spec.backend.api_key is not None:
        return "backend.api_key in the team file"
    env = spec.provider.key_env
    if spec.provider.name == "chatcompletion" and spec.base_url:
        match = provider_for_base_url(spec.base_url)
        env = match.key_env if match else env
    return " or ".join(env) if env else "backend.api_key in the team file"


def status_error(spec: AgentSpec, status: int, detail: str) -> BackendError:
    """The error for an HTTP status the SDK gave up on (after its own retries)."""
    where = f"{spec.provider.name}/{spec.model}"
    kw: dict[str, Any] = {"provider": spec.provider.name, "model": spec.model, "status": status}
    detail = _clip(redact(detail, spec), 240)
    if status in (401, 403):  # the provider's text may quote part of the key: leave it out
        return PermanentBackendError(
            f"{where}: authentication failed (HTTP {status}): check {key_hint(spec)}", **kw)
    if status == 404:
        where_url = f" ({spec.base_url})" if spec.base_url else ""
        return PermanentBackendError(
            f"model '{spec.model}' not found at {spec.provider.name}{where_url} (HTTP 404): "
            f"check the model name{' and base_url' if spec.base_url else ''}", **kw)
    retries = spec.backend.max_retries
    if status == 429:
        return TransientBackendError(
            f"{where}: rate limited (HTTP 429) after {retries} retries: {detail}; wait and "
            "retry, use fewer agents on this provider, or raise backend.max_retries", **kw)
    if status >= 500 or status in (408, 409):
        return TransientBackendError(
            f"{where}: provider error (HTTP {status}) after {retries} retries: {detail}; "
            "retry later", **kw)
    return PermanentBackendError(
        f"{where}: request rejected (HTTP {status}): {detail}; fix the backend options "
        "(model, max_tokens, temperature, reasoning) in the team file", **kw)


def timeout_error(spec: AgentSpec) -> TransientBackendError:
    b = spec.backend
    return TransientBackendError(
        f"{spec.provider.name}/{spec.model}: no reply within {b.request_timeout_seconds:g}s "
        f"(after {b.max_retries} retries): raise backend.request_timeout_seconds or retry later",
        provider=spec.provider.name, model=spec.model)


def connection_error(spec: AgentSpec, detail: str) -> TransientBackendError:
    target = spec.base_url or f"the {spec.provider.name} API"
    fix = (f"is the {spec.provider.name} server running?" if spec.provider.local
           else "check the network and base_url")
    return TransientBackendError(
        f"{spec.provider.name}/{spec.model}: cannot reach {target} "
        f"({_clip(redact(detail, spec), 160)}): {fix}",
        provider=spec.provider.name, model=spec.model)


def bad_reply_error(spec: AgentSpec, detail: str) -> TransientBackendError:
    return TransientBackendError(
        f"{spec.provider.name}/{spec.model}: unexpected reply from the provider "
        f"({_clip(redact(detail, spec), 200)}); retry, or check base_url points at a "
        "compatible endpoint", provider=spec.provider.name, model=spec.model)


# ---------------------------------------------------------------------------- the backend


@contextmanager
def _api_errors(spec: AgentSpec) -> Iterator[None]:
    """Translate the openai SDK's exceptions; cancellation passes through untouched."""
    import openai

    try:
        yield
    except openai.APIStatusError as e:
        body = e.body if isinstance(e.body, dict) else {}
        detail = body.get("message") or (body.get("error") or {}).get("message") or e.message
        raise status_error(spec, e.status_code, str(detail)) from None
    except openai.APITimeoutError:
        raise timeout_error(spec) from None
    except openai.APIConnectionError as e:
        raise connection_error(spec, str(e.__cause__ or e)) from None
    except openai.OpenAIError as e:
        raise bad_reply_error(spec, str(e)) from None


class OpenAIChatBackend:
    """`Backend` for the Chat Completions wire format."""

    def __init__(self, spec: AgentSpec, **context: Any) -> None:
        import openai

        self.provider = spec.provider.name
        self.model = spec.model
        self._spec = spec
        # Local servers ignore the key, but the SDK refuses to start without one.
        key = spec.api_key.get_secret_value() if spec.api_key else "not-needed"
        common: dict[str, Any] = {
            "api_key": key, "max_retries": spec.backend.max_retries,
            "timeout": spec.backend.request_timeout_seconds,
            "http_client": openai.DefaultAsyncHttpxClient(verify=ssl_context())}
        self._client: openai.AsyncOpenAI
        if spec.provider.name == "azure_openai":
            self._client = openai.AsyncAzureOpenAI(
                azure_endpoint=spec.base_url or "",
                api_version=spec.backend.api_version or AZURE_API_VERSION, **common)
        else:
            self._client = openai.AsyncOpenAI(base_url=spec.base_url, **common)

    async def turn(
        self, messages: list[Message], tools: list[ToolSpec], *, require_tool: bool = False
    ) -> Turn:
        params = self._params(messages, tools, require_tool)
        with _api_errors(self._spec):
            response = await self._client.chat.completions.create(**params)
        if not response.choices:
            raise bad_reply_error(self._spec, "the reply has no choices")
        choice = response.choices[0]
        calls = []
        for tc in choice.message.tool_calls or []:
            function = getattr(tc, "function", None)
            if function is None:  # a non-function (custom) tool call: we offered none
                continue
            args, error = parse_arguments(function.arguments)
            calls.append(ToolCall(tc.id or new_call_id(), function.name, args, error))
        usage = Usage(calls=1)
        if response.usage is not None:
            usage.input_tokens = response.usage.prompt_tokens or 0
            usage.output_tokens = response.usage.completion_tokens or 0
        return Turn(choice.message.content or "", tuple(calls), usage, choice.finish_reason)

    async def aclose(self) -> None:
        await self._client.close()

    def _params(
        self, messages: list[Message], tools: list[ToolSpec], require_tool: bool
    ) -> dict[str, Any]:
        b = self._spec.backend
        params: dict[str, Any] = {"model": self.model, "messages": _wire_messages(messages)}
        if tools:
            params["tools"] = [
                {"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}}
                for t in tools]
            params["tool_choice"] = "required" if require_tool else "auto"
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
        return params


def _wire_messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.content or None}
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
