"""What the server lists before it builds its tools, from a file it ships.

Building the tools at start (a pydantic model of each tool's arguments, the JSON schemas of
its arguments and result), the resource templates and the prompts, and importing every model
those results are made of, was most of what the server added to the MCP SDK's own start-up.
So `tools/list`, `resources/templates/list` and `prompts/list` are answered from
`catalog.json`, next to this module: their entries exactly as the SDK generates them from the
real registration. The real tools (templates, prompts) are built the first time one is
needed (a `tools/call`, a `resources/read` of a template's URI, a `prompts/get`), and from
then on that part of the server is the one the SDK built. Static resources (the runs index,
the viewer App) are registered at start: they cost nothing.

The file is generated, never edited: `python -m massgen_mcp.server.write_catalog` rewrites it,
and `tests/server/test_startup.py` regenerates it and compares (a stale file fails the tests). It is
used only with the pydantic and MCP SDK versions it was generated with (their schema output
may change between versions); with others, or without the file, everything is built at start
as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver.prompts.base import Prompt, PromptArgument
from mcp.server.mcpserver.prompts.manager import PromptManager
from mcp.server.mcpserver.resources import ResourceManager, ResourceTemplate
from mcp.server.mcpserver.tools import Tool, ToolManager

from massgen_mcp.server.sdk_adapter import managers, registered_resources, replace_managers

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

CATALOG = Path(__file__).with_name("catalog.json")
#: What the catalog lists: the key of each `*/list` result's entries in catalog.json.
PARTS = ("tools", "resourceTemplates", "prompts")


def versions() -> dict[str, str]:
    """What the SDK's schema output depends on besides our code."""
    import pydantic

    return {"mcp": _sdk_version(), "pydantic": pydantic.VERSION}


def _sdk_version() -> str:
    """The MCP SDK's version, from the name of its dist-info directory next to it when there
    is one: `importlib.metadata` searches every entry of sys.path, a few ms of a start-up."""
    import os

    import mcp

    found = [name for name in os.listdir(Path(mcp.__file__).parents[1])
             if name.startswith("mcp-") and name.endswith(".dist-info")]
    if len(found) == 1:
        return found[0].removeprefix("mcp-").removesuffix(".dist-info")
    from importlib.metadata import version

    return version("mcp")


