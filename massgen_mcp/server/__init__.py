"""The MCP server: tools, resources, prompts and transports.

    host.py        what tool bodies share: team choice, progress, background runs, errors
    tools.py       run tools
    resources.py   run resources, prompts
    catalog.py     what tools/list (templates, prompts) answer before the real ones are built
    write_catalog.py  regenerates catalog.json from the real registration
    result_size.py the compact result clients get by default, and size limits
    tasks.py       MCP Tasks (io.modelcontextprotocol/tasks): long calls answered with a task
    apps.py        the run viewer as an MCP App (io.modelcontextprotocol/ui)
    mode_tools.py  plan and checkpoint tools
    transports.py  stdio, streamable HTTP, SSE; signals
    front_door.py  the one HTTP front door: Host/Origin, who the token is, the viewer mounted
    users.py       --auth-file, tokens, and who sent each MCP request
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import Icon, ToolAnnotations

from massgen_mcp import __version__
from massgen_mcp.app import App
from massgen_mcp.server import catalog
from massgen_mcp.server.host import ToolHost
from massgen_mcp.server.resources import register_index, register_prompts, register_run_resources
from massgen_mcp.server.sdk_adapter import sdk_logging_left_alone
from massgen_mcp.server.users import WhoAsks

if TYPE_CHECKING:
    from mcp.types import CallToolResult

    from massgen_mcp.coordination.result import RunResult

INSTRUCTIONS = (
    "massgen-mcp asks a team of models (different providers) instead of one: each agent "
    "answers, sees the others' anonymized answers, improves or votes, and the most-voted "
    "answer is returned with the votes and reasons. Use run_consensus for hard questions, "
    "decisions and reviews; plan for a validated task plan; checkpoint_init + checkpoint "
    "before risky actions. Runs take minutes: pass wait=false and poll get_run if your "
    "tool-call timeout is short.")


class _Server(MCPServer):
    """Tool descriptions come from docstrings; clients get them without the source's
    indentation (Python 3.11 and 3.12 keep it in `__doc__`)."""

    def add_tool(self, fn: Callable[..., Any], name: str | None = None, title: str | None = None,
                 description: str | None = None, annotations: ToolAnnotations | None = None,
                 icons: list[Icon] | None = None, meta: dict[str, Any] | None = None,
                 structured_output: bool | None = None) -> None:
        text = description or fn.__doc__
        super().add_tool(fn, name, title, inspect.cleandoc(text) if text else None,
                         annotations, icons, meta, structured_output)


def register_tools(mcp: MCPServer, host: ToolHost) -> None:
    """Every tool, built as the SDK builds them (argument models, schemas)."""
    from massgen_mcp.server.mode_tools import register_mode_tools
    from massgen_mcp.server.tools import register_run_tools

    register_run_tools(mcp, host)
    register_mode_tools(mcp, host)


def _render(result: RunResult) -> CallToolResult:
    from massgen_mcp.server.tools import tool_result

    return tool_result(result)


def build_server(app: App, *, tasks: bool = True, catalog_tools: bool = True
                 ) -> tuple[MCPServer, ToolHost]:
    """The MCPServer with every tool, resource and prompt registered, and the MCP Tasks
    extension (server/tasks.py) unless `tasks` is false.

    The tools, resource templates and prompts are listed from the shipped catalog
    (server/catalog.py) and built when one is first needed; `catalog_tools=False` (or a
    catalog that does not fit the installed SDK) builds them now."""
    from massgen_mcp.server.apps import apps_extension
    from massgen_mcp.server.tasks import ListenGuard, TasksExtension

    host = ToolHost(app)
    with sdk_logging_left_alone():  # ours is set up by the caller (transports.serve)
        mcp = _Server(name="massgen-mcp", title="MassGen MCP — ask a team of models",
                      version=__version__, instructions=INSTRUCTIONS,
                      website_url="https://github.com/massgen-mcp/massgen-mcp",
                      extensions=[*([TasksExtension(host, render=_render)] if tasks else []),
                                  apps_extension()],
                      # each request runs as its sender (server/users.py)
                      middleware=[WhoAsks(), *([ListenGuard()] if tasks else [])])
    listed = catalog.load() if catalog_tools else None
    if listed is None or not catalog.defer(
            mcp, listed, tools=lambda: register_tools(mcp, host),
            templates=lambda: register_run_resources(mcp, app),
            prompts=lambda: register_prompts(mcp)):
        register_tools(mcp, host)
        register_run_resources(mcp, app)
        register_prompts(mcp)
    register_index(mcp, app)
    return mcp, host


async def generate_catalog() -> dict[str, list[dict[str, Any]]]:
    """What a server built at start lists (what catalog.json must hold)."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as state:
        mcp, _ = build_server(App(Path(state), cwd=Path(state)), catalog_tools=False)
        return await catalog.listed_by(mcp)
