"""What every page of the viewer shares and the MCP App shell needs too, without the page
renderer: escaping, and the vendored files (style.css, live.js)."""

from __future__ import annotations

from functools import cache
from html import escape
from pathlib import Path


def esc(value: object) -> str:
    return escape(str(value), quote=True)


@cache
def asset(name: str) -> str:
    # Next to this module (the package installs as files; importlib.resources would add
    # its import to the server's start-up for the MCP App's stylesheet).
    return Path(__file__).with_name(name).read_text(encoding="utf-8")
