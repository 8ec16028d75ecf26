"""Coding-agent CLIs as team members: Claude Code, Codex and Gemini CLI, run headless.

Each turn runs the real CLI in the agent's own workspace; the coordination tools reach it
through a small MCP server massgen-mcp runs for it (`massgen_mcp.tools.workflow_server`).
"""

from __future__ import annotations

from massgen_mcp.config.providers import CODING_CLI_WIRES as CLI_WIRES

__all__ = ["CLI_WIRES"]
