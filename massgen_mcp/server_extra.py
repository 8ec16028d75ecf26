"""Plan and checkpoint tools (registered by server.build_server)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from .server import Server


def register(mcp: MCPServer, app: Server) -> None:
    return None
