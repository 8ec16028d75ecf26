"""The MCP client's own model, through `sampling/createMessage`.

Few clients support tools in sampling, so tools are described in the system prompt and
the model answers with one JSON object `{"tool": ..., "arguments": {...}}`, which is parsed
back into a tool call. This works with any client that can sample.

Sampling needs a back-channel from server to client: it works on protocol 2025-11-25
(every stdio client and stateful HTTP sessions); a 2026-07-28 client has none mid-call, and
the agent fails with a message that says what to use instead.
"""

from __future__ import annotations

import json
import re
import uuid
import warnings
from typing import TYPE_CHECKING, Any

from massgen_mcp.backends._common import tool_call
from massgen_mcp.backends.lenient_json import loads_lenient
from massgen_mcp.config.team import AgentSpec
from massgen_mcp.errors import PermanentBackendError, TransientBackendError
from massgen_mcp.messages import Message, ToolCall, ToolSpec, Turn, Usage

if TYPE_CHECKING:
    from massgen_mcp.backends import BackendContext

NO_BACK_CHANNEL = (
    "the MCP client cannot answer sampling requests on this connection: protocol 2026-07-28 "
    "has no back-channel during a tool call. Configure provider keys (see list_backends) or "
    "pass models=... / team=... instead, or connect with protocol 2025-11-25")
NO_SAMPLING = (
    "this MCP client does not offer sampling, so models='sampling' cannot run; configure "
    "provider keys (see list_backends) or pass models=... / team=... instead")
_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.S)


def client_can_sample(session: Any) -> bool:
    """True when this client offered sampling and the connection can carry the request."""
    from mcp.types import ClientCapabilities, SamplingCapability

    try:
        offered = session.check_client_capability(
            ClientCapabilities(sampling=SamplingCapability()))
    except Exception:
        return False
    return bool(offered) and bool(getattr(session, "can_send_request", True))


class SamplingBackend:
    def __init__(self, spec: AgentSpec, context: BackendContext | None = None) -> None:
        self.provider = "sampling"
        self.model = spec.model
        self.spec = spec
        self.session = context.session if context else None

    async def turn(self, messages: list[Message], tools: list[ToolSpec]) -> Turn:
        from mcp.shared.exceptions import MCPError
        from mcp.types import SamplingMessage, TextContent

        if self.session is None or not client_can_sample(self.session):
            raise PermanentBackendError(NO_SAMPLING, provider="sampling", model=self.model)
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        system = (system + "\n\n" + tool_protocol(tools)).strip()
        convo = [SamplingMessage(role="assistant" if role == "assistant" else "user",
                                 content=TextContent(type="text", text=text))
                 for role, text in _flatten(messages)]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # sampling is deprecated in 2026-07-28 only
                result = await self.session.create_message(
                    messages=convo, system_prompt=system,
                    max_tokens=self.spec.backend.max_tokens or 8192,
                    temperature=self.spec.backend.temperature)
        except MCPError as e:
            text = str(e)
            if "back-channel" in text.lower() or type(e).__name__ == "NoBackChannelError":
                raise PermanentBackendError(NO_BACK_CHANNEL, provider="sampling",
                                            model=self.model) from None
            raise TransientBackendError(f"sampling request failed: {text}", provider="sampling",
                                        model=self.model) from None
        content = result.content
        blocks = content if isinstance(content, list) else [content]
        text = "".join(getattr(b, "text", "") or "" for b in blocks)
        model = getattr(result, "model", None)
        if model:
            self.model = model
        # Sampling reports no usage: both counts are estimates (about 4 characters a token).
        estimate = sum(len(t) for _, t in _flatten(messages)) // 4
        usage = Usage(input_tokens=estimate, output_tokens=len(text) // 4,
                      estimated_input_tokens=estimate)
        call = parse_text_call(text, {t.name for t in tools})
        return Turn(text=text if call is None else "", tool_calls=(call,) if call else (),
                    usage=usage, stop_reason=getattr(result, "stop_reason", None))

    async def aclose(self) -> None:
        return None


def tool_protocol(tools: list[ToolSpec]) -> str:
    if not tools:
        return ""
    specs = "\n".join(f"- {t.name}: {t.description}\n  arguments (JSON schema): "
                      f"{json.dumps(t.parameters, separators=(',', ':'))}" for t in tools)
    return ("You act by calling a tool. Reply with ONLY one JSON object, no prose around it:\n"
            '{"tool": "<tool name>", "arguments": {...}}\n\nTools:\n' + specs)


def _flatten(messages: list[Message]) -> list[tuple[str, str]]:
    """Non-system messages as alternating user/assistant text (tool traffic as JSON text)."""
    out: list[tuple[str, str]] = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "assistant":
            text = m.content
            for c in m.tool_calls:
                text += ("\n" if text else "") + json.dumps(
                    {"tool": c.name, "arguments": c.arguments})
            role, text = "assistant", text or "(no reply)"
        elif m.role == "tool":
            role = "user"
            text = f"Result of {m.name}{' (error)' if m.is_error else ''}: {m.content}"
        else:
            role, text = "user", m.content
        if out and out[-1][0] == role:
            out[-1] = (role, out[-1][1] + "\n\n" + text)
        else:
            out.append((role, text))
    return out


def parse_text_call(text: str, names: set[str]) -> ToolCall | None:
    """The tool call written as text: `{"tool": ..., "arguments": {...}}` (this backend's
    protocol; `name` / `parameters` spellings are read too, as models without tool calling
    write them), bare, in a code fence, or inside prose; JSON repaired as `lenient_json` does.
    """
    candidates = [m.group(1) for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start:end + 1])
    for raw in candidates:
        try:
            obj, note = loads_lenient(raw)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        name = obj.get("tool", obj.get("name", obj.get("function")))
        if name not in names:
            continue
        args = obj.get("arguments", obj.get("parameters", obj.get("args", {})))
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        if isinstance(args, str):
            return tool_call(call_id, name, args)
        if isinstance(args, dict):
            return ToolCall(call_id, name, args, repaired=note)
        return ToolCall(call_id, name, {}, arguments_error="arguments must be an object")
    return None
