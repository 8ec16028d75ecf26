"""A CLI that reads its turns as JSON lines on stdin: one long-lived process per member.

A headless invocation per turn pays the CLI's start-up every turn (Claude Code: seconds on a
loaded machine). A CLI that supports streaming input (Claude Code's ``--input-format
stream-json``) is started once, on the member's first turn, and each later turn is one more
user message on its stdin; the turn ends at the CLI's ``result`` event and the process waits
for the next one.

What the process was started with must not change under it: the workflow tools it lists (so
they are listed in a stable shape: `vote` always, without the enum of answer labels, which
changes every round; the orchestrator still checks the label and an invalid one comes back
as a tool error) and the directories it may read (the run's whole `snapshots/` directory
instead of the answers a prompt names). A turn whose system text differs from the one the
session started with (the winner's presentation) carries the new text in its message. When a
turn times out, fails or is cancelled, the process is stopped and the next turn starts a new
one that resumes the same session (``--resume``). The process ends with the run
(`aclose`), or with the server (parent-death signal, process group), like any CLI here.

A standby (`warm`, kept by the backend pool between runs) is such a process started before a
run needs it, the way the member's last first turn started (same system text, same tools),
with no message sent: the CLI starts up, connects its MCP servers and waits, making no model
request. A run that takes it (`bind`) moves it into the run's workspace before its first
message (Claude Code's ``set_cwd`` control request: "before the first turn the move
re-anchors start-of-session state", the first request is built as for a start there) and lets
it read the run's snapshots; the session is new and has seen nothing. When anything differs
(system text, tools, a refused move, a dead process), it is stopped and the turn starts cold.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import anyio

from massgen_mcp.backends.cli._base import CliBackend, TurnState
from massgen_mcp.backends.cli._process import CliProcess
from massgen_mcp.errors import PermanentBackendError, TransientBackendError
from massgen_mcp.messages import ToolSpec

if TYPE_CHECKING:
    from massgen_mcp.backends import BackendContext
    from massgen_mcp.config.team import AgentSpec

#: How long a standby may take to answer its move (the rest of its start-up included) before
#: the turn gives up on it and starts cold.
MOVE_TIMEOUT = 60.0
NEW_SYSTEM = ("<instructions>These instructions replace your earlier system instructions "
              "from now on:")


# `vote` as a long-lived CLI lists it, in every round (the orchestrator's own spec, from
# coordination/workflow.py, carries the enum of this round's labels, and is absent in a round
# with no answers yet); the orchestrator checks a vote's label whatever the CLI sends.
VOTE_LISTING = {
    "name": "vote",
    "description": ("Vote for the best existing answer, by the label of its agent as the "
                    "current answers show it (agent1, agent2, ...). Use it when an answer "
                    "already solves the task well and you cannot substantially improve it. "
                    "Ends your turn."),
    "parameters": {"type": "object", "properties": {
        "agent_id": {"type": "string", "description": "The agent whose answer is best, "
                                                      "e.g. agent1."},
        "reason": {"type": "string", "description": "Why this answer is the best."}},
        "required": ["agent_id", "reason"]}}


@dataclass(frozen=True)
class WarmPlan:
    """How a member's first turn started its CLI: a standby is started the same way."""

    exe: str
    system_text: str
    listing: str  # the workflow tools file, as the CLI's MCP server lists them

    @property
    def key(self) -> str:
        return json.dumps([self.exe, self.listing])


def stable_listing(offered: list[ToolSpec]) -> list[dict[str, Any]]:
    """The workflow tools as a long-lived CLI lists them: the same in every round."""
    out = [{"name": t.name, "description": t.description, "parameters": t.parameters}
           for t in offered if t.name != "vote"]
    if out or any(t.name == "vote" for t in offered):
        out.append(VOTE_LISTING)
    return sorted(out, key=lambda t: str(t["name"]))


