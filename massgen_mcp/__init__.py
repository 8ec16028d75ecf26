"""massgen-mcp: ask a team of models instead of one."""

__version__ = "0.1.0"
