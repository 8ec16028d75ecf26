"""What the CLI backends share; here one `turn()` is one headless CLI invocation (Copilot),
while `_live.py` (Claude Code, stream-json) and `_rpc.py` (Codex app-server, Gemini CLI ACP)
keep one CLI process up across a member's turns.

The seam with the orchestrator is the ordinary `Backend.turn()`: the CLI gets the turn's
workflow tools (`new_answer`, `vote`, or a plan/checkpoint answer format's `new_answer`) from
the workflow MCP server, and every call it makes to them comes back over the bridge as this
turn's `ToolCall`s. The orchestrator then validates them like any backend's calls. The CLI is
told the call was received at once; if the orchestrator rejects it, the next `turn()` carries
the tool error, and the same CLI session is resumed with it.

Sessions persist across an agent's turns (each CLI's own resume); a new round in a resumed
session starts with a note saying the answers changed, so a restarted agent knows why.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import anyio

from massgen_mcp.backends._common import redact
from massgen_mcp.backends.cli._bridge import CallBridge, workflow_server_argv
from massgen_mcp.backends.cli._options import CliOptions
from massgen_mcp.backends.cli._process import CliProcess, base_env, find_command
from massgen_mcp.backends.cli.availability import CLIS
from massgen_mcp.backends.cli.keys import ENDPOINT_VARS, KEY_VARS, env_key, passed_env
from massgen_mcp.errors import PermanentBackendError, TransientBackendError
from massgen_mcp.messages import WORKFLOW_TOOLS, Message, ToolCall, ToolSpec, Turn, Usage

if TYPE_CHECKING:
    from massgen_mcp.backends import BackendContext
    from massgen_mcp.config.team import AgentSpec

log = logging.getLogger(__name__)

SERVER_NAME = "massgen"  # the workflow MCP server's name as the CLI sees it
ACK = ("Received. This turn is over: do not call any other tool and do not change files; "
       "reply with one short sentence and stop.")
NEW_ROUND = ("A new turn: the situation changed since your last one (new answers or votes; "
             "anything you had not submitted was stopped and is not counted). Here is the "
             "current state; act on it, not on what you saw before.\n\n")
# One argv string may hold at most 128 KiB on Linux (MAX_ARG_STRLEN); a longer prompt (large
# context files) goes through stdin from a file instead (every CLI here reads it).
ARG_LIMIT = 100_000
WORKFLOW_NOTE = (f"Your coordination tools are `new_answer` and `vote` on the `{SERVER_NAME}` "
                 "MCP server. Work in your current directory (your own workspace); end every "
                 "turn by calling exactly one of them.")


@dataclass
class TurnState:
    """What one invocation reported."""

    text: str = ""
    usage: Usage = field(default_factory=Usage)
    session_id: str | None = None
    error: str | None = None  # the CLI said the turn failed (its own words)
    got_result: bool = False


class CliBackend:
    """`Backend` that runs a coding-agent CLI headless; subclasses spell its command line."""

    backend_type: ClassVar[str]  # in a team file; its command and npm package: `CLIS[...]`
    display: ClassVar[str]  # "Claude Code"

    def __init__(self, spec: AgentSpec, context: BackendContext | None = None) -> None:
        env, run_dir = (context.env, context.run_dir) if context else (None, None)
        workspaces = context.workspaces if context else None
        self.provider = spec.provider.name
        self.model = spec.model
        self._spec = spec
        self.opts = CliOptions.from_spec(spec)
        self._env: Mapping[str, str] = env if env is not None else os.environ
        root = (run_dir / "agents" / spec.id) if run_dir else Path(
            tempfile.mkdtemp(prefix=f"massgen-{spec.id}-"))
        self.root = root
        self._workspaces = workspaces
        self.notes: list[str] = []
        if self.opts.unknown:
            self.notes.append(f"ignored unsupported keys: {', '.join(self.opts.unknown)}")
        self._bridge = CallBridge()
        self.session_id: str | None = None
        self.sessions: list[str] = []  # every CLI session this agent used, in order
        self._sent: list[Message] = []
        self._proc: CliProcess | None = None
        self._stdin: Path | None = None
        self.invocations = 0

    # ------------------------------------------------------------------ the Backend API

    @property
    def workspace(self) -> Path:
        if self._workspaces is not None:
            return self._workspaces.dir_for(self._spec.id, self.opts.cwd)
        path = self.root / "workspace"
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def login_hint(self) -> str:
        return CLIS[self.backend_type].login_hint

    @property
    def endpoint_mode(self) -> bool:
        """True when the team file points the CLI at an endpoint (else: the user's login)."""
        return bool(self._spec.base_url or self._spec.api_key)

    async def turn(self, messages: list[Message], tools: list[ToolSpec]) -> Turn:
        cli = CLIS[self.backend_type]
        exe = find_command(self.opts.command, cli.command, self._env)
        if exe is None:
            where = f"'{self.opts.command}'" if self.opts.command else (
                f"'{cli.command}' on PATH")
            raise PermanentBackendError(
                f"{self.display} not found ({where}): {cli.install_hint}",
                provider=self.provider, model=self.model)
        offered = [t for t in tools if t.name in WORKFLOW_TOOLS]
        prompt, system_text = self._prompt(messages)
        self.root.mkdir(parents=True, exist_ok=True)
        tools_file = self.root / "workflow-tools.json"
        tools_file.write_text(json.dumps(self.tool_listing(offered)), encoding="utf-8")
        names = {t.name for t in offered}
        calls: list[ToolCall] = []

        def on_call(call: ToolCall) -> tuple[str, bool]:
            if call.name not in names:
                return f"{call.name} is not available in this turn", True
            calls.append(call)
            return ACK, False

        resume = self.session_id
        state = await self._invoke(exe, prompt, system_text, tools_file, on_call, resume)
        if state.error and resume and not calls and not state.got_result:
            # The session could not be resumed (e.g. lost): start a new one with everything.
            self.notes.append(f"could not resume session {resume}; started a new one")
            self.session_id = None
            prompt, system_text = self._prompt(messages, fresh=True)
            state = await self._invoke(exe, prompt, system_text, tools_file, on_call, None)
        self._sent = list(messages)
        if state.session_id:
            self.session_id = state.session_id
            if state.session_id not in self.sessions:
                self.sessions.append(state.session_id)
        if calls:
            return Turn(state.text, tuple(calls), state.usage, "tool_use")
        if state.error:
            raise self._error(state.error)
        return Turn(state.text, (), state.usage, "end_turn")

    async def aclose(self) -> None:
        if self._proc is not None:
            with anyio.CancelScope(shield=True):
                await self._proc.kill()
        await self._bridge.aclose()

    # ------------------------------------------------------------------ for subclasses

    def command(self, exe: str, prompt: str, system_text: str, mcp: dict[str, Any],
                resume: str | None) -> tuple[list[str], dict[str, str]]:
        """argv and environment of one invocation."""
        raise NotImplementedError

    def on_event(self, event: dict[str, Any], state: TurnState) -> None:
        """Fold one JSON line of the CLI's output into `state`."""
        raise NotImplementedError

    def classify(self, error: str) -> str | None:
        """A fix for a known failure (not logged in, ...), or None."""
        return None

    def tool_listing(self, offered: list[ToolSpec]) -> list[dict[str, Any]]:
        """The workflow tools the CLI's MCP server lists this turn."""
        return [{"name": t.name, "description": t.description, "parameters": t.parameters}
                for t in offered]

    # ------------------------------------------------------------------ helpers

    def mcp_servers(self, tools_file: Path) -> dict[str, Any]:
        """The workflow server plus the agent's own MCP servers from the team file."""
        argv = workflow_server_argv(tools_file, self._bridge.socket_path)
        servers: dict[str, Any] = {SERVER_NAME: {"command": argv[0], "args": argv[1:]}}
        for s in self._spec.backend.servers():
            if s.type == "stdio":
                servers[s.name] = {"command": s.command, "args": list(s.args),
                                   **({"env": dict(s.env)} if s.env else {})}
            else:
                servers[s.name] = {"type": "http", "url": s.url,
                                   **({"headers": dict(s.headers)} if s.headers else {})}
        return servers

    def api_key(self) -> str | None:
        """The key this CLI is given: the team file's `api_key`, else one from the server's
        environment (or `.env`) under a variable the CLI reads (see `keys.py`)."""
        if self._spec.api_key is not None:
            return self._spec.api_key.get_secret_value()
        found = env_key(self.provider, self._env)
        return found[1] if found else None

    def child_env(self, **extra: str) -> dict[str, str]:
        """The CLI's environment: PATH and locale from the server, the provider key and
        endpoint variables it reads (unless the team file gives its own), its own HOME when
        it is pointed at an endpoint (else the user's, for their login), the file's `env`."""
        env = base_env(self._env)
        passed = passed_env(self.provider, self._env)
        if self._spec.api_key is not None:
            passed = {k: v for k, v in passed.items() if k not in KEY_VARS[self.provider]}
        if self._spec.base_url:
            passed = {k: v for k, v in passed.items() if k not in ENDPOINT_VARS[self.provider]}
        env.update(passed)
        if self.endpoint_mode or "HOME" not in self._env:
            home = self.root / "home"
            home.mkdir(parents=True, exist_ok=True)
            env["HOME"] = str(home)
        else:
            env["HOME"] = self._env["HOME"]
        env.update(self.opts.env)
        env.update(extra)
        return env

    def prompt_arg(self, text: str) -> str | None:
        """`text` to pass as an argument, or None when it is too long for one: then it is
        written to a file the CLI reads on stdin."""
        if len(text.encode("utf-8")) <= ARG_LIMIT:
            return text
        self._stdin = self.root / "prompt.txt"
        self._stdin.write_text(text, encoding="utf-8")
        return None

    def session_args(self, prompt: str, resume: str | None) -> list[str]:
        """``--add-dir`` for each snapshot the prompt may read, then ``--resume ID``, or
        ``--session-id`` with a new id (kept as `session_id`): the flags Claude Code and the
        Copilot CLI spell alike."""
        argv: list[str] = []
        for d in self.snapshot_dirs(prompt):
            argv += ["--add-dir", str(d)]
        if resume:
            return [*argv, "--resume", resume]
        self.session_id = str(uuid.uuid4())
        return [*argv, "--session-id", self.session_id]

    def snapshot_dirs(self, prompt: str) -> list[Path]:
        return [p for _, p in self._workspaces.snapshots_in(prompt)] if self._workspaces else []

    def _prompt(self, messages: list[Message], fresh: bool = False) -> tuple[str, str]:
        """The prompt of this invocation and the system text: the whole conversation for a
        new session, only what was added for a continued one."""
        system_text = "\n\n".join(m.content for m in messages if m.role == "system")
        system_text = "\n\n".join(p for p in (
            system_text, WORKFLOW_NOTE, self.opts.append_system_prompt) if p)
        n = len(self._sent)
        if not fresh and self.session_id and n and messages[:n] == self._sent:
            parts = []
            for m in messages[n:]:
                if m.role == "tool":
                    parts.append(f"Your {m.name} call was not accepted: {m.content}"
                                 if m.is_error else f"{m.name} returned: {m.content}")
                elif m.role == "user":
                    parts.append(m.content)
            return "\n\n".join(parts) or "Continue.", system_text
        body = "\n\n".join(m.content for m in messages if m.role == "user")
        if self._workspaces is not None:
            body += self._workspaces.describe(self._spec.id, body)
        if not fresh and self.session_id:
            body = NEW_ROUND + body
        return body, system_text

    async def _invoke(self, exe: str, prompt: str, system_text: str, tools_file: Path,
                      on_call: Any, resume: str | None) -> TurnState:
        self._stdin = None
        argv, env = self.command(exe, prompt, system_text, self.mcp_servers(tools_file), resume)
        state = TurnState()
        self.invocations += 1
        code: int | None = None
        await self._bridge.listen()  # before the CLI starts: its MCP server connects early
        try:
            proc = await CliProcess.start(argv, cwd=self.workspace, env=env,
                                          stderr_path=self.root / "cli.stderr.log",
                                          stdin_path=self._stdin)
        except OSError as e:
            raise PermanentBackendError(
                f"{self.display} could not start ({argv[0]}): {e.strerror or e}; reinstall "
                "it, or fix backend.command", provider=self.provider, model=self.model) from None
        self._proc = proc
        try:
            # Errors are raised after the bridge's task group is closed (else they would
            # arrive wrapped in an ExceptionGroup).
            async with self._bridge.serving(on_call):
                with anyio.move_on_after(self.opts.timeout):
                    async for event in proc.events():
                        self.on_event(event, state)
                    code = await proc.wait()
        finally:
            with anyio.CancelScope(shield=True):
                await proc.kill()
            self._proc = None
        if code is None:
            raise TransientBackendError(
                f"{self.display} gave no result within {self.opts.timeout:g}s (stopped): "
                "raise backend.request_timeout_seconds, or check that its endpoint answers",
                provider=self.provider, model=self.model)
        if code != 0 and not state.error and not state.got_result:
            tail = proc.stderr_tail()
            state.error = f"exited with code {code}" + (f": {tail}" if tail else "")
        return state

    def _error(self, error: str) -> PermanentBackendError:
        text = redact(" ".join(error.split())[:400], self._spec)
        fix = self.classify(error)
        return PermanentBackendError(
            f"{self.display} failed: {text}" + (f"; {fix}" if fix else ""),
            provider=self.provider, model=self.model)
