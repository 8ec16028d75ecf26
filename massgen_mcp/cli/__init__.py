"""The `massgen-mcp` command."""

from massgen_mcp.cli.main import main

__all__ = ["main"]
