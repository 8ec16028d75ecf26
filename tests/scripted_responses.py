"""The OpenAI Responses API wire format of the scripted provider (``POST /v1/responses``).

`parse` turns a Responses request into the scripted provider's neutral view, `render` turns a
scripted reply into a Responses reply: one JSON ``response`` object, or with ``stream: true``
the server-sent events the real API sends (each with ``type`` and ``sequence_number``):
``response.created``, ``response.in_progress``, per output item ``response.output_item.added``
then ``response.content_part.added`` / ``response.output_text.delta`` / ``.done`` /
``response.content_part.done`` for text, or ``response.function_call_arguments.delta`` /
``.done`` for a call, ``response.output_item.done`` with the whole item, and
``response.completed`` with the whole response and its usage.

Wire notes:

- Input items: messages (``{role, content}`` with or without ``type: message``; content a
  string or ``input_text``/``output_text`` parts), ``function_call``, ``function_call_output``
  and ``reasoning``. The reasoning items a request replays are kept in `replayed_reasoning`
  (and the raw body) so tests can check that a client kept its reasoning across turns.
- Tools: ``{type: function, name, ...}``, and Codex's namespaces
  ``{type: namespace, name: mcp__w, tools: [...]}``, whose tools the neutral view names
  ``mcp__w__new_answer`` (as Claude Code names MCP tools), so one script serves both. A
  scripted `Call` with that flat name is sent back as ``{namespace: mcp__w, name: new_answer}``,
  which is what Codex requires. Other tool types (``web_search``, ``code_interpreter``, ...)
  are not in the neutral tool list; read them from ``raw["tools"]``.
- Reasoning: when the request asks for ``reasoning`` (or includes
  ``reasoning.encrypted_content``), the reply starts with a ``reasoning`` item; its
  ``encrypted_content`` is ``enc:<model>:<call index>`` when that was included. Its tokens are
  reported as ``output_tokens_details.reasoning_tokens``.
- A tool result whose text starts with ``Error:`` is reported as ``is_error`` (the wire has no
  error flag), as with Chat Completions.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scripted_provider import Call

REASONING_TOKENS = 8  # what every scripted reasoning item "costs"


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text(c) for c in content)
    if isinstance(content, dict) and content.get("type") in (
            "input_text", "output_text", "text", "summary_text"):
        return str(content.get("text") or "")
    return ""


def _flat(namespace: str | None, name: str) -> str:
    return f"{namespace}__{name}" if namespace else name


def parse(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """(system text, neutral messages, neutral function tools) of a Responses request."""
    system = [_text(body.get("instructions"))]
    messages: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or []:
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role in ("system", "developer"):
                system.append(_text(item.get("content")))
            else:
                messages.append({"role": "assistant" if role == "assistant" else "user",
                                 "content": _text(item.get("content"))})
        elif kind == "function_call":
            name = _flat(item.get("namespace"), str(item.get("name")))
            names[str(item.get("call_id"))] = name
            call = {"id": item.get("call_id"), "name": name,
                    "arguments": _loads(item.get("arguments"))}
            last = messages[-1] if messages else None
            if last is None or last["role"] != "assistant" or last.get("closed"):
                last = {"role": "assistant", "content": ""}
                messages.append(last)
            last.setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            content = _text(item.get("output"))
            if messages and messages[-1]["role"] == "assistant":
                messages[-1]["closed"] = True
            messages.append({"role": "tool", "content": content,
                             "tool_call_id": item.get("call_id"),
                             "name": names.get(str(item.get("call_id"))),
                             "is_error": content.startswith("Error:")})
    for m in messages:
        m.pop("closed", None)
    return "\n".join(s for s in system if s), messages, _tools(body.get("tools") or [])


def _tools(tools: list[dict[str, Any]], namespace: str | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for t in tools:
        if t.get("type") == "namespace":
            out += _tools(t.get("tools") or [], t.get("name"))
        elif t.get("type") == "function":
            out.append({"name": _flat(namespace, str(t.get("name"))),
                        "description": t.get("description", ""),
                        "parameters": t.get("parameters") or {}})
    return out


def replayed_reasoning(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The reasoning items a request sends back (empty when the input is a string)."""
    items = body.get("input")
    return [i for i in items if i.get("type") == "reasoning"] if isinstance(items, list) else []


