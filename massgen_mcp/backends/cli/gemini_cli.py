"""Gemini CLI as a team member: ``gemini -p PROMPT --output-format stream-json``.

The workflow MCP server goes into a ``settings.json`` (``trust: true``, so its calls need no
confirmation): the agent's own ``~/.gemini`` when it is pointed at an endpoint (its own HOME
under the run, with ``selectedType: gemini-api-key``, else exit 41), else the workspace's
``.gemini/`` so the user's login and settings stay in use. ``--skip-trust`` (else exit 55).
``base_url`` / ``api_key`` become ``GOOGLE_GEMINI_BASE_URL`` / ``GEMINI_API_KEY``. Sessions:
``--session-id`` first, ``--resume latest`` after (each agent has its own project dir).
Facts in shared/reference/cli-agents.md; observed here with MCP (0.61.0): MCP tools reach the
model as ``mcp_massgen_new_answer`` (single underscores); the first request waited for the
server's tools (no start-up race seen); with ``trust: true`` and ``--approval-mode auto_edit``
the calls run unprompted; a call by the bare name is answered "Tool not found"; one
streamGenerateContent SSE chunk per reply is enough; start-up is slow (~10 s to the first
request at load 6 on 2 cores).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from massgen_mcp.backends.cli._base import CliBackend, TurnState
from massgen_mcp.messages import Usage


class GeminiCliBackend(CliBackend):
    default_command = "gemini"
    display = "Gemini CLI"
    install_hint = "install it with `npm install -g @google/gemini-cli`"
    login_hint = ("log in by running `gemini` once, or give backend.api_key (with base_url "
                  "for another endpoint)")

    def command(self, exe: str, prompt: str, system_text: str, mcp: dict[str, Any],
                resume: str | None) -> tuple[list[str], dict[str, str]]:
        env = self.child_env(GEMINI_CLI_TRUST_WORKSPACE="true", NO_BROWSER="true")
        settings: dict[str, Any] = {
            "mcpServers": {name: {**s, "trust": True} if "url" not in s else
                           {"httpUrl": s["url"], "headers": s.get("headers", {}), "trust": True}
                           for name, s in mcp.items()},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            "privacy": {"usageStatisticsEnabled": False}}
        key = self.api_key()
        if self.endpoint_mode or key is not None:
            # a key (the file's, or GEMINI_API_KEY from the environment) is only read with
            # this auth type selected
            settings["security"] = {"auth": {"selectedType": "gemini-api-key"}}
        where = (Path(env["HOME"]) if self.endpoint_mode else self.workspace) / ".gemini"
        where.mkdir(parents=True, exist_ok=True)
        (where / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        text = self.prompt_arg(f"{system_text}\n\n{prompt}" if not resume else prompt) or (
            "Follow the instructions above.")  # -p text is appended to what stdin holds
        argv = [exe, "-p", text, "--output-format", "stream-json", "--skip-trust",
                "--approval-mode", self.opts.permission_mode or "auto_edit"]
        if self.model and self.model != "default":
            argv += ["-m", self.model]
        for d in self.snapshot_dirs(prompt):
            argv += ["--include-directories", str(d)]
        if resume:
            argv += ["--resume", "latest"]
        else:
            self.session_id = str(uuid.uuid4())
            argv += ["--session-id", self.session_id]
        if self._spec.base_url:
            env["GOOGLE_GEMINI_BASE_URL"] = self._spec.base_url
        if key is not None:
            env["GEMINI_API_KEY"] = key
        return argv, env

    def on_event(self, event: dict[str, Any], state: TurnState) -> None:
        kind = event.get("type")
        if kind == "init":
            state.session_id = event.get("session_id") or state.session_id
        elif kind == "message" and event.get("role") == "assistant":
            content = event.get("content")
            if isinstance(content, str):
                state.text = state.text + content if event.get("delta") else content
        elif kind == "result":
            state.got_result = True
            stats = event.get("stats") or {}
            state.usage = Usage(input_tokens=int(stats.get("input_tokens") or 0),
                                output_tokens=int(stats.get("output_tokens") or 0),
                                calls=1 + int(stats.get("tool_calls") or 0))
            if event.get("status") not in (None, "success"):
                err = event.get("error")
                state.error = (err.get("message") if isinstance(err, dict) else None) or str(
                    event.get("status"))
        elif kind == "error":
            message = event.get("message")
            if event.get("severity") != "warning" and message:
                state.error = str(message)

    def classify(self, error: str) -> str | None:
        low = error.lower()
        if "auth" in low or "api key" in low or "401" in low or "login" in low:
            return self.login_hint
        return None
