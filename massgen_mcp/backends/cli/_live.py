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
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import anyio

from massgen_mcp.backends.cli._base import CliBackend, TurnState
from massgen_mcp.backends.cli._process import CliProcess
from massgen_mcp.errors import PermanentBackendError, TransientBackendError
from massgen_mcp.messages import ToolSpec

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


def stable_listing(offered: list[ToolSpec]) -> list[dict[str, Any]]:
    """The workflow tools as a long-lived CLI lists them: the same in every round."""
    out = [{"name": t.name, "description": t.description, "parameters": t.parameters}
           for t in offered if t.name != "vote"]
    if out or any(t.name == "vote" for t in offered):
        out.append(VOTE_LISTING)
    return sorted(out, key=lambda t: str(t["name"]))


class StreamingCliBackend(CliBackend):
    """`CliBackend` whose CLI stays up across turns; subclasses spell its command line
    (`live_command`) and its user message (`user_message`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._live: CliProcess | None = None
        self._live_key: str | None = None
        self._live_system: str | None = None
        self.turns_in_process = 0  # turns the current process served (1 = it just started)

    # ------------------------------------------------------------------ for subclasses

    def live_command(self, exe: str, system_text: str, mcp: dict[str, Any],
                     resume: str | None) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError

    def user_message(self, prompt: str) -> dict[str, Any]:
        raise NotImplementedError

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
        if self._live is not None and (self._live_key != key or self._live.returncode
                                       is not None):
            await self._stop_live()
        if self._live is None:
            await self._start_live(exe, system_text, tools_file, resume, key)
        proc = self._live
        assert proc is not None
        if system_text != self._live_system:
            prompt = f"{NEW_SYSTEM}\n{system_text}\n</instructions>\n\n{prompt}"
        self.turns_in_process += 1
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

    # ------------------------------------------------------------------ helpers

    async def _start_live(self, exe: str, system_text: str, tools_file: Path,
                          resume: str | None, key: str) -> None:
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
        self.turns_in_process = 0

    async def _stop_live(self) -> None:
        proc, self._live, self._live_key = self._live, None, None
        if proc is not None:
            with anyio.CancelScope(shield=True):
                await proc.kill()
        self._proc = None
