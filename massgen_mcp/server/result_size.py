"""Tool results that every SDK client can receive.

The Python SDK client reads a streamable-HTTP response as SSE events of at most 1 MiB; a
bigger result is lost to it (the call then fails on the client's side, and the run's
answer with it). A result is therefore kept under `MAX_RESULT_BYTES`: long strings in it
are shortened (the structure, and so the output schema, stay intact) and a link to the
run's resource, where the whole result is, is added.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.types import CallToolResult, ResourceLink, TextContent

# The text and the structured copy travel in one JSON-RPC message, with escaping on top.
MAX_RESULT_BYTES = 700_000
_MIN_CLIP = 200


def _size(text: str, structured: Any) -> int:
    return len(text.encode()) + len(json.dumps(structured, ensure_ascii=False).encode())


def _clip(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]} […{len(value) - limit:,} more characters: see the resource]"
    if isinstance(value, dict):
        return {k: _clip(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip(v, limit) for v in value]
    return value


def fit_result(text: str, structured: dict[str, Any], uri: str, where: str,
               budget: int = MAX_RESULT_BYTES) -> CallToolResult:
    """A `CallToolResult` of `text` and `structured`, shortened to fit `budget` when needed,
    with a link to `uri` (the full result) and `where` (its file) when it was shortened."""
    if _size(text, structured) <= budget:
        return CallToolResult(content=[TextContent(type="text", text=text)],
                              structured_content=structured)
    limit = budget
    clipped_text, clipped = text, structured
    while limit > _MIN_CLIP and _size(clipped_text, clipped) > budget // 2:
        limit //= 2
        clipped_text, clipped = _clip(text, limit), _clip(structured, limit)
    note = (f"\n\n[This result was shortened to fit what MCP clients accept; the full result "
            f"is the resource {uri} and the file {where}.]")
    return CallToolResult(
        content=[TextContent(type="text", text=clipped_text + note),
                 ResourceLink(type="resource_link", uri=uri, name="full result",
                              mime_type="application/json")],
        structured_content=clipped)
