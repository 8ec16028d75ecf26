"""Codex as a team member: one long-lived ``codex app-server`` per member (JSON-RPC on its
stdio, `_rpc.py`), a thread per run, a turn per turn.

Observed with 0.171.0 against the loopback scripted provider: ``initialize`` (then the
``initialized`` notification) takes ~0.5 s and makes no model request; ``thread/start`` takes
the run's working directory, the model and ``developerInstructions`` (the coordination rules,
as a developer message); ``turn/start`` answers at once and the turn ends with a
``turn/completed`` notification (``item/completed`` carries the agent's messages and tool
calls, ``thread/tokenUsage/updated`` the usage). MCP servers are the process's (its
``config.toml``), so a standby fits a run only with the same workflow tools, and a member with
stdio MCP servers of its own is not kept warm (they start in the process's directory). Any
approval the server asks for is declined (``approval_policy = "never"`` asks none). A failed
or timed-out turn stops the process; the next turn starts a new thread with the whole
conversation.

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

from massgen_mcp.backends.cli._base import TurnState
from massgen_mcp.backends.cli._rpc import RpcCliBackend, RpcClient, obj
from massgen_mcp.errors import PermanentBackendError
from massgen_mcp.messages import Usage

KEY_VAR = "MASSGEN_CODEX_API_KEY"
_TOOL_ITEMS = frozenset({"mcpToolCall", "commandExecution", "fileChange", "webSearch"})


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


class CodexBackend(RpcCliBackend):
    backend_type = "codex"
    display = "Codex"

    def live_command(self, exe: str, system_text: str, mcp: dict[str, Any],
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
        argv = [native_binary(exe), "app-server", "--disable", "plugins"]
        extra = {"CODEX_HOME": str(home)}
        key = self.api_key()
        if key is not None and self._spec.base_url:
            extra[KEY_VAR] = key
        return argv, self.child_env(**extra)

    def initialize_params(self) -> dict[str, Any]:
        return {"clientInfo": {"name": "massgen-mcp", "version": "1"}}

    async def initialized(self, rpc: RpcClient) -> None:
        await rpc.notify("initialized")

    def fits(self, tools_file: Path) -> bool:
        # The workflow server is the process's: it lists what it was started with.
        plan = self._warm_plan
        return plan is not None and plan.listing == tools_file.read_text(encoding="utf-8")

    async def open(self, rpc: RpcClient, system_text: str, tools_file: Path) -> str:
        params: dict[str, Any] = {"cwd": str(self.workspace),
                                  "developerInstructions": system_text}
        if self.model and self.model != "default":
            params["model"] = self.model
        thread = obj((await rpc.request("thread/start", params)).get("thread"))
        tid = str(thread.get("id") or "")
        if not tid:
            raise EOFError("thread/start gave no thread id")
        self.session_id = tid
        return ""

    async def prompt(self, rpc: RpcClient, prompt: str, state: TurnState) -> None:
        done: list[dict[str, Any]] = []
        tokens = Usage()

        def notify(method: str, params: dict[str, Any]) -> None:
            if method == "item/completed":
                item = obj(params.get("item"))
                if item.get("type") == "agentMessage" and isinstance(item.get("text"), str):
                    state.text = item["text"]
                elif item.get("type") in _TOOL_ITEMS:
                    state.usage.calls += 1  # each tool round trip is one more model request
            elif method == "thread/tokenUsage/updated":
                last = obj(obj(params.get("tokenUsage")).get("last"))
                tokens.input_tokens += int(last.get("inputTokens") or 0)
                tokens.output_tokens += int(last.get("outputTokens") or 0)
            elif method == "turn/completed":
                done.append(obj(params.get("turn")))
            elif method == "error":
                err = obj(params.get("error"))
                if not params.get("willRetry") and err.get("message"):
                    state.error = str(err["message"])

        await rpc.request("turn/start", {"threadId": self.session_id, "input": [
            {"type": "text", "text": prompt}]}, notify, self._serve)
        if not done:
            await rpc.wait(None, notify, self._serve, done=lambda: bool(done))
        turn = done[0]
        state.got_result = True
        state.usage = Usage(input_tokens=tokens.input_tokens, output_tokens=tokens.output_tokens,
                            calls=state.usage.calls + 1)
        if turn.get("status") not in ("completed", None):
            state.error = str(obj(turn.get("error")).get("message") or state.error
                              or f"the turn ended {turn.get('status')}")

    def _serve(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The server's own requests: approvals are declined (the config asks for none)."""
        if method.endswith("requestApproval"):
            return {"decision": "decline"}
        return None

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

    def classify(self, error: str) -> str | None:
        low = error.lower()
        if "401" in low or "unauthorized" in low or "login" in low or "api key" in low:
            return self.login_hint
        return None

