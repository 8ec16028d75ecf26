"""GitHub Copilot CLI as a team member: ``copilot -p PROMPT --output-format json``.

Observed with ``@github/copilot`` 1.0.102 (``copilot help environment``, and runs against the
loopback scripted provider):

- Headless needs ``--allow-all-tools``; MCP servers come from ``--additional-mcp-config
  @FILE`` (``{"mcpServers": {NAME: {"type": "stdio", "command", "args", "tools": ["*"]}}}``)
  and their tools reach the model as ``NAME-TOOL`` (``massgen-new_answer``);
  ``--disable-builtin-mcps`` keeps GitHub's own servers out.
- Output is JSON lines: ``assistant.message`` (``content``), ``session.error``, and a last
  ``result`` with ``sessionId`` and ``exitCode``. ``--session-id UUID`` names a new session,
  ``--resume ID`` continues it.
- Login: the user's ``copilot login``, or ``COPILOT_GITHUB_TOKEN`` / ``GH_TOKEN`` /
  ``GITHUB_TOKEN`` (`keys.py`). With ``base_url`` (and ``api_key``) it runs on that endpoint
  instead ("BYOK": ``COPILOT_PROVIDER_BASE_URL``, ``COPILOT_PROVIDER_TYPE`` ``openai`` or
  ``anthropic`` (backend.provider_type; by default anthropic when the URL says so),
  ``COPILOT_PROVIDER_API_KEY``, ``COPILOT_OFFLINE=true``: no GitHub login and no other
  network access), with its own HOME and ``COPILOT_HOME`` under the run.
- It has no system-prompt flag: the coordination rules lead a new session's prompt.
"""

from __future__ import annotations

import json
from typing import Any

from massgen_mcp.backends.cli._base import CliBackend, TurnState


class CopilotBackend(CliBackend):
    backend_type = "copilot"
    display = "GitHub Copilot CLI"

    def command(self, exe: str, prompt: str, system_text: str, mcp: dict[str, Any],
                resume: str | None) -> tuple[list[str], dict[str, str]]:
        config = self.root / "copilot-mcp.json"
        config.write_text(json.dumps({"mcpServers": {
            name: ({"type": "http", "url": s["url"], "headers": s.get("headers", {}),
                    "tools": ["*"]} if "url" in s else
                   {"type": "stdio", "command": s["command"], "args": s.get("args", []),
                    **({"env": s["env"]} if s.get("env") else {}), "tools": ["*"]})
            for name, s in mcp.items()}}), encoding="utf-8")
        text = self.prompt_arg(f"{system_text}\n\n{prompt}" if not resume else prompt)
        argv = [exe, "-p", text if text is not None else "Follow the instructions on stdin.",
                "--output-format", "json", "--allow-all-tools", "--disable-builtin-mcps",
                "--disable-client-telemetry", "--additional-mcp-config", f"@{config}"]
        if self.model and self.model != "default":
            argv += ["--model", self.model]
        argv += self.session_args(prompt, resume)
        extra = {"COPILOT_AUTO_UPDATE": "false", "NO_COLOR": "1"}
        if self.endpoint_mode:
            extra["COPILOT_HOME"] = str(self.root / "copilot-home")
        if self._spec.base_url:
            kind = (self._spec.backend.model_extra or {}).get("provider_type")
            extra.update({
                "COPILOT_PROVIDER_BASE_URL": self._spec.base_url, "COPILOT_OFFLINE": "true",
                "COPILOT_PROVIDER_TYPE": str(kind) if kind else (
                    "anthropic" if "anthropic" in self._spec.base_url else "openai")})
            if self.model and self.model != "default":
                extra["COPILOT_MODEL"] = self.model
            if self._spec.api_key is not None:
                extra["COPILOT_PROVIDER_API_KEY"] = self._spec.api_key.get_secret_value()
        return argv, self.child_env(**extra)

    def on_event(self, event: dict[str, Any], state: TurnState) -> None:
        kind = event.get("type")
        raw = event.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if kind == "assistant.message":
            content = data.get("content")
            if isinstance(content, str) and content:
                state.text = content
        elif kind == "model.call_finished":
            state.usage.calls += 1
        elif kind == "session.error":
            state.error = str(data.get("message") or data.get("errorType") or "error")
        elif kind == "result":
            state.got_result = True
            state.session_id = event.get("sessionId") or state.session_id
            code = event.get("exitCode")
            if isinstance(code, int) and code != 0 and not state.error:
                state.error = f"exited with code {code}"

    def classify(self, error: str) -> str | None:
        low = error.lower()
        if "auth" in low or "login" in low or "token" in low or "401" in low:
            return self.login_hint
        return None
