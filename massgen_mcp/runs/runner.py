"""Runs one prepared run to its end in this process: workspaces, backends, tool servers, the
orchestrator.

Whatever a provider sends or a config holds, every run it runs ends with a status in its
record, whoever waits on the run is woken, and `run` raises nothing but cancellation (the
server starts it in its background task group as it is). A run handed to a worker instead
goes through runs/scale/dispatch.py, which keeps the same promise.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

import anyio

from massgen_mcp.backends import Backend, BackendContext
from massgen_mcp.config.env import Environment
from massgen_mcp.config.model_limits import fit_to_servers
from massgen_mcp.config.team import Team
from massgen_mcp.coordination.answers import TextAnswer
from massgen_mcp.coordination.limits import call_deadline, output_cap
from massgen_mcp.coordination.orchestrator import Orchestrator
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import MassgenError
from massgen_mcp.runs.live import LiveRun, notify
from massgen_mcp.runs.pool import BackendPool
from massgen_mcp.runs.workspace import workspaces_for

if TYPE_CHECKING:
    from massgen_mcp.coordination.answers import AnswerFormat
    from massgen_mcp.coordination.result import RunStatus

log = logging.getLogger(__name__)

After = Callable[[RunResult], Any]
#: How often a run looks for a cancel asked by another process (a file's stat, or a flag the
#: Redis store's lease thread keeps current): well inside the 1 s a cancel may take.
CANCEL_POLL_SECONDS = 0.25
#: What an interrupted run's record says when the server gave no reason of its own.
SERVER_STOPPED = "the server stopped while the run was live"


class Runner:
    """Runs prepared runs here, with the backends of `pool`; `live` is the registry of live
    runs, from which a run is removed once its record is final."""

    def __init__(self, env: Environment, pool: BackendPool, live: dict[str, LiveRun]) -> None:
        self.env = env
        self.pool = pool
        self.live = live
        #: Set when the process is stopping (`Engine.shut_down`): why. Runs that stop from
        #: then on are recorded `interrupted`, with it, instead of `cancelled`.
        self.shutdown_reason: str | None = None
        #: Told of every run that ends in this process (e.g. per-user spend: runs/quota.py).
        self.finished: list[Callable[[LiveRun, RunResult], None]] = []

    def stop_status(self) -> RunStatus:
        """How a run stopped from outside ends: cancelled, or interrupted by a shutdown."""
        return "interrupted" if self.shutdown_reason is not None else "cancelled"

    async def run(
        self,
        live: LiveRun,
        team: Team,
        task: str,
        *,
        context: str | None = None,
        answer_format: AnswerFormat | None = None,
        backend_context: BackendContext | None = None,
        after: After | None = None,
    ) -> RunResult:
        """Run a prepared run (runs/engine.py `PreparedRun`) to its end. A cancelled caller
        still gets a `cancelled` record.

        `after` runs on the final result before anyone waiting on the run is woken (it stores
        plans and checkpoint plans); its return value is `live.outcome`.
        """
        backends: dict[str, Backend] = {}
        try:
            workspaces = workspaces_for(team, live.record.dir)
            if workspaces is not None:
                live.listeners.append(workspaces.on_event)
            # Every call has an output cap (coordination/limits.py); the team file's wins. The
            # default one is fitted to local servers' context and speed (model_limits.py).
            cap = output_cap(team.orchestrator, (answer_format or TextAnswer()).noun)
            fit_notes: list[str] = []
            if team.orchestrator.max_output_tokens is None:
                team, fit_notes = await fit_to_servers(team, cap,
                                                       call_deadline(team.orchestrator))
            team = team.with_output_cap(cap)
            given = backend_context or BackendContext()
            backends = await self.pool.acquire(team, given, dataclasses.replace(
                given, env=self.env, run_dir=live.record.dir, workspaces=workspaces))
            async with anyio.create_task_group() as writer:
                writer.start_soon(live.write_status)
                writer.start_soon(self._watch_cancel, live)
                async with AsyncExitStack() as stack:
                    toolboxes = await self._toolboxes(stack, team, live, workspaces)
                    orch = Orchestrator(
                        team, backends, task, run_id=live.run_id, log_dir=str(live.record.dir),
                        context=context, answer_format=answer_format,
                        toolboxes=toolboxes, emit=live.on_event,
                        redact=live.record.redact.text, stop=live.stop)
                    live.orchestrator = orch
                    result = await orch.run()
                    result.notes = [*team.warnings, *fit_notes, *result.notes]
                    if workspaces is not None:
                        result.workspace = workspaces.finish(result)
                    # Final now: record it and wake whoever waits before the agents' tool
                    # servers are stopped (about a second per server, off the answer's path).
                    self.finish(live, result, after)
                writer.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                result = self._stopped(live, team, task, self.stop_status(), after=after)
                await self.pool.release(backends)
            raise
        except Exception as e:
            with anyio.CancelScope(shield=True):
                error = str(e) if isinstance(e, MassgenError) else (
                    f"internal error: {type(e).__name__}: {e}")
                result = self._stopped(live, team, task, "failed", error=error, after=after)
                await self.pool.release(backends)
            if not isinstance(e, MassgenError):
                log.error("run %s failed", live.run_id, exc_info=e)
            return result
        await self.pool.release(backends)
        return result

    async def _watch_cancel(self, live: LiveRun) -> None:
        """A stop asked by another process (`RunRecords.request_cancel`: another replica's
        cancel_run, a worker's front end) stops the run here within CANCEL_POLL_SECONDS
        (plus the Redis store's own 0.5 s poll of the flag). Polled until the run ends: the
        Redis store takes the polling as the run's sign of life (a wedged loop loses its
        lease)."""
        while True:
            if live.record.cancel_requested() and not live.stop.requested:
                live.stop.request(self.stop_status())
            await anyio.sleep(CANCEL_POLL_SECONDS)

    async def _toolboxes(self, stack: AsyncExitStack, team: Team, live: LiveRun,
                         workspaces: Any = None) -> dict[str, Any]:
        boxes = await self._mcp_toolboxes(stack, team, live)
        if team.orchestrator.context_paths:  # read-only file tools, served in-process
            from massgen_mcp.tools.files import with_file_tools

            # Coding agents read and edit their own workspace copy instead.
            boxes = with_file_tools(boxes, [a.id for a in team.agents
                                            if not a.provider.coding_cli],
                                    team.orchestrator.context_paths)
        from massgen_mcp.tools.shell import with_shell_tools

        return with_shell_tools(boxes, team, workspaces)  # enable_mcp_command_line

    async def _mcp_toolboxes(self, stack: AsyncExitStack, team: Team, live: LiveRun
                             ) -> dict[str, Any]:
        # A coding agent's own MCP servers are handed to its CLI, not opened here.
        with_tools = [a for a in team.agents
                      if a.backend.servers() and not a.provider.coding_cli]
        if not with_tools:
            return {}
        from massgen_mcp.tools.session import (
            open_toolboxes,  # only runs that use tools pay for the import
        )

        cfg = team.orchestrator
        return await stack.enter_async_context(open_toolboxes(
            {a.id: a.backend for a in with_tools},
            run_dir=live.record.dir,
            startup_timeout=cfg.tool_server_startup_timeout_seconds,
            call_timeout=cfg.tool_call_timeout_seconds,
            on_event=live.on_event, redactor=live.record.redact))

    def _stopped(self, live: LiveRun, team: Team, task: str, status: RunStatus,
                 error: str | None = None, after: After | None = None) -> RunResult:
        if live.result is not None:  # stopped while its tool servers were shutting down
            return live.result
        orch = live.orchestrator
        if orch is not None:
            live.stop.request(status)
            orch.ending.settle()
            result = orch.result()
        else:
            result = RunResult(run_id=live.run_id, status="failed", task=task[:500],
                               team=team.name, log_dir=str(live.record.dir))
        result.status = status
        result.notes = [*team.warnings, *result.notes]
        if status == "interrupted":
            error = error or f"{self.shutdown_reason or SERVER_STOPPED}; this is the best " \
                             "answer so far"
        if error:
            result.error = error
        live.on_event("run_finished", {"status": status, "error": error})
        self.finish(live, result, after)
        return result

    def finish(self, live: LiveRun, result: RunResult, after: After | None = None, *,
               write: bool = True) -> None:
        """The run is over: run its outcome hook, record `result` (unless `write` is False:
        a worker recorded it already), wake whoever waits and forget the live run."""
        if result.status == "interrupted" and not result.error:
            result.error = f"{self.shutdown_reason or SERVER_STOPPED}; this is the best " \
                           "answer so far"
        result.follow_up_of = result.follow_up_of or live.follow_up_of
        result = live.record.clean(result)  # what leaves the process: redacted, encodable
        if after is not None:
            try:
                live.outcome = after(result)
            except Exception as e:
                log.exception("recording the outcome of run %s failed", live.run_id)
                live.outcome_error = f"the run finished ({result.status}) but its outcome " \
                                     f"could not be recorded: {e}"
        live.result = result
        try:
            if write:
                live.record.finish(result)
        except OSError:
            log.exception("writing the record of run %s failed", live.run_id)
        finally:
            notify(self.finished, live, result, what="a finished-run hook")
            live.done.set()
            self.live.pop(live.run_id, None)  # from now on it is served from its files
