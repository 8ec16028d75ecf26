"""The MCP SDK's private parts we use, all behind `server/sdk_adapter.py`, are still there.

An SDK release that renames a manager or drops a method fails here, naming the part, before
it fails somewhere obscure at start-up (the catalog) or at the end of a stdio session."""

from __future__ import annotations

import ast
from pathlib import Path

from massgen_mcp.server import sdk_adapter

PACKAGE = Path(sdk_adapter.__file__).resolve().parent.parent
PRIVATE_SDK_NAMES = {"_tool_manager", "_resource_manager", "_prompt_manager",
                     "_lowlevel_server", "_resources", "_templates", "_server_instances"}


def test_the_installed_sdk_offers_what_the_adapter_relies_on() -> None:
    assert sdk_adapter.problems() == []


def test_the_adapter_reads_a_real_server() -> None:
    from mcp.server.mcpserver import MCPServer

    mcp = MCPServer(name="t")

    @mcp.resource("massgen://x")
    def x() -> str:
        return "x"

    tools, resources, prompts = sdk_adapter.managers(mcp)
    assert tools.list_tools() == [] and prompts.list_prompts() == []
    static, templates = sdk_adapter.registered_resources(resources)
    assert list(static) == ["massgen://x"] and templates == {}
    assert hasattr(sdk_adapter.lowlevel_server(mcp), "run")


def test_no_other_module_touches_the_sdks_private_parts() -> None:
    """One door: outside the adapter, no attribute of the SDK's private names is read."""
    reaches = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "sdk_adapter.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr in PRIVATE_SDK_NAMES
                    and not (isinstance(node.value, ast.Name) and node.value.id == "self")):
                reaches.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: .{node.attr}")
    assert reaches == [], "go through massgen_mcp/server/sdk_adapter.py:\n" + "\n".join(reaches)