class StreamingCliBackend(CliBackend):
    """`CliBackend` whose CLI stays up across turns; subclasses spell its command line
    (`live_command`) and its user message (`user_message`); one that can move a started
    process into a run's workspace (`move_requests`) can be kept warm between runs."""

    #: True when `move_requests` is implemented: the backend pool may keep a standby.
    can_move: ClassVar[bool] = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._live: CliProcess | None = None
        self._live_key: str | None = None
        self._live_system: str | None = None
        self.first_plan: WarmPlan | None = None  # how the first turn started the CLI
        self.warmed_at: float | None = None  # a standby: when it was started (monotonic)
        self._standby_session: str | None = None
        self._warm_plan: WarmPlan | None = None
        self._moving = False  # a standby taken by a run: move it before the first message
        self._run_root: Path | None = None  # where a taken standby's files go at the end
        self.started_warm = False  # a standby whose process served this run's first turn

    # ------------------------------------------------------------------ for subclasses

    def live_command(self, exe: str, system_text: str, mcp: dict[str, Any],
                     resume: str | None) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError

    def user_message(self, prompt: str) -> dict[str, Any]:
        raise NotImplementedError

    def move_requests(self, workspace: Path, dirs: list[Path]) -> list[dict[str, Any]]:
        """Control requests that move an idle, never-prompted process into `workspace` and
        let it read `dirs` (only when `can_move`)."""
        raise NotImplementedError

    def moved(self, request: dict[str, Any], response: dict[str, Any]) -> bool:
        """Whether `response` (a control response) says `request` was done."""
        return response.get("subtype") == "success"

    # ------------------------------------------------------------------ standby

    @property
    def standby_plan(self) -> WarmPlan | None:
        """How a standby for this member's next run would be started; None when it cannot
        be kept warm (the CLI cannot move, the first turn never ran, or the member has stdio
        MCP servers of its own, which would start in the standby's directory)."""
        if not self.can_move or any(s.type == "stdio" for s in self._spec.backend.servers()):
            return None
        return self.first_plan

    async def warm(self, plan: WarmPlan) -> None:
        """Start the CLI now, idle, as `plan` says; no message is sent, so it makes no model
        request. Its files (HOME, MCP config, logs) live under this backend's own root."""
        self.root.mkdir(parents=True, exist_ok=True)
        tools_file = self.root / "workflow-tools.json"
        tools_file.write_text(plan.listing, encoding="utf-8")
        await self._start_live(plan.exe, plan.system_text, tools_file, None, plan.key)
        # The session it was started with is used only if a run's first turn takes it over
        # (and only then is `plan` this backend's first plan).
        self._standby_session, self.session_id = self.session_id, None
        self._warm_plan, self.first_plan = plan, None
        self.warmed_at = time.monotonic()

    def bind(self, spec: AgentSpec, context: BackendContext) -> None:
        """Give this standby to a run (`spec` is its member, configured alike): its first
        turn moves the CLI into the run's workspace, or starts cold there."""
        self._spec = spec
        self._workspaces = context.workspaces
        self._run_root = (context.run_dir / "agents" / spec.id) if context.run_dir else None
        self._moving = True

    @property
    def pid(self) -> int | None:
        """The live CLI process, if one runs."""
        return self._live.pid if self._live is not None else None

    def kill_now(self) -> None:
        """Stop a standby at once (synchronous: the server is exiting)."""
        if self._live is not None:
            self._live.kill_now()
        if self.warmed_at is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    # ------------------------------------------------------------------ the hooks of CliBackend

    def tool_listing(self, offered: list[ToolSpec]) -> list[dict[str, Any]]:
        return stable_listing(offered)

    def snapshot_dirs(self, prompt: str) -> list[Path]:
        if self._workspaces is None:
            return []
        root = self._workspaces.run_dir / "snapshots"
        root.mkdir(parents=True, exist_ok=True)
        return [root]

    async def _invoke(self, exe: str, prompt: str, system_text: str, tools_file: Path,
                      on_call: Any, resume: str | None) -> TurnState:
        key = json.dumps([exe, tools_file.read_text(encoding="utf-8")])
        if self._moving:
            self._moving = False
            if not await self._move(key, system_text):
                await self._stop_live()  # the turn starts cold, in the run's workspace
        if self._live is not None and (self._live_key != key or self._live.returncode
                                       is not None):
            await self._stop_live()
        if self._live is None:
            await self._start_live(exe, system_text, tools_file, resume, key)
        proc = self._live
        assert proc is not None
        if system_text != self._live_system:
            prompt = f"{NEW_SYSTEM}\n{system_text}\n</instructions>\n\n{prompt}"
        state = TurnState()
        ended: int | None = None
        finished = False
        try:
            async with self._bridge.serving(on_call):
                with anyio.move_on_after(self.opts.timeout):
                    with contextlib.suppress(OSError):  # it exited: its code and stderr say why
                        await proc.send(self.user_message(prompt))
                    async for event in proc.events():
                        self.on_event(event, state)
                        if state.got_result:
                            break
                    else:
                        ended = await proc.wait()
                    finished = True
        finally:
            if not finished or ended is not None or state.error:
                # Timed out, cancelled, failed or gone: the next turn resumes in a new one.
                await self._stop_live()
        if not finished:
            raise TransientBackendError(
                f"{self.display} gave no result within {self.opts.timeout:g}s (stopped): "
                "raise backend.request_timeout_seconds, or check that its endpoint answers",
                provider=self.provider, model=self.model)
        if ended is not None and not state.error and not state.got_result:
            tail = proc.stderr_tail()
            state.error = f"exited with code {ended}" + (f": {tail}" if tail else "")
        return state

    async def aclose(self) -> None:
        await self._stop_live()
        await super().aclose()
        if self.warmed_at is not None:  # a standby's own root: kept with the run, or removed
            if self._run_root is not None and not self._run_root.exists():
                with contextlib.suppress(OSError):
                    self._run_root.parent.mkdir(parents=True, exist_ok=True)
                    shutil.move(self.root, self._run_root)
            shutil.rmtree(self.root, ignore_errors=True)

    # ------------------------------------------------------------------ helpers

    async def _move(self, key: str, system_text: str) -> bool:
        """Move a standby into the run's workspace; False when it cannot be used as it is."""
        proc = self._live
        if (proc is None or proc.returncode is not None or key != self._live_key
                or system_text != self._live_system):
            return False
        pending = {f"massgen-move-{i}": r for i, r in enumerate(
            self.move_requests(self.workspace, self.snapshot_dirs("")))}
        if not pending:
            return False
        with anyio.move_on_after(min(self.opts.timeout, MOVE_TIMEOUT)), \
                contextlib.suppress(OSError):
            for rid, request in pending.items():
                await proc.send({"type": "control_request", "request_id": rid,
                                 "request": request})
            async for event in proc.events():
                response = event.get("response") if event.get("type") == "control_response" \
                    else None
                if not isinstance(response, dict) or response.get("request_id") not in pending:
                    continue
                if not self.moved(pending.pop(response["request_id"]), response):
                    return False
                if not pending:
                    self.session_id, self.first_plan = self._standby_session, self._warm_plan
                    self.started_warm = True
                    return True
        return False

    async def _start_live(self, exe: str, system_text: str, tools_file: Path,
                          resume: str | None, key: str) -> None:
        if resume is None and self.first_plan is None:
            self.first_plan = WarmPlan(exe, system_text, tools_file.read_text(encoding="utf-8"))
        argv, env = self.live_command(exe, system_text, self.mcp_servers(tools_file), resume)
        self.invocations += 1
        await self._bridge.listen()  # before the CLI starts: its MCP server connects early
        try:
            self._live = await CliProcess.start(argv, cwd=self.workspace, env=env,
                                                stderr_path=self.root / "cli.stderr.log",
                                                stdin_pipe=True)
        except OSError as e:
            raise PermanentBackendError(
                f"{self.display} could not start ({argv[0]}): {e.strerror or e}; reinstall "
                "it, or fix backend.command", provider=self.provider, model=self.model) from None
        self._proc = self._live
        self._live_key = key
        if resume is None:
            # A resumed session keeps the system prompt it was started with (Claude Code's
            # --system-prompt-snapshot), so the text to compare with is the session's.
            self._live_system = system_text

    async def _stop_live(self) -> None:
        proc, self._live, self._live_key = self._live, None, None
        if proc is not None:
            with anyio.CancelScope(shield=True):
                await proc.kill()
        self._proc = None
