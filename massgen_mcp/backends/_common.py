"""What the three wire-format backends share: argument parsing, key redaction, the error
messages (so every backend fails the same way and no message ever carries a key), and the
merging of a conversation into alternating turns."""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from massgen_mcp.backends.lenient_json import loads_lenient
from massgen_mcp.config.providers import provider_for_base_url
from massgen_mcp.errors import BackendError, PermanentBackendError, TransientBackendError
from massgen_mcp.messages import Message, ToolCall
from massgen_mcp.redaction import redact_text, safe_text

if TYPE_CHECKING:
    import ssl

    from massgen_mcp.config.team import AgentSpec

# An Azure API version that accepts everything this backend sends (tools, tool_choice,
# max_completion_tokens, reasoning_effort); backend.api_version overrides it.
AZURE_API_VERSION = "2025-04-01-preview"
# Chat Completions has no error flag on tool results; the model reads this prefix instead.
TOOL_ERROR_PREFIX = "Error: "

@functools.cache
def ssl_context() -> ssl.SSLContext:
    """One TLS context for every client: building one loads the trust store, which takes
    ~0.1 s of blocking CPU, and each SDK client would otherwise build its own."""
    try:  # httpx2 is what the current SDKs use (it honours SSL_CERT_FILE)
        httpx_module = importlib.import_module("httpx2")
    except ImportError:
        httpx_module = importlib.import_module("httpx")
    context: ssl.SSLContext = httpx_module.create_ssl_context()
    return context


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments as a dict, or ``({}, why)`` when they are not a JSON object."""
    call = tool_call("", "", raw)
    return call.arguments, call.arguments_error


def tool_call(call_id: str, name: str, raw: Any) -> ToolCall:
    """A `ToolCall` from the provider's raw arguments, read leniently (`lenient_json`): a
    repaired reading is kept, with what was repaired in `repaired`."""
    if isinstance(raw, dict):
        clean = _encodable(raw)
        return ToolCall(call_id, name, clean,
                        repaired=None if clean == raw else "replaced invalid characters")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return ToolCall(call_id, name)  # a call without arguments
    value, note = raw, None
    if isinstance(raw, str):
        try:
            value, note = loads_lenient(raw)
        except ValueError as e:
            return ToolCall(call_id, name, arguments_error=(
                f"the arguments are not valid JSON ({e}): {_clip(raw, 200)}"))
    if not isinstance(value, dict):
        return ToolCall(call_id, name, arguments_error=(
            f"the arguments must be a JSON object, not {type(value).__name__}: "
            f"{_clip(json.dumps(value, default=str), 200)}"))
    clean = _encodable(value)
    if clean != value:  # a lone surrogate (`"\ud800"`) could be neither replayed nor stored
        value, note = clean, "; ".join(filter(None, [note, "replaced invalid characters"]))
    return ToolCall(call_id, name, value, repaired=note)


def _encodable(value: Any) -> Any:
    """`value` with every string made encodable as UTF-8."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_text(str(k)): _encodable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encodable(v) for v in value]
    return value


#: More tokens than one call can read or write (twice the largest context window offered):
#: a reply claiming more is a bad reply, not spending that would end the run's budget.
MAX_TOKENS_PER_CALL = 20_000_000


Part = TypeVar("Part")


def role_turns(messages: list[Message], assistant: str,
               parts: Callable[[Message], list[Part]]) -> list[tuple[str, list[Part]]]:
    """The conversation as (role, parts) turns for the wires whose roles alternate (Anthropic,
    Gemini): system text goes elsewhere, a message with no parts is dropped, and messages in
    a row from one side (a turn's parallel tool results) are merged into one turn."""
    turns: list[tuple[str, list[Part]]] = []
    for m in messages:
        role = assistant if m.role == "assistant" else "user"
        found = parts(m) if m.role != "system" else []
        if not found:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(found)
        else:
            turns.append((role, found))
    return turns


def count(value: Any) -> int:
    """A token count from a reply: servers send ints, sometimes strings or null. A count no
    call can reach (`1e30`, `inf`) raises ValueError, which the backends report as an
    unexpected reply (that turn fails and is retried)."""
    if isinstance(value, bool):
        return 0
    try:
        n = value if isinstance(value, int) else int(float(str(value)))
    except (TypeError, ValueError):
        return 0
    except OverflowError:  # "inf"
        n = MAX_TOKENS_PER_CALL + 1
    if n > MAX_TOKENS_PER_CALL:
        magnitude = int(n.bit_length() * 0.30103)  # str() of a 5000-digit int raises
        raise ValueError(f"its usage report claims about 10^{magnitude} tokens for one call, "
                         f"more than any model reads or writes ({MAX_TOKENS_PER_CALL:,})")
    return max(n, 0)


def redact(text: str, spec: AgentSpec) -> str:
    """`text` without the agent's API key (whole, encoded or in pieces) or anything shaped
    like a provider key: the one redaction every sink uses."""
    return redact_text(text, [spec.api_key.get_secret_value()] if spec.api_key else [])


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


@contextmanager
def reading_reply(spec: AgentSpec,
                  redact_detail: Callable[[str], str] | None = None) -> Iterator[None]:
    """A 200 whose body is not the reply a reader expects (an HTML page, a list, a null
    message) becomes a transient "unexpected reply" error; `redact_detail` cleans its text."""
    try:
        yield
    except (AttributeError, TypeError, ValueError, KeyError, IndexError) as e:
        detail = f"{type(e).__name__}: {e}"
        raise bad_reply_error(spec, redact_detail(detail) if redact_detail else detail) from None


@contextmanager
def stainless_errors(spec: AgentSpec, sdk: Any, base_error: type[Exception]) -> Iterator[None]:
    """Translate the exceptions of the openai and anthropic SDKs (both generated by Stainless,
    with the same tree); cancellation passes through untouched."""
    try:
        yield
    except sdk.APIStatusError as e:
        body = e.body if isinstance(e.body, dict) else {}
        # anthropic nests the message under "error"; openai's body is the error itself
        detail = (body.get("error") or {}).get("message") or body.get("message") or e.message
        raise status_error(spec, e.status_code, str(detail)) from None
    except sdk.APITimeoutError:
        raise timeout_error(spec) from None
    except sdk.APIConnectionError as e:
        raise connection_error(spec, str(e.__cause__ or e)) from None
    except base_error as e:
        raise bad_reply_error(spec, str(e)) from None
