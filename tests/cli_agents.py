"""Helpers for tests that run the real coding-agent CLIs against the scripted provider."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripted_provider import (
    TEST_KEY,
    Call,
    Reply,
    ScriptedProvider,
    ScriptRequest,
    Text,
    ToolCalls,
)
from tiers import require_node_bin

BIN = Path(__file__).parent / "js" / "node_modules" / ".bin"
ACK_REPLY = "Done."


def cli_path(name: str) -> str:
    """The pinned CLI (the npm tier, bash .ci/npm-setup.sh): skips locally without it, fails
    under CI."""
    return str(require_node_bin(name))


def cli_env(**extra: str) -> dict[str, str]:
    """The server environment for a CLI run: PATH with the pinned Node first, no keys."""
    path = f"{BIN}:{os.environ.get('PATH', os.defpath)}"
    return {"PATH": path, "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8", **extra}


def _short(name: str) -> str:
    """A workflow tool's own name, without the CLI's MCP prefix (Claude Code and Codex:
    ``mcp__massgen__vote``; Gemini CLI: ``mcp_massgen_vote``)."""
    return re.sub(r"^mcp_{1,2}massgen_{1,2}", "", name)


def cli_agent(inner: Callable[[ScriptRequest], Reply]) -> Callable[[ScriptRequest], Reply]:
    """Play an API-agent script through a CLI: tools are seen by their short names
    (``mcp__massgen__vote`` or ``mcp_massgen_vote`` → ``vote``), calls go out by the CLI's
    names, and the CLI's follow-up request after a workflow call gets a short text reply (its
    turn then ends)."""

    def script(req: ScriptRequest) -> Reply:
        if req.messages and req.messages[-1]["role"] == "tool" and any(
                _short(str(r["name"])) in ("new_answer", "vote") for r in req.tool_results[-1:]):
            return Text(ACK_REPLY)
        full = {_short(n): n for n in req.tool_names}
        view = dataclasses.replace(req, tools=[{**t, "name": _short(t["name"])}
                                               for t in req.tools])
        reply = inner(view)
        if isinstance(reply, ToolCalls):
            return ToolCalls([Call(full.get(c.name, c.name), c.arguments) for c in reply.calls],
                             reply.text)
        return reply

    return script


def claude_backend(provider: ScriptedProvider, model: str, **fields: Any) -> dict[str, Any]:
    return {"type": "claude_code", "model": model, "base_url": provider.anthropic_base_url,
            "api_key": TEST_KEY, "command": cli_path("claude"), "max_retries": 0,
            "request_timeout_seconds": 60, **fields}


def leftover_processes(marker: str) -> list[str]:
    """Command lines of live processes that mention `marker` (a run directory)."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if marker in cmd or marker in cwd:
            out.append(f"{proc.name}: {cmd[:200]}")
    return out


def have(name: str) -> bool:
    return (BIN / name).exists() or shutil.which(name) is not None


def codex_backend(provider: ScriptedProvider, model: str, **fields: Any) -> dict[str, Any]:
    return {"type": "codex", "model": model, "base_url": provider.openai_base_url,
            "api_key": TEST_KEY, "command": cli_path("codex"), "max_retries": 0,
            "request_timeout_seconds": 60, **fields}


def gemini_backend(provider: ScriptedProvider, model: str, **fields: Any) -> dict[str, Any]:
    return {"type": "gemini_cli", "model": model, "base_url": provider.gemini_base_url,
            "api_key": TEST_KEY, "command": cli_path("gemini"), "max_retries": 0,
            "request_timeout_seconds": 90, **fields}


def no_leftovers(marker: str, timeout: float = 5.0) -> list[str]:
    """`leftover_processes(marker)` once they had `timeout` to exit (a killed CLI's MCP server
    exits on its own when it sees its parent gone, within ~0.2 s)."""
    deadline = time.monotonic() + timeout
    while (found := leftover_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)  # polling the process table: there is no event to wait on
    return found
