"""MassGen's command-line tool for API agents: `execute_command` in the agent's own workspace,
every command in the bubblewrap sandbox (`sandbox.py`).

A team file turns it on per agent with ``enable_mcp_command_line: true``. Honoured with it:
``command_line_allowed_commands`` / ``command_line_blocked_commands`` (regular expressions a
command must / must not match at its start), ``command_line_docker_network_mode`` (``none``
by default; ``bridge`` or ``host`` allow the network), ``command_line_timeout`` (seconds per
command). ``command_line_execution_mode: docker`` runs in the same sandbox (no Docker here).
The agent's workspace is a run workspace like a coding agent's: snapshotted with each answer,
the winner's changes written back to writable context paths.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from massgen_mcp.messages import ToolCall, ToolSpec
from massgen_mcp.tools.sandbox import SandboxPolicy, missing, run_sandboxed
from massgen_mcp.tools.stacked import StackedToolbox

TOOL = "execute_command"
MAX_COMMAND_CHARS = 10_000


def shell_enabled(backend: Any) -> bool:
    extra = getattr(backend, "model_extra", None) or {}
    return extra.get("enable_mcp_command_line") is True


def _patterns(value: Any) -> tuple[re.Pattern[str], ...]:
    items = [value] if isinstance(value, str) else list(value or [])
    out = []
    for item in items:
        try:
            out.append(re.compile(str(item)))
        except re.error:
            out.append(re.compile(re.escape(str(item))))
    return tuple(out)


class ShellToolbox:
    """One agent's `execute_command` (a toolbox like the MCP and file ones)."""

    def __init__(self, workspace: Path, extra: Mapping[str, Any]) -> None:
        self.workspace = workspace
        network = str(extra.get("command_line_docker_network_mode") or "none").lower()
        timeout = extra.get("command_line_timeout")
        self.policy = SandboxPolicy(
            network=network in ("bridge", "host"),
            timeout=float(timeout) if isinstance(timeout, int | float) and 0 < timeout <= 3600
            else 60.0)
        self.allowed = _patterns(extra.get("command_line_allowed_commands"))
        self.blocked = _patterns(extra.get("command_line_blocked_commands"))
        self.why_not = missing()
        self.available = self.why_not is None
        self.notes: list[str] = [] if self.available else [f"{TOOL} refused: {self.why_not}"]

    @property
    def tools(self) -> list[ToolSpec]:
        if not self.available:
            return []  # refused (see notes): never an unsandboxed fallback
        net = "with network access" if self.policy.network else "without network access"
        return [ToolSpec(TOOL, (
            f"Run a shell command (sh -c) in your workspace, your current directory: the only "
            f"place you can write. It runs in a sandbox {net}, for at most "
            f"{self.policy.timeout:g} s; stdout and stderr come back with the exit code. "
            "Files you create or change there are part of your answer."),
            {"type": "object", "properties": {"command": {
                "type": "string", "description": "The command line, e.g. `python -m pytest -q`."}},
             "required": ["command"]})]

    def owns(self, name: str) -> bool:
        return name == TOOL

    def refusal(self, command: str) -> str | None:
        """Why the team file's lists refuse `command`, or None. Every command of the line is
        checked (`ls; rm -rf x`, `echo $(rm x)`, `sh -c 'rm x'`: the hook's shell parser finds
        each), as written and by program name (`/bin/rm` is `rm`); a command whose program is
        decided at run time (`$CMD`) is never in the allowed list."""
        if not self.allowed and not self.blocked:
            return None
        texts = [command.strip()]
        try:
            from massgen_mcp.hook.shell import simple_commands

            parsed = simple_commands(command)
        except Exception:  # a line the parser cannot read: judged as a whole, strictly
            parsed = []
            if self.allowed:
                return "this command line could not be read to check the allowed commands"
        for cmd in parsed:
            forms = [" ".join([cmd.raw_program, *cmd.args]), " ".join([cmd.program, *cmd.args])]
            if any(p.match(f) for p in self.blocked for f in [*forms, *texts]):
                return f"`{cmd.raw_program}` is blocked by the team file"
            if self.allowed and (cmd.computed or not any(
                    p.match(f) for p in self.allowed for f in forms)):
                return (f"`{cmd.raw_program}` is not in the allowed commands of the team file "
                        "(every command of a line must be)")
        if any(p.match(t) for p in self.blocked for t in texts):
            return "this command is blocked by the team file"
        if self.allowed and not parsed and not any(p.match(t) for p in self.allowed
                                                   for t in texts):
            return "this command is not in the allowed commands of the team file"
        return None

    async def call(self, call: ToolCall) -> tuple[str, bool]:
        command = call.arguments.get("command") if isinstance(call.arguments, dict) else None
        if not isinstance(command, str) or not command.strip():
            return "command must be a non-empty string", True
        if len(command) > MAX_COMMAND_CHARS:
            return f"command is longer than {MAX_COMMAND_CHARS} characters", True
        if not self.available:
            return f"{TOOL} is not available: {self.why_not}", True
        refused = self.refusal(command)
        if refused is not None:
            return refused, True
        result = await run_sandboxed(command, self.workspace, self.policy)
        return result.text(self.policy), result.exit_code != 0


def with_shell_tools(boxes: dict[str, Any], team: Any, workspaces: Any) -> dict[str, Any]:
    """Every agent whose backend enables the command line gets `execute_command`."""
    if workspaces is None:
        return boxes
    out = dict(boxes)
    for a in team.agents:
        if shell_enabled(a.backend):
            ws = workspaces.dir_for(a.id, (a.backend.model_extra or {}).get("cwd"))
            out[a.id] = StackedToolbox(ShellToolbox(ws, a.backend.model_extra or {}),
                                       boxes.get(a.id))
    return out
