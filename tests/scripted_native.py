"""Provider-native web search results in each wire format, for the scripted provider.

When a test sets `ScriptedProvider.web_sources` to ``[(url, title), ...]`` and a request
offers the provider's own search tool, the reply carries that search the way the provider
reports it: Responses ``web_search_call`` items and ``url_citation`` annotations, Anthropic
``server_tool_use`` / ``web_search_tool_result`` blocks, text ``citations`` and
``usage.server_tool_use``, Gemini ``groundingMetadata``.
"""

from __future__ import annotations

from typing import Any

Sources = list[tuple[str, str]]
QUERY = "scripted search"


def offered(wire: str, body: dict[str, Any]) -> bool:
    """Whether the request turned on the provider's native web search."""
    tools = body.get("tools") or []
    if wire == "responses":
        return any(t.get("type") == "web_search" for t in tools)
    if wire == "anthropic":
        return any(str(t.get("type", "")).startswith("web_search_") for t in tools)
    if wire == "gemini":
        return any("googleSearch" in t for t in tools)
    return False


def responses_search(sources: Sources, text: str, n: int) -> tuple[dict[str, Any], str,
                                                                   list[dict[str, Any]]]:
    """(web_search_call item, message text, url_citation annotations)."""
    item = {"id": f"ws_{n}", "type": "web_search_call", "status": "completed",
            "action": {"type": "search", "query": QUERY}}
    text = text or "Searched the web."
    annotations = [{"type": "url_citation", "url": url, "title": title, "start_index": 0,
                    "end_index": len(text)} for url, title in sources]
    return item, text, annotations


def anthropic_search(sources: Sources, text: str, n: int) -> list[dict[str, Any]]:
    """The server tool call, its results and a cited text block."""
    use_id = f"srvtoolu_{n:06d}"
    return [
        {"type": "server_tool_use", "id": use_id, "name": "web_search",
         "input": {"query": QUERY}},
        {"type": "web_search_tool_result", "tool_use_id": use_id, "content": [
            {"type": "web_search_result", "url": url, "title": title,
             "encrypted_content": "enc", "page_age": None} for url, title in sources]},
        {"type": "text", "text": text or "Searched the web.", "citations": [
            {"type": "web_search_result_location", "url": url, "title": title,
             "cited_text": title, "encrypted_index": "idx"} for url, title in sources]},
    ]


ANTHROPIC_USAGE = {"server_tool_use": {"web_search_requests": 1}}


def gemini_grounding(sources: Sources) -> dict[str, Any]:
    return {"webSearchQueries": [QUERY],
            "groundingChunks": [{"web": {"uri": url, "title": title}} for url, title in sources]}
