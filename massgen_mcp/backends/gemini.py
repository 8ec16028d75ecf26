"""Google Gemini through google-genai.

Tools are declared with their raw JSON schema (``parameters_json_schema``) and automatic
function calling is off: the orchestrator runs the tools. Gemini may omit call ids, so ids are
generated (prefixed ``gen_`` and never sent back). A reply whose parts carry thought
signatures is echoed back verbatim through `Turn.provider_data`, as Gemini requires.

Retries: google-genai retries with its own `HttpRetryOptions` (tenacity): `max_retries`
extra attempts on 408, 429, 500, 502, 503, 504 and on connection errors and timeouts, with
exponential backoff and jitter from `retry_initial_delay` up to `retry_max_delay`. It does
*not* read ``Retry-After`` (nor Gemini's ``RetryInfo.retryDelay``).
`request_timeout_seconds` bounds each attempt.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from massgen_mcp.backends._common import (
    bad_reply_error,
    connection_error,
    count,
    reading_reply,
    role_turns,
    ssl_context,
    status_error,
    timeout_error,
    tool_call,
)
from massgen_mcp.backends.native_tools import gemini_tools, read_gemini
from massgen_mcp.messages import Message, ToolCall, ToolSpec, Turn, Usage, new_call_id

if TYPE_CHECKING:
    from massgen_mcp.backends import BackendContext
    from massgen_mcp.config.team import AgentSpec

_WIRE = "gemini"
_GENERATED = "gen_"
_MALFORMED = ("MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL")
# Gemini's finish message quotes the broken call, e.g. "print(default_api.vote(...))".
_API_CALL = re.compile(r"default_api\.([A-Za-z_][A-Za-z0-9_.-]*)\(")
_CALLED_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*)\(")
# Gemini 2.x thinks within a token budget; later models take a level.
_BUDGETS = {"MINIMAL": 128, "LOW": 1024, "MEDIUM": 8192}
_MAX_BUDGET = 24576


def _transport_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeouts, other transport errors) of whichever httpx google-genai is using."""
    timeouts: list[type[BaseException]] = []
    transport: list[type[BaseException]] = []
    for name in ("httpx", "httpx2"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(mod.TimeoutException)
        transport.append(mod.TransportError)
    return tuple(timeouts), tuple(transport)


@contextmanager
def _api_errors(spec: AgentSpec) -> Iterator[None]:
    """Translate google-genai's exceptions; cancellation passes through untouched."""
    import pydantic
    from google.genai import errors

    timeouts, transport = _transport_errors()
    try:
        yield
    except errors.APIError as e:
        status, detail = int(e.code or 0), str(e.message or e.status or "")
        if status == 400 and ("API_KEY_INVALID" in str(e.details) or "API key" in detail):
            status = 401  # Gemini answers a bad key with 400 INVALID_ARGUMENT
        raise status_error(spec, status, detail) from None
    except timeouts:
        raise timeout_error(spec) from None
    except transport as e:
        raise connection_error(spec, str(e)) from None
    except (pydantic.ValidationError, errors.UnknownApiResponseError) as e:
        raise bad_reply_error(spec, str(e).splitlines()[0]) from None
    except (ValueError, TypeError, AttributeError, KeyError) as e:  # a 200 that is not JSON
        raise bad_reply_error(spec, f"{type(e).__name__}: {e}") from None


class GeminiBackend:
    """`Backend` for the Gemini API (google-genai)."""

    #: Backoff of google-genai's retries, in seconds (it ignores Retry-After).
    retry_initial_delay: float = 1.0
    retry_max_delay: float = 60.0

    def __init__(self, spec: AgentSpec, context: BackendContext | None = None) -> None:
        from google import genai
        from google.genai import types

        self.provider = spec.provider.name
        self.model = spec.model
        self._spec = spec
        b = spec.backend
        options = types.HttpOptions(
            base_url=spec.base_url,
            api_version=b.api_version,
            timeout=int(b.request_timeout_seconds * 1000),
            # "ssl" is for its websocket/aiohttp paths, which build a context of their own.
            client_args={"verify": ssl_context()},
            async_client_args={"verify": ssl_context(), "ssl": ssl_context()},
            retry_options=types.HttpRetryOptions(
                attempts=b.max_retries + 1, initial_delay=self.retry_initial_delay,
                max_delay=self.retry_max_delay))
        key = spec.api_key.get_secret_value() if spec.api_key else "not-needed"
        # vertexai=False: never switch endpoints because of GOOGLE_GENAI_USE_VERTEXAI.
        self._client = genai.Client(api_key=key, vertexai=False, http_options=options)

    async def turn(self, messages: list[Message], tools: list[ToolSpec]) -> Turn:
        config = self._config(messages, tools)
        contents = _wire_contents(messages)
        with _api_errors(self._spec):
            response = await self._client.aio.models.generate_content(
                model=self.model, contents=contents, config=config)
        with reading_reply(self._spec):
            return _read_reply(response)

    async def aclose(self) -> None:
        await self._client.aio.aclose()
        self._client.close()

    def _config(self, messages: list[Message], tools: list[ToolSpec]) -> Any:
        from google.genai import types

        b = self._spec.backend
        system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            temperature=b.temperature,
            top_p=b.top_p,
            max_output_tokens=b.max_tokens,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        if tools:
            config.tools = [types.Tool(function_declarations=[
                types.FunctionDeclaration(
                    name=t.name, description=t.description, parameters_json_schema=t.parameters)
                for t in tools])]
            mode = types.FunctionCallingConfigMode
            config.tool_config = types.ToolConfig(function_calling_config=(
                types.FunctionCallingConfig(mode=mode.AUTO)))
        if native := gemini_tools(b):
            config.tools = [*(config.tools or []), *native]
        if b.effort:
            level = b.effort.upper()
            if re.search(r"gemini-[12]\.", self.model):
                config.thinking_config = types.ThinkingConfig(
                    thinking_budget=_BUDGETS.get(level, _MAX_BUDGET))
            else:  # xhigh and max become Gemini's highest level
                config.thinking_config = types.ThinkingConfig(thinking_level=(
                    types.ThinkingLevel[level] if level in types.ThinkingLevel.__members__
                    else types.ThinkingLevel.HIGH))
        return config


def _name(value: Any) -> str | None:
    """An SDK enum (or a plain string) as its name."""
    return None if value is None else str(getattr(value, "value", value))


def _sent_id(call_id: str | None) -> str | None:
    return None if not call_id or call_id.startswith(_GENERATED) else call_id


def _parts(m: Message) -> list[Any]:
    from google.genai import types

    if m.role == "tool":
        key = "error" if m.is_error else "output"
        return [types.Part(function_response=types.FunctionResponse(
            id=_sent_id(m.tool_call_id), name=m.name or "", response={key: m.content}))]
    if m.role == "assistant" and isinstance(m.provider_data, dict) and (
            m.provider_data.get("wire") == _WIRE):
        return [types.Part.model_validate(p) for p in m.provider_data["parts"]]
    parts = [types.Part(text=m.content)] if m.content else []
    if m.role == "assistant":
        parts += [types.Part(function_call=types.FunctionCall(
            id=_sent_id(c.id), name=c.name, args=c.arguments)) for c in m.tool_calls]
    return parts


def _read_reply(response: Any) -> Turn:
    usage = Usage(calls=1)
    meta = response.usage_metadata
    if meta is not None:
        usage.input_tokens = count(meta.prompt_token_count)
        usage.output_tokens = (count(meta.candidates_token_count)
                               + count(meta.thoughts_token_count))
    if not response.candidates:
        feedback = response.prompt_feedback
        reason = feedback.block_reason if feedback is not None else None
        return Turn(usage=usage, stop_reason=f"blocked: {_name(reason)}" if reason else None)
    candidate = response.candidates[0]
    parts = (candidate.content.parts if candidate.content else None) or []
    texts: list[str] = []
    calls: list[ToolCall] = []
    for part in parts:
        if part.text and not part.thought:
            texts.append(part.text)
        if part.function_call is not None:
            fc = part.function_call
            calls.append(tool_call(fc.id or _GENERATED + new_call_id(), fc.name or "", fc.args))
    finish = _name(candidate.finish_reason)
    if finish in _MALFORMED and not calls:
        # The Gemini API (unlike Vertex) gives no finish message, so the name may be lost.
        message = candidate.finish_message or ""
        match = _API_CALL.search(message) or _CALLED_NAME.search(message.partition(":")[2])
        calls.append(ToolCall(
            _GENERATED + new_call_id(), match.group(1) if match else "malformed_function_call",
            arguments_error=f"the function call was malformed ({finish}): "
                            f"{message or 'call the tool again with a JSON object'}"))
    data: dict[str, Any] | None = None
    if any(p.thought_signature for p in parts):
        data = {"wire": _WIRE,
                "parts": [p.model_dump(mode="json", exclude_none=True) for p in parts]}
    if (native := read_gemini(candidate, parts).as_data()) is not None:
        data = {**(data or {}), "native": native}  # grounded searches are billed
    return Turn("".join(texts), tuple(calls), usage, finish, data)



def _wire_contents(messages: list[Message]) -> list[Any]:
    from google.genai import types

    # Gemini wants the answers to one turn's parallel calls in one content.
    return [types.Content(role=role, parts=parts)
            for role, parts in role_turns(messages, "model", _parts)]
