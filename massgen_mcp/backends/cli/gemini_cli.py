"""Gemini CLI as a team member: one long-lived ``gemini --acp`` per member (Agent Client
Protocol, `_acp.py`), one ACP session per run, one ``session/prompt`` per turn.

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

import contextlib
import json
import re
from pathlib import Path
from typing import Any

import anyio

from massgen_mcp.backends.cli._acp import AcpClient, AcpError, obj
from massgen_mcp.backends.cli._base import TurnState
from massgen_mcp.backends.cli._live import NEW_SYSTEM, StreamingCliBackend, WarmPlan
from massgen_mcp.errors import PermanentBackendError, TransientBackendError
from massgen_mcp.messages import Usage

PROTOCOL_VERSION = 1
_MCP_TITLE = re.compile(r"\((?P<server>[^()]+) MCP Server\)\s*$")
# --approval-mode names (the team file's permission_mode) as ACP session modes
MODES = {"default": "default", "auto_edit": "autoEdit", "autoEdit": "autoEdit",
         "yolo": "yolo", "plan": "plan"}


class GeminiCliBackend(StreamingCliBackend):
    can_move = True  # a session takes its own directory: any standby fits any run
    default_command = "gemini"
    display = "Gemini CLI"
    install_hint = "install it with `npm install -g @google/gemini-cli`"
    login_hint = ("log in by running `gemini` once, or give backend.api_key (with base_url "
                  "for another endpoint)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._acp: AcpClient | None = None
        self._init_id: int | None = None  # `initialize`, sent when the process started
        self._servers: list[str] = []  # the MCP servers of the current session

    @property
    def standby_plan(self) -> WarmPlan | None:
        # MCP servers are the session's (started in its directory): own stdio servers are fine.
        return self.first_plan

    # ------------------------------------------------------------------ the process

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

    async def _start_live(self, exe: str, system_text: str, tools_file: Path,
                          resume: str | None, key: str) -> None:
        await super()._start_live(exe, system_text, tools_file, None, json.dumps([exe]))
        assert self._live is not None
        self._acp = AcpClient(self._live)
        # Its start-up happens here, while nothing waits (a standby) or the session is made.
        with contextlib.suppress(OSError):
            self._init_id = await self._acp.send("initialize", {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False},
                                       "terminal": False}})
        self.session_id = None  # sessions are made per run (`_new_session`)

    async def _stop_live(self) -> None:
        await super()._stop_live()
        self._acp, self._init_id = None, None
        self.session_id = None  # the session lived in the process

    async def started(self) -> None:
        """Until the CLI has answered ``initialize`` (its start-up is over); call it only
        between turns."""
        if self._acp is not None and self._init_id is not None:
            await self._acp.wait(self._init_id)
            self._init_id = None

    # ------------------------------------------------------------------ a turn

    async def _invoke(self, exe: str, prompt: str, system_text: str, tools_file: Path,
                      on_call: Any, resume: str | None) -> TurnState:
        self._mode()  # a bad permission_mode fails the agent before anything starts
        if self._moving:  # a standby taken by this run: used as it is if it still runs
            self._moving = False
            if self._live is None or self._live.returncode is not None:
                await self._stop_live()
            else:
                self.started_warm = True
                self.first_plan = self._warm_plan
        if self._live is not None and self._live.returncode is not None:
            await self._stop_live()
        if resume and self.session_id is None:
            # The session was lost with its process: the caller retries with everything.
            return TurnState(error="the session ended with its process")
        if self._live is None:
            await self._start_live(exe, system_text, tools_file, None, "")
        state = TurnState()
        finished = False
        try:
            async with self._bridge.serving(on_call):
                with anyio.move_on_after(self.opts.timeout):
                    try:
                        await self._turn(prompt, system_text, tools_file, state)
                    except (AcpError, EOFError, OSError) as e:
                        tail = self._live.stderr_tail() if self._live is not None else ""
                        state.error = str(e) + (f": {tail}" if tail and not isinstance(
                            e, AcpError) else "")
                    finished = True
        finally:
            if not finished or state.error:
                await self._stop_live()  # the next turn starts a new session
        if not finished:
            raise TransientBackendError(
                f"{self.display} gave no result within {self.opts.timeout:g}s (stopped): "
                "raise backend.request_timeout_seconds, or check that its endpoint answers",
                provider=self.provider, model=self.model)
        return state

    async def _turn(self, prompt: str, system_text: str, tools_file: Path,
                    state: TurnState) -> None:
        acp = self._acp
        if acp is None:
            raise EOFError("the CLI is not running")
        if self._init_id is not None:
            await acp.wait(self._init_id)
            self._init_id = None
        if self.session_id is None:
            await self._new_session(acp, tools_file)
            prompt = f"{system_text}\n\n{prompt}"
            self._live_system = system_text
        elif system_text != self._live_system:
            prompt = f"{NEW_SYSTEM}\n{system_text}\n</instructions>\n\n{prompt}"
        self.turns_in_process += 1
        text: list[str] = []

        def notify(method: str, params: dict[str, Any]) -> None:
            update = obj(params.get("update"))
            kind = update.get("sessionUpdate")
            if kind == "agent_message_chunk":
                content = update.get("content") or {}
                if isinstance(content, dict) and isinstance(content.get("text"), str):
                    text.append(content["text"])
            elif kind in ("tool_call", "tool_call_update"):
                text.clear()  # the turn's text is what it said after its last tool call
                if update.get("status") in ("completed", "failed"):
                    state.usage.calls += 1  # each tool round trip is one more model call

        result = await acp.request("session/prompt", {
            "sessionId": self.session_id, "prompt": [{"type": "text", "text": prompt}]},
            notify, self._serve)
        state.got_result = True
        state.session_id = self.session_id
        state.text = "".join(t for t in text if not t.startswith("[MODE_UPDATE]")).strip()
        meta = result.get("_meta") or {}
        tokens = (meta.get("quota") or {}).get("token_count") or {}
        state.usage = Usage(input_tokens=int(tokens.get("input_tokens") or 0),
                            output_tokens=int(tokens.get("output_tokens") or 0),
                            calls=state.usage.calls + 1)
        stop = result.get("stopReason")
        if stop not in ("end_turn", None):
            state.error = f"the turn stopped: {stop}"

    async def _new_session(self, acp: AcpClient, tools_file: Path) -> None:
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
        session = await acp.request("session/new", {"cwd": str(self.workspace),
                                                    "mcpServers": servers})
        self.session_id = str(session.get("sessionId") or "") or None
        if self.session_id is None:
            raise AcpError("session/new gave no session id")
        await acp.request("session/set_mode", {"sessionId": self.session_id,
                                               "modeId": MODES[self._mode()]})

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
        call = obj(params.get("toolCall"))
        found = _MCP_TITLE.search(str(call.get("title") or ""))
        ours = found is not None and found.group("server") in self._servers
        kinds = ("allow_once",) if ours else ("reject_once", "reject_always")
        chosen = next((o for o in options if o.get("kind") in kinds), None)
        if chosen is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": chosen.get("optionId")}}

    def user_message(self, prompt: str) -> dict[str, Any]:  # not used: prompts are requests
        raise NotImplementedError

    def on_event(self, event: dict[str, Any], state: TurnState) -> None:  # likewise
        raise NotImplementedError

    def classify(self, error: str) -> str | None:
        low = error.lower()
        if "auth" in low or "api key" in low or "401" in low or "login" in low:
            return self.login_hint
        return None

    async def aclose(self) -> None:
        await super().aclose()
        self._acp = None