def _loads(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _namespaces(tools: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """Flat tool name -> (namespace, name) for every namespaced tool offered."""
    return {_flat(t.get("name"), str(f.get("name"))): (str(t.get("name")), str(f.get("name")))
            for t in tools if t.get("type") == "namespace" for f in t.get("tools") or []}


def output_items(body: dict[str, Any], model: str, call_index: int, text: str,
                 calls: list[Call], ids: list[int],
                 annotations: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The output items of a reply: reasoning (when asked for), the message, the calls."""
    items: list[dict[str, Any]] = []
    include = body.get("include") or []
    if body.get("reasoning") or "reasoning.encrypted_content" in include:
        item: dict[str, Any] = {"id": f"rs_{model}_{call_index}", "type": "reasoning",
                                "summary": []}
        if "reasoning.encrypted_content" in include:
            item["encrypted_content"] = f"enc:{model}:{call_index}"
        items.append(item)
    if text:
        items.append({"id": f"msg_{call_index}_{len(items)}", "type": "message",
                      "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": text,
                                   "annotations": annotations or [], "logprobs": []}]})
    spaces = _namespaces(body.get("tools") or [])
    for c, i in zip(calls, ids, strict=True):
        args = c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments)
        call: dict[str, Any] = {"id": f"fc_{i}", "type": "function_call", "status": "completed",
                                "call_id": f"call_{i}", "name": c.name, "arguments": args}
        if c.name in spaces:
            call["namespace"], call["name"] = spaces[c.name]
        items.append(call)
    return items


def response_object(body: dict[str, Any], model: str, response_id: str,
                    items: list[dict[str, Any]], usage: tuple[int, int],
                    status: str = "completed") -> dict[str, Any]:
    """A whole ``response`` object (the non-streaming reply, and the lifecycle events')."""
    reasoning = REASONING_TOKENS if any(i["type"] == "reasoning" for i in items) else 0
    done = status == "completed"
    return {
        "id": response_id, "object": "response", "created_at": int(time.time()),
        "status": status, "model": model, "output": items if done else [],
        "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
        "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools") or [],
        "store": body.get("store", True), "error": None, "incomplete_details": None,
        "usage": {"input_tokens": usage[0], "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": usage[1] + reasoning,
                  "output_tokens_details": {"reasoning_tokens": reasoning},
                  "total_tokens": sum(usage) + reasoning} if done else None,
    }


def sse(response: dict[str, Any], extra_events: Callable[[int, dict[str, Any]],
                                                         list[dict[str, Any]]] | None = None
        ) -> Iterator[str]:
    """The server-sent events that stream `response` (a completed response object).

    `extra_events(output_index, item)` may add events for an item between its ``added`` and
    ``done`` events (e.g. ``response.web_search_call.completed``).
    """
    pending = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": pending},
        {"type": "response.in_progress", "response": pending}]
    for n, item in enumerate(response["output"]):
        events += _item_events(n, item)
        if extra_events is not None:
            events[-1:-1] = extra_events(n, item)
    events.append({"type": "response.completed", "response": response})
    for seq, event in enumerate(events):
        yield f"event: {event['type']}\ndata: {json.dumps({**event, 'sequence_number': seq})}\n\n"


def _item_events(n: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    where = {"output_index": n, "item_id": item["id"]}
    if item["type"] == "message":
        started = {**item, "status": "in_progress", "content": []}
        events: list[dict[str, Any]] = [
            {"type": "response.output_item.added", "output_index": n, "item": started}]
        for k, part in enumerate(item["content"]):
            at = {**where, "content_index": k}
            text = part["text"]
            events += [
                {"type": "response.content_part.added", **at,
                 "part": {**part, "text": "", "annotations": []}},
                *({"type": "response.output_text.delta", **at, "delta": chunk, "logprobs": []}
                  for chunk in _chunks(text)),
                {"type": "response.output_text.done", **at, "text": text, "logprobs": []},
                {"type": "response.content_part.done", **at, "part": part}]
        return [*events, {"type": "response.output_item.done", "output_index": n, "item": item}]
    if item["type"] == "function_call":
        started = {**item, "status": "in_progress", "arguments": ""}
        return [
            {"type": "response.output_item.added", "output_index": n, "item": started},
            *({"type": "response.function_call_arguments.delta", **where, "delta": chunk}
              for chunk in _chunks(item["arguments"])),
            {"type": "response.function_call_arguments.done", **where,
             "name": item["name"], "arguments": item["arguments"]},
            {"type": "response.output_item.done", "output_index": n, "item": item}]
    started = {**item, "status": "in_progress"} if "status" in item else item
    return [{"type": "response.output_item.added", "output_index": n, "item": started},
            {"type": "response.output_item.done", "output_index": n, "item": item}]


def _chunks(text: str, size: int = 16) -> list[str]:
    """Deltas as a real stream sends them: several pieces, none when there is no text."""
    return [text[i:i + size] for i in range(0, len(text), size)]
