"""Anthropic Messages streaming (SSE) for the scripted provider, as Claude Code reads it.

Claude Code only ever asks for ``stream: true``; it falls back to a non-streaming request when
the stream is malformed, so the event order matters (shared reference cli-agents.md):
``message_start`` → per block ``content_block_start`` / ``content_block_delta`` /
``content_block_stop`` → ``message_delta`` (stop_reason, output tokens) → ``message_stop``.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import StreamingResponse


def _event(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def anthropic_stream(model: str, message_id: str, text: str,
                     calls: list[tuple[str, str, Any]], usage: tuple[int, int]
                     ) -> StreamingResponse:
    """One streamed reply: `text`, then `calls` as (tool_use id, name, input value)."""
    events = [_event("message_start", {"type": "message_start", "message": {
        "id": message_id, "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": usage[0], "output_tokens": 1}}})]
    index = 0
    if text:
        events += [
            _event("content_block_start", {"type": "content_block_start", "index": index,
                                           "content_block": {"type": "text", "text": ""}}),
            _event("content_block_delta", {"type": "content_block_delta", "index": index,
                                           "delta": {"type": "text_delta", "text": text}}),
            _event("content_block_stop", {"type": "content_block_stop", "index": index})]
        index += 1
    for call_id, name, value in calls:
        events += [
            _event("content_block_start", {"type": "content_block_start", "index": index,
                                           "content_block": {"type": "tool_use", "id": call_id,
                                                             "name": name, "input": {}}}),
            _event("content_block_delta", {"type": "content_block_delta", "index": index,
                                           "delta": {"type": "input_json_delta",
                                                     "partial_json": json.dumps(value)}}),
            _event("content_block_stop", {"type": "content_block_stop", "index": index})]
        index += 1
    events += [
        _event("message_delta", {"type": "message_delta",
                                 "delta": {"stop_reason": "tool_use" if calls else "end_turn",
                                           "stop_sequence": None},
                                 "usage": {"output_tokens": usage[1]}}),
        _event("message_stop", {"type": "message_stop"})]
    return StreamingResponse(iter(events), media_type="text/event-stream")
