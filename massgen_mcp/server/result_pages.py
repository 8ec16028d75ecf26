"""A run's resources, readable over HTTP whatever their size: in pages.

The Python SDK client reads a streamable-HTTP reply as SSE events of at most 1 MiB, so a
`resources/read` of a record bigger than that fails on its side (the server sends it whole;
raising a server-side limit would not help, and the request body cap on inputs is another
matter). So when a run's record (`massgen://runs/<id>`) or its events
(`massgen://runs/<id>/events`) are longer than `PAGE_CHARS`, the resource answers with an
index instead, and the text is read page by page:

    massgen://runs/<id>/pages/<n>          page n of the record's JSON text
    massgen://runs/<id>/events/pages/<n>   page n of the events (JSON lines)

Concatenating the pages in order gives the whole text. A page is at most `PAGE_CHARS`
characters: under 1 MiB on the wire even if every character were escaped (`\\uXXXX`).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError

from massgen_mcp.errors import MassgenError

PAGE_CHARS = 100_000


def page_count(text: str) -> int:
    return max(1, -(-len(text) // PAGE_CHARS))


def whole_or_index(uri: str, text: str) -> str:
    """`text` when it fits in one page; otherwise an index of its pages (JSON)."""
    if len(text) <= PAGE_CHARS:
        return text
    pages = page_count(text)
    return json.dumps({
        "paged": True, "resource": uri, "chars": len(text), "page_chars": PAGE_CHARS,
        "pages": [f"{uri}/pages/{n}" for n in range(pages)],
        "how": (f"this resource is {len(text):,} characters, more than an MCP client takes in "
                f"one message over HTTP: read the {pages} pages in order and concatenate "
                "their text")}, indent=1)


def page(text: str, n: str) -> str:
    """Page `n` (a decimal string, from the URI) of `text`."""
    pages = page_count(text)
    if not n.isascii() or not n.isdigit() or int(n) >= pages:
        raise ResourceNotFoundError(f"no page '{n[:20]}': pages are 0 to {pages - 1}")
    start = int(n) * PAGE_CHARS
    return text[start:start + PAGE_CHARS]


def register_result_pages(mcp: MCPServer, record: Callable[[str], str],
                          events: Callable[[str], str]) -> None:
    """The page resources of a run's record and events (`record(run_id)` and
    `events(run_id)` give their whole text)."""

    def text_of(fn: Callable[[str], str], run_id: str) -> str:
        try:
            return fn(run_id)
        except MassgenError as e:
            raise ResourceNotFoundError(str(e)) from None

    @mcp.resource("massgen://runs/{run_id}/pages/{n}", name="run-page", mime_type="text/plain",
                  description="Page n of a run's record (JSON text), for records too large "
                              "to read at once.")
    def record_page(run_id: str, n: str) -> str:
        return page(text_of(record, run_id), n)

    @mcp.resource("massgen://runs/{run_id}/events/pages/{n}", name="run-events-page",
                  mime_type="text/plain",
                  description="Page n of a run's events (JSON lines).")
    def events_page(run_id: str, n: str) -> str:
        return page(text_of(events, run_id), n)
