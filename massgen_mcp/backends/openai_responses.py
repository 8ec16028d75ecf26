"""OpenAI Responses API, for ``type: openai`` (as in MassGen) and Grok (xAI serves the same API).

Nothing is stored at the provider (``store: false``): every request carries the whole
conversation. A reasoning model's reasoning is kept across the tool-call loop by asking for
``reasoning.encrypted_content`` and sending the reply's output items (reasoning, message,
calls, built-in tool calls) back verbatim on the next request through `Turn.provider_data`,
as the API requires. ``reasoning`` (effort, summary) and ``text.verbosity`` map through;
``max_tokens`` becomes ``max_output_tokens``. Usage's output tokens include the reasoning
tokens (the API counts them there); `provider_data["reasoning_tokens"]` says how many.

Retries and timeouts are the SDK's, as in `openai_chat.py`, and errors map the same way
(`_common.stainless_errors`). Built-in tools (web search, code interpreter) come from
`native_tools.py`; their citations and calls are read back into `provider_data["native"]`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from massgen_mcp.backends._common import (
    TOOL_ERROR_PREFIX,
    bad_reply_error,
    count,
    parse_arguments,
)
from massgen_mcp.backends.native_tools import NativeUse, responses_tools
from massgen_mcp.backends.openai_chat import OpenAIClientBackend, openai_errors
from massgen_mcp.messages import Message, ToolCall, ToolSpec, Turn, Usage, new_call_id

_WIRE = "openai_responses"
# Models that reason (and so return reasoning items to keep); others reject the include.
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5|codex|grok-4|grok-3-mini|gpt-oss)", re.IGNORECASE)
_NATIVE_CALLS = {"web_search_call": "web_search", "code_interpreter_call": "code_interpreter"}


class OpenAIResponsesBackend(OpenAIClientBackend):
    """`Backend` for the OpenAI Responses wire format."""

    async def turn(self, messages: list[Message], tools: list[ToolSpec]) -> Turn:
        params = self._params(messages, tools)
        with openai_errors(self._spec):
            response = await self._client.responses.create(**params)
        texts: list[str] = []
        calls: list[ToolCall] = []
        native = NativeUse()
        output = list(response.output or [])
        for item in output:
            if item.type == "message":
                for part in item.content or []:
                    if part.type == "output_text":
                        texts.append(part.text)
                        for a in part.annotations or []:
                            if a.type == "url_citation":
                                native.cite(a.url, a.title)
            elif item.type == "function_call":
                args, error = parse_arguments(item.arguments)
                calls.append(ToolCall(item.call_id or new_call_id(), item.name, args, error))
            elif item.type in _NATIVE_CALLS:
                native.count(_NATIVE_CALLS[item.type])
        usage = Usage(calls=1)
        reasoning_tokens = 0
        if response.usage is not None:
            try:
                usage.input_tokens = count(response.usage.input_tokens)
                usage.output_tokens = count(response.usage.output_tokens)
            except ValueError as e:
                raise bad_reply_error(self._spec, str(e)) from None
            details = response.usage.output_tokens_details
            reasoning_tokens = (details.reasoning_tokens or 0) if details else 0
        data: dict[str, Any] = {
            "wire": _WIRE, "reasoning_tokens": reasoning_tokens,
            # Sent back verbatim next time: reasoning items must precede their calls.
            "output": [i.model_dump(mode="json", exclude_none=True) for i in output]}
        if (used := native.as_data()) is not None:
            data["native"] = used
        stop = "tool_calls" if calls else (response.status or None)
        return Turn("".join(texts), tuple(calls), usage, stop, data)

    def _params(self, messages: list[Message], tools: list[ToolSpec]) -> dict[str, Any]:
        b = self._spec.backend
        system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
        params: dict[str, Any] = {"model": self.model, "input": _wire_input(messages),
                                  "store": False}
        if system:
            params["instructions"] = system
        wire_tools: list[dict[str, Any]] = [
            {"type": "function", "name": t.name, "description": t.description,
             "parameters": t.parameters, "strict": False} for t in tools]
        wire_tools += responses_tools(b, self.provider)
        if wire_tools:
            params["tools"] = wire_tools
            params["tool_choice"] = "auto"
        reasoning = dict(b.reasoning) if isinstance(b.reasoning, dict) else {}
        if b.effort:
            reasoning["effort"] = b.effort
        if reasoning:
            params["reasoning"] = reasoning
        if reasoning or _REASONING_MODEL.match(self.model):
            params["include"] = ["reasoning.encrypted_content"]
        if b.text:
            params["text"] = dict(b.text)
        if b.max_tokens is not None:
            params["max_output_tokens"] = b.max_tokens
        if b.temperature is not None:
            params["temperature"] = b.temperature
        if b.top_p is not None:
            params["top_p"] = b.top_p
        return params


def _wire_input(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            content = m.content
            if m.is_error and not content.startswith(TOOL_ERROR_PREFIX):
                content = TOOL_ERROR_PREFIX + content
            out.append({"type": "function_call_output", "call_id": m.tool_call_id,
                        "output": content})
        elif m.role == "assistant":
            data = m.provider_data
            if isinstance(data, dict) and data.get("wire") == _WIRE:
                out.extend(data["output"])  # verbatim: messages keep id and status
                continue
            if m.content:
                out.append({"role": "assistant", "content": m.content})
            out.extend({"type": "function_call", "call_id": c.id, "name": c.name,
                        "arguments": json.dumps(c.arguments)} for c in m.tool_calls)
        else:
            out.append({"role": "user", "content": m.content})
    return out

