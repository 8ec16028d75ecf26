"""Claude Code as a team member: ``claude -p --output-format stream-json``.

One invocation per turn, resumed across turns (``--session-id`` first, ``--resume`` after).
The workflow tools reach it as ``mcp__massgen__new_answer`` / ``mcp__massgen__vote`` through
``--mcp-config`` (``--strict-mcp-config``: the user's own MCP servers are not mixed in), and
are pre-approved with ``--allowedTools``. ``base_url`` / ``api_key`` become
``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY`` with a HOME of its own under the run (so no
user hooks, plugins or login are mixed in). Not ``--bare``: in 2.1.332 bare mode offers only
Bash, Edit and Read whatever ``--tools`` says, which would drop the file's Write, WebSearch,
...; a key in ``-p`` mode is used without it. Without them Claude Code uses the user's own
login, or ``ANTHROPIC_API_KEY`` from the server's environment (`keys.py`). Facts in
shared/reference/cli-agents.md.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from massgen_mcp.backends.cli._base import SERVER_NAME, TurnState
from massgen_mcp.backends.cli._live import StreamingCliBackend
from massgen_mcp.messages import Usage

DEFAULT_PERMISSION_MODE = "acceptEdits"  # file edits in its workspace; shell needs allowing


class ClaudeCodeBackend(StreamingCliBackend):
    can_move = True  # the set_cwd control request (see move_requests)
    backend_type = "claude_code"
    display = "Claude Code"

    def live_command(self, exe: str, system_text: str, mcp: dict[str, Any],
                     resume: str | None) -> tuple[list[str], dict[str, str]]:
        return self.command(exe, "", system_text, mcp, resume, live=True)

    def user_message(self, prompt: str) -> dict[str, Any]:
        return {"type": "user", "session_id": self.session_id or "",
                "message": {"role": "user", "content": [{"type": "text", "text": prompt}]},
                "parent_tool_use_id": None}

    def move_requests(self, workspace: Path, dirs: list[Path]) -> list[dict[str, Any]]:
        """``set_cwd`` (2.1.332, "the headless twin of /cd"; before the first turn the
        session starts as if launched there) and the snapshot directories as
        ``--add-dir`` would give them (``permissions.additionalDirectories`` in the flag
        settings layer). The workspace is one the server made for this run: trusting it is
        what ``-p`` does for the directory it is started in."""
        path = os.path.realpath(workspace)
        out: list[dict[str, Any]] = [{"subtype": "set_cwd", "path": path,
                                      "trust_accepted": True, "trusted_directory": path}]
        if dirs:
            out.append({"subtype": "apply_flag_settings", "settings": {"permissions": {
                "additionalDirectories": [str(d) for d in dirs]}}})
        return out

    def moved(self, request: dict[str, Any], response: dict[str, Any]) -> bool:
        if response.get("subtype") != "success":
            return False
        if request["subtype"] != "set_cwd":
            return True
        body = response.get("response") or {}
        return body.get("status") == "ok" and body.get("cwd") == request["path"]

    def command(self, exe: str, prompt: str, system_text: str, mcp: dict[str, Any],
                resume: str | None, live: bool = False) -> tuple[list[str], dict[str, str]]:
        o = self.opts
        config = self.root / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {
            name: {"type": "stdio", **s} if "url" not in s else s for name, s in mcp.items()}}),
            encoding="utf-8")
        allowed = [f"mcp__{SERVER_NAME}", *(f"mcp__{n}" for n in mcp if n != SERVER_NAME),
                   *o.allowed_tools]
        arg = None if live else self.prompt_arg(prompt)
        argv = [exe, "-p", *([arg] if arg is not None else []),
                *(["--input-format", "stream-json"] if live else []),
                "--output-format", "stream-json", "--verbose",
                "--mcp-config", str(config), "--strict-mcp-config",
                "--permission-mode", o.permission_mode or DEFAULT_PERMISSION_MODE,
                "--allowedTools", ",".join(allowed)]
        if o.system_prompt:
            argv += ["--system-prompt", o.system_prompt]
        argv += ["--append-system-prompt", system_text]
        if o.disallowed_tools:
            argv += ["--disallowedTools", ",".join(o.disallowed_tools)]
        if self.model and self.model != "default":
            argv += ["--model", self.model]
        if o.max_turns:
            argv += ["--max-turns", str(o.max_turns)]
        argv += self.session_args(prompt, resume)
        extra = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                 # wait for the MCP servers before the first model request (else the tools
                 # may not exist yet), see the reference
                 "MCP_CONNECTION_NONBLOCKING": "0", "MCP_CONNECT_TIMEOUT_MS": "30000",
                 # outside --bare, 2.1.332 hides MCP tools behind its ToolSearch tool: the
                 # workflow tools must be offered as they are
                 "ENABLE_TOOL_SEARCH": "false",
                 # a member's session is the run's, not a memory kept in the user's HOME
                 "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
                 "CLAUDE_CODE_MAX_RETRIES": str(o.max_retries)}
        if self._spec.base_url:
            extra["ANTHROPIC_BASE_URL"] = self._spec.base_url
        if self._spec.api_key is not None:
            extra["ANTHROPIC_API_KEY"] = self._spec.api_key.get_secret_value()
        return argv, self.child_env(**extra)

    def on_event(self, event: dict[str, Any], state: TurnState) -> None:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            state.session_id = event.get("session_id") or state.session_id
            for s in event.get("mcp_servers") or []:
                if s.get("name") == SERVER_NAME and s.get("status") not in ("connected", None):
                    state.error = (f"the massgen workflow MCP server did not connect "
                                   f"({s.get('status')})")
        elif kind == "result":
            state.got_result = True
            state.session_id = event.get("session_id") or state.session_id
            u = event.get("usage") or {}
            state.usage = Usage(
                input_tokens=int(u.get("input_tokens") or 0)
                + int(u.get("cache_read_input_tokens") or 0)
                + int(u.get("cache_creation_input_tokens") or 0),
                output_tokens=int(u.get("output_tokens") or 0),
                calls=int(event.get("num_turns") or 1))
            result = event.get("result")
            state.text = result if isinstance(result, str) else ""
            if event.get("is_error") or event.get("subtype") != "success":
                state.error = state.text or str(event.get("subtype") or "error")

    def classify(self, error: str) -> str | None:
        low = error.lower()
        if "login" in low or "api key" in low or "authentication" in low or "401" in low:
            return self.login_hint
        if "max turns" in low or "error_max_turns" in low:
            return "raise backend.max_turns"
        return None
