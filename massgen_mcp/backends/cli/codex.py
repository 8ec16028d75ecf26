"""Codex as a team member: ``codex exec --json``, resumed with ``codex exec resume``.

Each agent gets its own ``CODEX_HOME`` under the run with a ``config.toml`` written here:
the workflow MCP server (``required = true``: the first request waits for its tools;
``default_tools_approval_mode = "approve"``: with ``approval_policy = "never"`` a call would
otherwise be refused), and, with ``base_url``, a custom model provider with
``wire_api = "responses"`` (the built-in provider ignores ``OPENAI_BASE_URL``). Without
``base_url`` / ``api_key`` the user's own login (``~/.codex/auth.json``) is copied in.
Codex retries a refused connection forever, so the turn deadline (``request_timeout_seconds``)
is what stops it. Facts in shared/reference/cli-agents.md.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from massgen_mcp.backends.cli._base import CliBackend, TurnState
from massgen_mcp.errors import PermanentBackendError

KEY_VAR = "MASSGEN_CODEX_API_KEY"
_TOOL_ITEMS = frozenset({"mcp_tool_call", "command_execution", "file_change", "web_search"})


def _toml(value: Any) -> str:
    """A TOML value (JSON's string escapes are valid TOML basic strings)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}"
                                for k, v in value.items()) + " }"
    return json.dumps(str(value))


def native_binary(exe: str) -> str:
    """The Rust binary behind npm's ``codex.js`` wrapper, when it can be found: run directly
    it is one process less, and it dies with its process group like any child."""
    real = Path(os.path.realpath(exe))
    if real.suffix != ".js":
        return exe
    pkg = real.parent.parent  # .../@openai/codex
    for base in (pkg / "node_modules" / "@openai", pkg.parent):
        for found in sorted(base.glob("codex-linux-*/vendor/*/bin/codex")):
            if os.access(found, os.X_OK):
                return str(found)
    return exe


class CodexBackend(CliBackend):
    default_command = "codex"
    display = "Codex"
    install_hint = "install it with `npm install -g @openai/codex`"
    login_hint = ("log in with `codex login`, or give backend.api_key (with base_url for "
                  "another endpoint)")

    def command(self, exe: str, prompt: str, system_text: str, mcp: dict[str, Any],
                resume: str | None) -> tuple[list[str], dict[str, str]]:
        home = self.root / "codex-home"
        home.mkdir(parents=True, exist_ok=True)
        self._write_config(home, mcp)
        if not self.endpoint_mode:
            user_home = self._env.get("CODEX_HOME") or str(Path(self._env.get("HOME", "~"))
                                                            / ".codex")
            auth = Path(user_home).expanduser() / "auth.json"
            if auth.is_file() and not (home / "auth.json").exists():
                shutil.copy2(auth, home / "auth.json")
            if not (home / "auth.json").exists() and self.api_key() is None:
                # Without a login Codex retries its provider until the turn's deadline.
                raise PermanentBackendError(
                    f"Codex is not logged in (no {auth}, no CODEX_API_KEY or OPENAI_API_KEY): "
                    f"{self.login_hint}", provider=self.provider, model=self.model)
        flags = ["--json", "--skip-git-repo-check", "--disable", "plugins"]
        if self.model and self.model != "default":
            flags += ["-m", self.model]
        # Codex has no system-prompt flag for exec: the coordination rules lead the prompt.
        text = self.prompt_arg(f"{system_text}\n\n{prompt}" if not resume else prompt) or "-"
        if resume:
            argv = [native_binary(exe), "exec", "resume", *flags, resume, text]
        else:
            for d in self.snapshot_dirs(prompt):
                flags += ["--add-dir", str(d)]
            argv = [native_binary(exe), "exec", *flags, text]
        extra = {"CODEX_HOME": str(home)}
        key = self.api_key()
        if key is not None and self._spec.base_url:
            extra[KEY_VAR] = key
        return argv, self.child_env(**extra)

    def _write_config(self, home: Path, mcp: dict[str, Any]) -> None:
        o = self.opts
        lines = [f"approval_policy = {_toml(o.approval_policy or 'never')}",
                 f"sandbox_mode = {_toml(o.sandbox_mode or 'workspace-write')}"]
        if self._spec.base_url:
            lines += ['model_provider = "massgen"', "", "[model_providers.massgen]",
                      'name = "massgen"', f"base_url = {_toml(self._spec.base_url)}",
                      'wire_api = "responses"',
                      f"request_max_retries = {o.max_retries}",
                      f"stream_max_retries = {o.max_retries}"]
            if self.api_key() is not None:
                lines.append(f'env_key = "{KEY_VAR}"')
        for name, server in mcp.items():
            lines += ["", f"[mcp_servers.{name}]"]
            if "url" in server:
                lines.append(f"url = {_toml(server['url'])}")
            else:
                lines += [f"command = {_toml(server['command'])}",
                          f"args = {_toml(server.get('args', []))}"]
                if server.get("env"):
                    lines.append(f"env = {_toml(server['env'])}")
            lines.append('default_tools_approval_mode = "approve"')
            if name == "massgen":
                lines.append("required = true")
        (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def on_event(self, event: dict[str, Any], state: TurnState) -> None:
        kind = event.get("type")
        if kind == "thread.started":
            state.session_id = event.get("thread_id") or state.session_id
            self.session_id = state.session_id
        elif kind == "item.completed":
            item = event.get("item") or {}
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                state.text = item["text"]
            elif item.get("type") in _TOOL_ITEMS:
                state.usage.calls += 1  # each tool round trip is one more model request
        elif kind == "turn.completed":
            state.got_result = True
            u = event.get("usage") or {}
            state.usage.input_tokens += int(u.get("input_tokens") or 0)
            state.usage.output_tokens += int(u.get("output_tokens") or 0)
            state.usage.calls += 1
        elif kind in ("turn.failed", "error"):
            err = event.get("error") if kind == "turn.failed" else event
            message = (err or {}).get("message") if isinstance(err, dict) else None
            if message and "reconnecting" not in str(message).lower():
                state.error = str(message)

    def classify(self, error: str) -> str | None:
        low = error.lower()
        if "401" in low or "unauthorized" in low or "login" in low or "api key" in low:
            return self.login_hint
        return None

