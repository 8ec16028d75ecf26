"""Gemini CLI as a team member: one long-lived ``gemini --acp`` per member (Agent Client
Protocol, `_rpc.py`), one ACP session per run, one ``session/prompt`` per turn.

Observed with 0.61.0 against the loopback scripted provider: ``initialize`` is where the
CLI's start-up goes (3-6 s on 2 cores) and makes no model request; ``session/new`` (0.1-0.2 s)
takes the session's working directory and MCP servers, so one process can serve any run and a
new session has seen nothing of an earlier one; a prompt then costs about what its model
calls cost. MCP tools reach the model as ``mcp_massgen_new_answer``; each call of an MCP
tool asks ``session/request_permission`` ("new_answer (massgen MCP Server)"): calls of the
member's configured servers are allowed (as ``trust: true`` did for ``-p``), any other
request is refused (headless ``-p`` cannot ask either). ``session/set_mode`` sets the
approval mode (``permission_mode``, default ``autoEdit``: edits in the workspace run
unprompted). ACP has no system prompt: the coordination rules lead a new session's first
prompt (as they led ``-p``'s). A failed or timed-out turn stops the process; the next turn
starts a new session with the whole conversation.

Settings (``selectedType: gemini-api-key``, else exit 41; no auto-update, no usage
statistics) go to the agent's own ``~/.gemini`` when it is pointed at an endpoint (its own
HOME under the run), else to the process's working directory's ``.gemini/`` so the user's
login and settings stay in use. ``base_url`` / ``api_key`` become ``GOOGLE_GEMINI_BASE_URL``
/ ``GEMINI_API_KEY``. Facts in shared/reference/cli-agents.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from massgen_mcp.backends.cli._base import TurnState
from massgen_mcp.backends.cli._live import WarmPlan
from massgen_mcp.backends.cli._rpc import RpcCliBackend, RpcClient, obj
from massgen_mcp.errors import PermanentBackendError
from massgen_mcp.messages import Usage

PROTOCOL_VERSION = 1
_MCP_TITLE = re.compile(r"\((?P<server>[^()]+) MCP Server\)\s*$")
# --approval-mode names (the team file's permission_mode) as ACP session modes
MODES = {"default": "default", "auto_edit": "autoEdit", "autoEdit": "autoEdit",
         "yolo": "yolo", "plan": "plan"}


class GeminiCliBackend(RpcCliBackend):
    backend_type = "gemini_cli"
    display = "Gemini CLI"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._servers: list[str] = []  # the MCP servers of the current session

    @property
    def standby_plan(self) -> WarmPlan | None:
        # MCP servers are the session's (started in its directory): own stdio servers are fine.
        return self.first_plan

    def live_command(self, exe: str, system_text: str, mcp: dict[str, Any],
                     resume: str | None) -> tuple[list[str], dict[str, str]]:
        env = self.child_env(GEMINI_CLI_TRUST_WORKSPACE="true", NO_BROWSER="true")
        settings: dict[str, Any] = {
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
        argv = [exe, "--acp", "--skip-trust"]
        if self.model and self.model != "default":
            argv += ["-m", self.model]
        if self._spec.base_url:
            env["GOOGLE_GEMINI_BASE_URL"] = self._spec.base_url
        if key is not None:
            env["GEMINI_API_KEY"] = key
        return argv, env

    def initialize_params(self) -> dict[str, Any]:
        return {"protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False},
                                       "terminal": False}}

    def check(self) -> None:
        self._mode()  # a bad permission_mode fails the agent before anything starts

    async def open(self, rpc: RpcClient, system_text: str, tools_file: Path) -> str:
        servers = []
        for name, s in self.mcp_servers(tools_file).items():
            if "url" in s:
                servers.append({"type": "http", "name": name, "url": s["url"], "headers": [
                    {"name": k, "value": v} for k, v in (s.get("headers") or {}).items()]})
            else:
                servers.append({"name": name, "command": s["command"], "args": s.get("args", []),
                                "env": [{"name": k, "value": v}
                                        for k, v in (s.get("env") or {}).items()]})
        self._servers = [str(s["name"]) for s in servers]
        session = await rpc.request("session/new", {"cwd": str(self.workspace),
                                                    "mcpServers": servers})
        sid = str(session.get("sessionId") or "")
        if not sid:
            raise EOFError("session/new gave no session id")
        self.session_id = sid
        await rpc.request("session/set_mode", {"sessionId": sid, "modeId": MODES[self._mode()]})
        return system_text  # ACP has no system prompt: the rules lead the first prompt

    async def prompt(self, rpc: RpcClient, prompt: str, state: TurnState) -> None:
        text: list[str] = []

        def notify(method: str, params: dict[str, Any]) -> None:
            update = obj(params.get("update"))
            kind = update.get("sessionUpdate")
            if kind == "agent_message_chunk":
                content = obj(update.get("content"))
                if isinstance(content.get("text"), str):
                    text.append(content["text"])
            elif kind in ("tool_call", "tool_call_update"):
                text.clear()  # the turn's text is what it said after its last tool call
                if update.get("status") in ("completed", "failed"):
                    state.usage.calls += 1  # each tool round trip is one more model call

        result = await rpc.request("session/prompt", {
            "sessionId": self.session_id, "prompt": [{"type": "text", "text": prompt}]},
            notify, self._serve)
        state.got_result = True
        state.text = "".join(t for t in text if not t.startswith("[MODE_UPDATE]")).strip()
        tokens = obj(obj(obj(result.get("_meta")).get("quota")).get("token_count"))
        state.usage = Usage(input_tokens=int(tokens.get("input_tokens") or 0),
                            output_tokens=int(tokens.get("output_tokens") or 0),
                            calls=state.usage.calls + 1)
        stop = result.get("stopReason")
        if stop not in ("end_turn", None):
            state.error = f"the turn stopped: {stop}"

    def _mode(self) -> str:
        mode = self.opts.permission_mode or "auto_edit"
        if mode not in MODES:
            raise PermanentBackendError(
                f"{self.display}: permission_mode '{mode}' is not one of "
                f"{', '.join(sorted(MODES))}", provider=self.provider, model=self.model)
        return mode

    def _serve(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The CLI's own requests: a permission for a tool of the member's MCP servers is
        given, any other is refused."""
        if method != "session/request_permission":
            return None
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        found = _MCP_TITLE.search(str(obj(params.get("toolCall")).get("title") or ""))
        ours = found is not None and found.group("server") in self._servers
        kinds = ("allow_once",) if ours else ("reject_once", "reject_always")
        chosen = next((o for o in options if o.get("kind") in kinds), None)
        if chosen is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": chosen.get("optionId")}}

    def classify(self, error: str) -> str | None:
        low = error.lower()
        if "auth" in low or "api key" in low or "401" in low or "login" in low:
            return self.login_hint
        return None