def load(path: Path = CATALOG) -> dict[str, list[dict[str, Any]]] | None:
    """The stored list entries by part (PARTS), or None when they may not match what the
    installed SDK would generate (no file, another version of pydantic or the SDK)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("versions") != versions():
        return None
    parts = {part: data.get(part) for part in PARTS}
    return parts if all(isinstance(v, list) for v in parts.values()) else None  # type: ignore[return-value]


def entries(items: list[Any]) -> list[dict[str, Any]]:
    """List entries (`mcp.types.Tool`, `ResourceTemplate`, `Prompt`) as JSON data, as they
    go on the wire."""
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in items]


async def listed_by(mcp: MCPServer) -> dict[str, list[dict[str, Any]]]:
    """What `mcp` lists, by part: what catalog.json holds for a server built at start."""
    return {"tools": entries(await mcp.list_tools()),
            "resourceTemplates": entries(await mcp.list_resource_templates()),
            "prompts": entries(await mcp.list_prompts())}


def render(parts: dict[str, list[dict[str, Any]]]) -> str:
    return json.dumps({"versions": versions(), **{p: parts[p] for p in PARTS}}, indent=1,
                      ensure_ascii=False) + "\n"


def _not_built(*_: Any, **__: Any) -> Any:  # never called: a lookup builds the real ones
    raise RuntimeError("a listed entry was used before the real ones were built")


def _tool(entry: dict[str, Any]) -> Tool:
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


def _template(entry: dict[str, Any]) -> ResourceTemplate:
    return ResourceTemplate.model_construct(
        fn=_not_built, uri_template=entry["uriTemplate"], name=entry["name"],
        title=entry.get("title"), description=entry.get("description"),
        mime_type=entry.get("mimeType"), icons=entry.get("icons"),
        annotations=entry.get("annotations"), meta=entry.get("_meta"), parameters={},
        context_kwarg=None)


def _prompt(entry: dict[str, Any]) -> Prompt:
    arguments = entry.get("arguments")
    return Prompt.model_construct(
        fn=_not_built, name=entry["name"], title=entry.get("title"),
        description=entry.get("description"), icons=entry.get("icons"), context_kwarg=None,
        arguments=None if arguments is None else [
            PromptArgument.model_construct(name=a["name"], description=a.get("description"),
                                           required=a.get("required", False))
            for a in arguments])


class _Deferred:
    """Listed from the catalog until `build()` registers the real entries (through the
    server, as at start)."""

    def __init__(self, listed: list[Any], build: Callable[[], None]) -> None:
        self._listed: list[Any] | None = listed
        self._build = build

    @property
    def built(self) -> bool:
        return self._listed is None

    def build(self) -> None:
        listed = self._listed
        if listed is not None:
            self._listed = None  # first: the build registers through the manager
            try:
                self._build()
            except BaseException:
                self._listed = listed  # still listed; the next lookup tries again
                raise


class LazyTools(_Deferred, ToolManager):
    """The SDK's tool manager, listing the catalog's tools until a real one is needed."""

    def __init__(self, listed: list[dict[str, Any]], build: Callable[[], None], *,
                 warn_on_duplicate_tools: bool = True) -> None:
        ToolManager.__init__(self, warn_on_duplicate_tools)
        _Deferred.__init__(self, [_tool(e) for e in listed], build)

    def list_tools(self) -> list[Tool]:
        return list(self._listed) if self._listed is not None else super().list_tools()

    def get_tool(self, name: str) -> Tool | None:
        self.build()
        return super().get_tool(name)

    def remove_tool(self, name: str) -> None:
        self.build()
        super().remove_tool(name)


class LazyTemplates(_Deferred, ResourceManager):
    """The SDK's resource manager with its static resources, listing the catalog's templates
    until a URI no static resource has is read."""

    def __init__(self, listed: list[dict[str, Any]], build: Callable[[], None],
                 resources: ResourceManager) -> None:
        ResourceManager.__init__(self, resources.warn_on_duplicate_resources)
        _Deferred.__init__(self, [_template(e) for e in listed], build)
        # An extension's (the viewer App), registered before the swap.
        self._resources, self._templates = registered_resources(resources)

    def list_templates(self) -> list[ResourceTemplate]:
        if self._listed is not None:
            return [*self._templates.values(), *self._listed]
        return super().list_templates()

    async def get_resource(self, uri: Any, context: Any) -> Any:
        if str(uri) not in self._resources:
            self.build()
        return await super().get_resource(uri, context)


class LazyPrompts(_Deferred, PromptManager):
    """The SDK's prompt manager, listing the catalog's prompts until one is asked for."""

    def __init__(self, listed: list[dict[str, Any]], build: Callable[[], None], *,
                 warn_on_duplicate_prompts: bool = True) -> None:
        PromptManager.__init__(self, warn_on_duplicate_prompts)
        _Deferred.__init__(self, [_prompt(e) for e in listed], build)

    def list_prompts(self) -> list[Prompt]:
        return list(self._listed) if self._listed is not None else super().list_prompts()

    def get_prompt(self, name: str) -> Prompt | None:
        self.build()
        return super().get_prompt(name)

    def remove_prompt(self, name: str) -> None:
        self.build()
        super().remove_prompt(name)


def defer(mcp: MCPServer, listed: dict[str, list[dict[str, Any]]], *,
          tools: Callable[[], None], templates: Callable[[], None],
          prompts: Callable[[], None]) -> bool:
    """List `mcp`'s tools, resource templates and prompts from `listed` (load()) and build
    each part with its function when first needed. False (nothing deferred) when the server
    has some already (an extension's): the catalog holds only ours."""
    tool_manager, resource_manager, prompt_manager = managers(mcp)
    if (tool_manager.list_tools() or resource_manager.list_templates()
            or prompt_manager.list_prompts()):
        return False
    settings = mcp.settings
    replace_managers(
        mcp,
        LazyTools(listed["tools"], tools, warn_on_duplicate_tools=settings.warn_on_duplicate_tools),
        LazyTemplates(listed["resourceTemplates"], templates, resource_manager),
        LazyPrompts(listed["prompts"], prompts,
                    warn_on_duplicate_prompts=settings.warn_on_duplicate_prompts))
    return True
