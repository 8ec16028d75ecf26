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

import pytest
from scripted_provider import (
    TEST_KEY,
    Call,
    Reply,
    ScriptedProvider,
    ScriptRequest,
    Text,
    ToolCalls,
)

BIN = Path(__file__).parent / "js" / "node_modules" / ".bin"
ACK_REPLY = "Done."


def cli_path(name: str) -> str:
    """The pinned CLI (bash .ci/npm-setup.sh installs it); the test is skipped without it."""
    path = BIN / name
    if not path.exists():
        pytest.skip(f"{name} is not installed: run bash .ci/npm-setup.sh")
    return str(path)


def cli_env(**extra: str) -> dict[str, str]:
    """The server environment for a CLI run: PATH with the pinned Node first, no keys."""
    path = f"{BIN}:{os.environ.get('PATH', os.defpath)}"
    return {"PATH": path, "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8", **extra}


def _short(name: str) -> str:
    """A workflow tool's own name, without the CLI's MCP prefix (Claude Code and Codex:
    ``mcp__massgen__vote``; Gemini CLI: ``mcp_massgen_vote``; Copilot CLI:
    ``massgen-vote``)."""
    return re.sub(r"^(?:mcp_{1,2}massgen_{1,2}|massgen-)", "", name)


# Claude Code (outside --bare) adds a user message describing its environment after the prompt.
_CLI_CONTEXT = ("# Environment\nYou have been invoked",)
_LABELS = re.compile(r"\b(agent\d+)\.\d+\b")


def _tool_view(req: ScriptRequest, tool: dict[str, Any]) -> dict[str, Any]:
    """A CLI's tool as the API agent sees it: its short name, and for a long-lived CLI's
    `vote` (listed without the enum of labels, which changes every round) the labels the
    prompt shows, as the orchestrator offers them to an API agent."""
    tool = {**tool, "name": _short(tool["name"])}
    params = tool.get("parameters") or {}
    prop = (params.get("properties") or {}).get("agent_id")
    if tool["name"] == "vote" and isinstance(prop, dict) and "enum" not in prop:
        labels = sorted(set(_LABELS.findall(req.last_user_text)))
        tool["parameters"] = {**params, "properties": {
            **params["properties"], "agent_id": {**prop, "enum": labels}}}
    return tool


def cli_agent(inner: Callable[[ScriptRequest], Reply]) -> Callable[[ScriptRequest], Reply]:
    """Play an API-agent script through a CLI: tools are seen by their short names
    (``mcp__massgen__vote`` or ``mcp_massgen_vote`` → ``vote``), calls go out by the CLI's
    names, and the CLI's follow-up request after a workflow call gets a short text reply (its
    turn then ends). The CLI's own context messages come first in the script's view (so that
    `last_user_text` is the prompt)."""

    def script(req: ScriptRequest) -> Reply:
        if req.messages and req.messages[-1]["role"] == "tool" and any(
                _short(str(r["name"])) in ("new_answer", "vote") for r in req.tool_results[-1:]):
            return Text(ACK_REPLY)
        full = {_short(n): n for n in req.tool_names}
        context = [m for m in req.messages if m["role"] == "user" and str(
            m.get("content") or "").startswith(_CLI_CONTEXT)]
        req = dataclasses.replace(req, messages=context + [
            m for m in req.messages if not any(m is c for c in context)])
        view = dataclasses.replace(req, tools=[_tool_view(req, t) for t in req.tools])
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


def copilot_backend(provider: ScriptedProvider, model: str, **fields: Any) -> dict[str, Any]:
    """GitHub Copilot CLI on the scripted provider's Anthropic wire ("BYOK", no GitHub login)."""
    return {"type": "copilot", "model": model, "base_url": provider.anthropic_base_url,
            "api_key": TEST_KEY, "command": cli_path("copilot"), "max_retries": 0,
            "provider_type": "anthropic", "request_timeout_seconds": 120, **fields}
