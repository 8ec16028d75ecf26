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


def test_building_our_server_leaves_logging_alone() -> None:
    """The SDK's `configure_logging` would import rich (when installed: ~18 ms of start-up)
    and put a rich handler at INFO on the root logger of whoever builds our server."""
    import subprocess
    import sys

    script = (
        "import logging, sys, tempfile, pathlib\n"
        "from massgen_mcp.app import App\n"
        "from massgen_mcp.server import build_server\n"
        "d = pathlib.Path(tempfile.mkdtemp())\n"
        "build_server(App(d, cwd=d))\n"
        "root = logging.getLogger()\n"
        "print('rich' in sys.modules, len(root.handlers), logging.getLevelName(root.level))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out == ["False", "0", "WARNING"], out


def test_the_sdk_still_sets_up_logging_outside_the_block() -> None:
    """The skip is scoped: a bare `MCPServer` built afterwards is the SDK's as shipped."""
    import mcp.server.mcpserver.server as built

    before = built.configure_logging
    with sdk_adapter.sdk_logging_left_alone():
        assert built.configure_logging is not before
    assert built.configure_logging is before


def test_overlapping_blocks_keep_the_skip_until_the_last_ends() -> None:
    """Two servers built at once (two threads) open overlapping blocks: the first to end must
    not give the SDK's set-up back to the other's build, nor the last leave it swapped."""
    import mcp.server.mcpserver.server as built

    before = built.configure_logging
    first, second = sdk_adapter.sdk_logging_left_alone(), sdk_adapter.sdk_logging_left_alone()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert built.configure_logging is not before  # the second build is still going
    second.__exit__(None, None, None)
    assert built.configure_logging is before
