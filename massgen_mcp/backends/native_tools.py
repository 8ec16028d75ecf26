"""Provider-native (server-side) tools from MassGen's keys, per wire format.

``enable_web_search``, ``enable_code_interpreter`` and ``enable_code_execution`` turn on the
tool each provider documents; the provider runs it, so the orchestrator never sees a call:

==========================  ===================================  ============================
key                         request                              what comes back
==========================  ===================================  ============================
OpenAI / Grok (Responses)   ``{"type": "web_search"}``,          ``web_search_call`` items,
                            ``{"type": "code_interpreter",       ``url_citation`` annotations
                            "container": {"type": "auto"}}``
Anthropic                   ``web_search_20250305``,             ``server_tool_use`` blocks,
                            ``code_execution_20250825`` (beta    results, text ``citations``,
                            header ``code-execution-2025-08-25``) ``usage.server_tool_use``
Gemini                      ``{"googleSearch": {}}``,            ``groundingMetadata``
                            ``{"codeExecution": {}}``            chunks, code parts
==========================  ===================================  ============================

What a turn used is `NativeUse`: the sources it cited (url, title) and how many server-side
tool calls it made, by tool, since providers bill those per call. Backends put it in
``Turn.provider_data["native"]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from massgen_mcp.config.team import BackendConfig

ANTHROPIC_WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
ANTHROPIC_CODE_EXECUTION = {"type": "code_execution_20250825", "name": "code_execution"}
ANTHROPIC_CODE_EXECUTION_BETA = "code-execution-2025-08-25"


@dataclass(slots=True)
class NativeUse:
    """What a turn's provider-side tools did: cited sources and calls per tool."""

    sources: list[dict[str, str]] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)

    def cite(self, url: str | None, title: str | None = None) -> None:
        if url and all(s["url"] != url for s in self.sources):
            self.sources.append({"url": url, "title": title or ""})

    def count(self, tool: str, n: int = 1) -> None:
        if n:
            self.calls[tool] = self.calls.get(tool, 0) + n

    def as_data(self) -> dict[str, Any] | None:
        if not self.sources and not self.calls:
            return None
        return {"sources": self.sources, "calls": self.calls}


def responses_tools(b: BackendConfig, provider: str) -> list[dict[str, Any]]:
    """The Responses API's built-in tools for an OpenAI or Grok agent."""
    tools: list[dict[str, Any]] = []
    if b.enable_web_search:
        tools.append({"type": "web_search"})
    if b.enable_code_interpreter or (provider == "grok" and b.enable_code_execution):
        tools.append({"type": "code_interpreter", "container": {"type": "auto"}})
    return tools


def anthropic_tools(b: BackendConfig) -> tuple[list[dict[str, Any]], list[str]]:
    """(server tools, beta headers) for a Claude agent."""
    tools: list[dict[str, Any]] = []
    betas: list[str] = []
    if b.enable_web_search:
        tools.append(dict(ANTHROPIC_WEB_SEARCH))
    if b.enable_code_execution:
        tools.append(dict(ANTHROPIC_CODE_EXECUTION))
        betas.append(ANTHROPIC_CODE_EXECUTION_BETA)
    return tools, betas


def gemini_tools(b: BackendConfig) -> list[Any]:
    """google-genai `Tool`s for Google Search grounding and code execution."""
    from google.genai import types

    tools = []
    if b.enable_web_search:
        tools.append(types.Tool(google_search=types.GoogleSearch()))
    if b.enable_code_execution:
        tools.append(types.Tool(code_execution=types.ToolCodeExecution()))
    return tools


def read_anthropic(content: list[Any], usage: Any) -> NativeUse:
    """Sources and server-tool calls of an Anthropic reply's content blocks."""
    use = NativeUse()
    for block in content:
        kind = getattr(block, "type", "")
        if kind == "server_tool_use":
            use.count(str(getattr(block, "name", "server_tool")))
        elif kind == "web_search_tool_result":
            results = getattr(block, "content", None)
            for r in results if isinstance(results, list) else []:
                use.cite(getattr(r, "url", None), getattr(r, "title", None))
        elif kind == "text":
            for c in getattr(block, "citations", None) or []:
                use.cite(getattr(c, "url", None), getattr(c, "title", None))
    server = getattr(usage, "server_tool_use", None)
    searches = getattr(server, "web_search_requests", None) if server is not None else None
    if searches:  # the billed count wins over the blocks we saw
        use.calls["web_search"] = int(searches)
    return use


def read_gemini(candidate: Any, parts: list[Any]) -> NativeUse:
    """Sources (grounding chunks) and code runs of a Gemini candidate."""
    use = NativeUse()
    meta = getattr(candidate, "grounding_metadata", None)
    if meta is not None:
        for chunk in meta.grounding_chunks or []:
            web = getattr(chunk, "web", None)
            if web is not None:
                use.cite(web.uri, web.title)
        use.count("google_search", len(meta.web_search_queries or []))
    use.count("code_execution", sum(1 for p in parts if getattr(p, "executable_code", None)))
    return use

