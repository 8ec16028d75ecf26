"""Every private part of the MCP SDK this package touches, in one place.

Two things the SDK's public API does not offer, and what we reach for instead:

- **Lazy registration.** `MCPServer` keeps its tools, resource templates and prompts in three
  managers (`_tool_manager`, `_resource_manager`, `_prompt_manager`) and builds each tool's
  schemas at `@tool()` time. The catalog (`catalog.py`) answers the `*/list` requests from a
  shipped file and builds the real registrations on first use, so it swaps those managers for
  subclasses and reads the static resources already registered (`_resources`,
  `_templates`). What would make this public: an `MCPServer(tool_manager=...)` argument, or a
  `list_tools` hook that a server can answer before registering anything.
- **The stdio stream.** `run_stdio_async()` gives no way to see the end of stdin before the
  session does (the server marks live runs `interrupted` there), so `transports.py` drives the
  low-level server (`_lowlevel_server`) itself. What would make this public: an `on_close`
  callback on `run_stdio_async`, or the low-level server as a public attribute.
- **The open sessions.** The HTTP front door caps the MCP sessions one user holds, so it needs
  to know which are still open (the session manager forgets idle and closed ones in
  `_server_instances`). What would make this public: a per-principal `max_sessions`, or a
  read-only view of the open session ids.
- **The SDK's logging set-up.** `MCPServer()` calls `configure_logging` (module
  `mcp.server.mcpserver.server`), which imports `rich` when it is installed (about 18 ms of a
  start-up) and asks `logging.basicConfig` for a rich handler at INFO on the root logger.
  `massgen-mcp` sets up its own logging first (stderr, the operator's `--log-level`), so that
  call changes nothing but the time; a server embedded in someone's program must not take over
  their root logger either. `sdk_logging_left_alone()` skips it while our server is built.
  What would make this public: an `MCPServer(configure_logging=False)` argument.

`pyproject.toml` pins the SDK to the minor release these were checked against, and
`tests/server/test_sdk_adapter.py` fails, naming the part, when an SDK release changes any of them:
`problems()` is what it asserts on.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mcp.server.lowlevel import Server
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.prompts.manager import PromptManager
    from mcp.server.mcpserver.resources import ResourceManager
    from mcp.server.mcpserver.tools import ToolManager

#: The SDK release line this adapter was checked against (pyproject.toml pins `mcp>=2.3,<2.4`).
SDK_MINOR = (2, 3)


def managers(mcp: MCPServer) -> tuple[ToolManager, ResourceManager, PromptManager]:
    """The server's tool, resource and prompt managers."""
    return mcp._tool_manager, mcp._resource_manager, mcp._prompt_manager


def replace_managers(mcp: MCPServer, tools: ToolManager, resources: ResourceManager,
                     prompts: PromptManager) -> None:
    """Put our managers in place of the server's (the SDK reads these on every request)."""
    mcp._tool_manager = tools
    mcp._resource_manager = resources
    mcp._prompt_manager = prompts


def registered_resources(manager: ResourceManager) -> tuple[dict[str, Any], dict[str, Any]]:
    """Copies of the static resources and templates already registered with `manager`."""
    return dict(manager._resources), dict(manager._templates)


def lowlevel_server(mcp: MCPServer) -> Server[Any]:
    """The low-level server under `mcp` (for running a session on our own streams)."""
    return mcp._lowlevel_server


def open_sessions(mcp: MCPServer) -> set[str]:
    """The ids of the streamable-HTTP sessions still open (after `streamable_http_app()`)."""
    return set(mcp.session_manager._server_instances)


@contextlib.contextmanager
def sdk_logging_left_alone() -> Iterator[None]:
    """While an `MCPServer` is built in this block, it leaves logging as it is (see the module
    docstring). The swap is of a module global, so it is counted: blocks that overlap (two
    servers built in two threads) keep it until the last one ends, then the SDK's own
    function is back."""
    import mcp.server.mcpserver.server as built

    global _left_alone_blocks, _sdk_configure_logging
    with _left_alone_lock:
        if _left_alone_blocks == 0:
            _sdk_configure_logging = built.configure_logging
            built.configure_logging = _logging_left_alone
        _left_alone_blocks += 1
    try:
        yield
    finally:
        with _left_alone_lock:
            _left_alone_blocks -= 1
            if _left_alone_blocks == 0:
                built.configure_logging = _sdk_configure_logging


_left_alone_lock = threading.Lock()
_left_alone_blocks = 0  # blocks of sdk_logging_left_alone() open now, in any thread
_sdk_configure_logging: Any = None  # the SDK's function, while it is swapped out


def _logging_left_alone(*_: Any, **__: Any) -> None:
    return None


def problems() -> list[str]:
    """What the installed SDK no longer offers of what this module relies on (empty: all)."""
    from importlib.metadata import version

    from mcp.server.lowlevel import Server
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.prompts.manager import PromptManager
    from mcp.server.mcpserver.resources import ResourceManager
    from mcp.server.mcpserver.tools import ToolManager

    found: list[str] = []
    mcp = MCPServer(name="adapter-check")
    wanted: list[tuple[str, Any, type]] = [
        ("MCPServer._tool_manager", getattr(mcp, "_tool_manager", None), ToolManager),
        ("MCPServer._resource_manager", getattr(mcp, "_resource_manager", None),
         ResourceManager),
        ("MCPServer._prompt_manager", getattr(mcp, "_prompt_manager", None), PromptManager),
        ("MCPServer._lowlevel_server", getattr(mcp, "_lowlevel_server", None), Server),
    ]
    found += [f"{name} is {type(value).__name__}, not {kind.__name__}"
              for name, value, kind in wanted if not isinstance(value, kind)]
    mcp.streamable_http_app()
    if not isinstance(getattr(mcp.session_manager, "_server_instances", None), dict):
        found.append("StreamableHTTPSessionManager._server_instances is not a dict")
    resources = getattr(mcp, "_resource_manager", None)
    for attr in ("_resources", "_templates"):
        if not isinstance(getattr(resources, attr, None), dict):
            found.append(f"ResourceManager.{attr} is not a dict")
    for cls, methods in ((ToolManager, ("list_tools", "get_tool", "remove_tool")),
                         (ResourceManager, ("list_templates", "get_resource")),
                         (PromptManager, ("list_prompts", "get_prompt", "remove_prompt"))):
        found += [f"{cls.__name__}.{m} is gone" for m in methods if not hasattr(cls, m)]
    import mcp.server.mcpserver.server as built

    if not callable(getattr(built, "configure_logging", None)):
        found.append("mcp.server.mcpserver.server.configure_logging is gone")
    installed = version("mcp")
    if tuple(int(p) for p in installed.split(".")[:2]) != SDK_MINOR:
        found.append(f"mcp {installed} is not the checked release line "
                     f"{'.'.join(map(str, SDK_MINOR))}.x")
    return found
