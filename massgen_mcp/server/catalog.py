"""The tool list the server answers before its tools are built, from a file it ships.

Building the tools at start (a pydantic model of each tool's arguments, the JSON schemas of
its arguments and result) and importing every model those results are made of was most of
what the server added to the MCP SDK's own start-up. So `tools/list` is answered from
`catalog.json`, next to this module: the `tools/list` entries exactly as the SDK generates
them from the real registration. The real tools are built the first time one is needed (a
`tools/call`, or anything that asks the tool manager for a tool), and from then on the
server is the one the SDK built.

The file is generated, never edited: `python -m massgen_mcp.server.write_catalog` rewrites it, and
`tests/test_catalog.py` regenerates it and compares (a stale file fails the tests). It is
used only with the pydantic and MCP SDK versions it was generated with (their schema output
may change between versions); with others, or without the file, the tools are built at
start as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.tools import Tool, ToolManager

CATALOG = Path(__file__).with_name("catalog.json")


def versions() -> dict[str, str]:
    """What the SDK's schema output depends on besides our code."""
    from importlib.metadata import version

    import pydantic

    return {"mcp": version("mcp"), "pydantic": pydantic.VERSION}


def load(path: Path = CATALOG) -> list[dict[str, Any]] | None:
    """The stored `tools/list` entries, or None when they may not match what the installed
    SDK would generate (no file, another version of pydantic or the SDK)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("versions") != versions():
        return None
    tools = data.get("tools")
    return tools if isinstance(tools, list) else None


def entries(tools: list[Any]) -> list[dict[str, Any]]:
    """`tools/list` entries (`mcp.types.Tool`) as JSON data, as they go on the wire."""
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]


def render(tools: list[dict[str, Any]]) -> str:
    return json.dumps({"versions": versions(), "tools": tools}, indent=1,
                      ensure_ascii=False) + "\n"


def _not_built(*_: Any, **__: Any) -> Any:  # never called: get_tool builds the real tools
    raise RuntimeError("a listed tool was called before the tools were built")


def _listed(entry: dict[str, Any]) -> Tool:
    """A tool as `MCPServer.list_tools` reads it (name, title, description, schemas,
    annotations, icons, meta), without its argument model: it is never run."""
    tool = Tool.model_construct(
        fn=_not_built, name=entry["name"], title=entry.get("title"),
        description=entry.get("description", ""), parameters=entry["inputSchema"],
        is_async=True, context_kwarg=None, annotations=entry.get("annotations"),
        icons=entry.get("icons"), meta=entry.get("_meta"), resolved_params={},
        resolver_plans={})
    tool.__dict__["output_schema"] = entry.get("outputSchema")  # a cached_property of Tool
    return tool


class LazyTools(ToolManager):
    """The SDK's tool manager, listing the catalog's tools until a real one is needed;
    then `build()` registers the real tools (through the server, as at start) and this is
    a plain `ToolManager`."""

    def __init__(self, listed: list[dict[str, Any]], build: Callable[[], None], *,
                 warn_on_duplicate_tools: bool = True) -> None:
        super().__init__(warn_on_duplicate_tools)
        self._listed: list[Tool] | None = [_listed(e) for e in listed]
        self._build = build

    @property
    def built(self) -> bool:
        return self._listed is None

    def build(self) -> None:
        if self._listed is not None:
            self._listed = None  # first: build() registers through add_tool
            self._build()

    def list_tools(self) -> list[Tool]:
        if self._listed is not None:
            return [*self._listed, *self._tools.values()]
        return super().list_tools()

    def get_tool(self, name: str) -> Tool | None:
        self.build()
        return super().get_tool(name)

    def remove_tool(self, name: str) -> None:
        self.build()
        super().remove_tool(name)
