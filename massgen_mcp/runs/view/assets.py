"""What every page of the viewer shares and the MCP App shell needs too, without the page
renderer: escaping, and the vendored files (style.css, live.js)."""

from __future__ import annotations

from functools import cache
from html import escape
from importlib.resources import files


def esc(value: object) -> str:
    return escape(str(value), quote=True)


@cache
def asset(name: str) -> str:
    return (files("massgen_mcp.runs.view") / name).read_text(encoding="utf-8")
