"""Runs a team on a task: backends, tool servers, the orchestrator and the run record.

The `Engine` is shared by the CLI, the Python API and the MCP server. It also keeps the
runs that are live in this process (`runs/live.py`), so they can be followed and cancelled.
Whatever a provider sends or a config holds, every run it starts ends with a status.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from massgen_mcp.backends import Backend, create_backend
from massgen_mcp.backends.cli import CLI_WIRES
from massgen_mcp.config.env import Environment
from massgen_mcp.config.team import AgentSpec, Team
from massgen_mcp.coordination.answers import AnswerFormat
from massgen_mcp.coordination.orchestrator import Orchestrator
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import BackendError, InputError, MassgenError, RunNotFoundError
from massgen_mcp.inputs import screen_inputs
from massgen_mcp.messages import Message, ToolSpec, Turn
from massgen_mcp.paths import state_dir
from massgen_mcp.redaction import Redactor, configured_secrets
from massgen_mcp.runs.live import Listener, LiveRun
from massgen_mcp.runs.store import RunRecord, RunStore, check_run_id, new_run_id
from massgen_mcp.runs.workspace import workspaces_for

log = logging.getLogger(__name__)

BACKEND_CACHE_SIZE = 64


class _BrokenBackend:
    """Stands in for a backend that could not be built, so the agent fails like any other."""

    def __init__(self, provider: str, model: str, error: str) -> None:
        self.provider, self.model, self.error = provider, model, error

    async def turn(self, messages: list[Message], tools: list[ToolSpec], *,
                   require_tool: bool = False) -> Turn:
        raise BackendError(self.error, provider=self.provider, model=self.model)

    async def aclose(self) -> None:
        return None


@dataclass
class PreparedRun:
    """A run whose team, task and context are settled; `start()` runs it to the end."""

    engine: Engine
    live: LiveRun
    team: Team
    task: str
    context: str | None
    answer_format: AnswerFormat | None = None
    backend_context: dict[str, Any] | None = None
    #: Runs on the finished result (e.g. stores the winning plan); its value is `outcome`.
    after: Callable[[RunResult], Any] | None = None

    @property
    def run_id(self) -> str:
        return self.live.run_id

    @property
    def outcome(self) -> Any:
        if self.live.outcome_error:
            raise MassgenError(self.live.outcome_error)
        return self.live.outcome

    async def start(self) -> RunResult:
        return await self.engine.execute(
            self.live, self.team, self.task, context=self.context,
            answer_format=self.answer_format, backend_context=self.backend_context,
            after=self.after)


class Engine:
    def __init__(self, state: Path | None = None, env: Environment | None = None) -> None:
        self.state = state or state_dir()
        self.env = env or Environment()
        self.store = RunStore(self.state)
        self.live: dict[str, LiveRun] = {}
        self.shutting_down = False  # set by the server on exit: live runs become interrupted
        self.stop_reason = "the server stopped while the run was live"
        self._backend_cache: dict[str, Backend] = {}

    # ------------------------------------------------------------------ running

    def prepare(self, team: Team, task: str, *, mode: str = "consensus") -> LiveRun:
        """Create the run id and record, so callers can return the id before the run starts."""
        run_id = new_run_id()
        redactor = Redactor(configured_secrets(team, self.env))
        meta = {"task": task, "team": team.name, "source": team.source, "mode": mode,
                "agents": [{"id": a.id, "provider": a.provider.name, "model": a.model}
                           for a in team.agents]}
        if team.warnings:  # keys of the team file accepted but not honoured
            meta["warnings"] = list(team.warnings)
        live = LiveRun(run_id, RunRecord(self.state, run_id, redactor, meta))
        # status.json exists from the start, so a run whose process dies is never lost
        live.record.status(RunResult(run_id=run_id, status="running", task=task[:500],
                                     team=team.name, log_dir=str(live.record.dir)))
        self.live[run_id] = live
        return live

    def prepare_run(
        self,
        team: Team,
        task: str,
        *,
        context: str | None = None,
        mode: str = "consensus",
        answer_format: AnswerFormat | None = None,
        backend_context: dict[str, Any] | None = None,
        listener: Listener | None = None,
    ) -> PreparedRun:
        """A run with its id and record, ready to `start()`."""
        if not isinstance(task, str) or not task.strip():
            raise InputError("the task is empty: say what the team should answer or decide")
        # Bounded, and without the configured keys, before anything reaches a provider.
        task, context = screen_inputs(task, context, configured_secrets(team, self.env))
        live = self.prepare(team, task, mode=mode)
        if listener is not None:
            live.listeners.append(listener)
        return PreparedRun(self, live, team, task, context, answer_format, backend_context)

    async def execute(
        self,
        live: LiveRun,
        team: Team,
        task: str,
        *,
        context: str | None = None,
        answer_format: AnswerFormat | None = None,
        backend_context: dict[str, Any] | None = None,
        after: Callable[[RunResult], Any] | None = None,
    ) -> RunResult:
        """Run a prepared run to its end. A cancelled caller still gets a `cancelled` record.

        `after` runs on the final result before anyone waiting on the run is woken (it stores
        plans and checkpoint plans); its return value is `live.outcome`.
        """
        backends: dict[str, Backend] = {}
        workspaces = None
        try:
            workspaces = workspaces_for(team, live.record.dir, CLI_WIRES)
        except MassgenError as e:
            return self._stopped(live, team, task, "failed", error=str(e), after=after)
        if workspaces is not None:
            live.listeners.append(workspaces.on_event)
        try:
            backends = self._backends(team, backend_context or {}, {
                "env": self.env, "run_dir": live.record.dir, "workspaces": workspaces})
            async with anyio.create_task_group() as writer:
                writer.start_soon(live.write_status)
                async with AsyncExitStack() as stack:
                    toolboxes = await self._toolboxes(stack, team, live)
                    orch = Orchestrator(
                        team, backends, task, run_id=live.run_id, log_dir=str(live.record.dir),
                        context=context, answer_format=answer_format, toolboxes=toolboxes,
                        emit=live.on_event)
                    live.orchestrator = orch
                    if live.cancel_requested:
                        orch.cancel(self._cancel_status())
                    result = await orch.run()
                    result.notes = [*team.warnings, *result.notes]
                    if workspaces is not None:
                        result.workspace = workspaces.finish(result)
                    # Final now: record it and wake whoever waits before the agents' tool
                    # servers are stopped (about a second per server, off the answer's path).
                    self._finish(live, result, after)
                writer.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                status = "interrupted" if self.shutting_down else "cancelled"
                result = self._stopped(live, team, task, status, after=after)
                await self._close(backends)
            raise
        except Exception as e:
            with anyio.CancelScope(shield=True):
                error = str(e) if isinstance(e, MassgenError) else (
                    f"internal error: {type(e).__name__}: {e}")
                result = self._stopped(live, team, task, "failed", error=error, after=after)
                await self._close(backends)
            if isinstance(e, MassgenError):
                return result
            log.error("run %s failed", live.run_id, exc_info=e)
            return result
        await self._close(backends)
        return result

    async def run(
        self, team: Team, task: str, *, mode: str = "consensus",
        listener: Listener | None = None, **kwargs: Any,
    ) -> RunResult:
        live = self.prepare(team, task, mode=mode)
        if listener:
            live.listeners.append(listener)
        return await self.execute(live, team, task, **kwargs)

    def cancel(self, run_id: str) -> bool:
        """Ask a live run to stop; returns False when it is not running in this process."""
        live = self.live.get(check_run_id(run_id))
        if live is None or live.result is not None:
            return False
        live.cancel_requested = True
        if live.orchestrator is not None:
            live.orchestrator.cancel(self._cancel_status())
        return True

    async def cancel_and_wait(self, run_id: str, timeout: float = 10.0) -> tuple[bool, str]:
        """Stop a live run and wait (bounded) until its record says how it ended; returns
        whether a stop was requested and the status the run has now."""
        live = self.live.get(check_run_id(run_id))
        requested = self.cancel(run_id)
        if requested and live is not None:
            with anyio.move_on_after(timeout):
                await live.done.wait()
        return requested, self.get(run_id).status

    def shut_down(self, reason: str) -> None:
        """From now on, runs that stop are recorded `interrupted`, with `reason`."""
        self.stop_reason = reason
        self.shutting_down = True

    def _cancel_status(self) -> Any:
        return "interrupted" if self.shutting_down else "cancelled"

    # ------------------------------------------------------------------ reading

    def get(self, run_id: str) -> RunResult:
        live = self.live.get(check_run_id(run_id))
        if live is not None:
            snap = live.snapshot()
            if snap is not None:
                return snap
        return self.store.load(run_id)

    def list(self, limit: int = 20) -> list[RunResult]:
        out = []
        for run_id in self.store.ids():
            try:
                out.append(self.get(run_id))
            except (RunNotFoundError, ValueError) as e:
                log.warning("skipping run %s: %s", run_id, e)
            if len(out) >= limit:
                break
        return out

    # ------------------------------------------------------------------ internals

    def _backends(self, team: Team, context: dict[str, Any],
                  cli_context: dict[str, Any] | None = None) -> dict[str, Backend]:
        """One backend per agent. Provider backends are kept across runs (keyed by everything
        that shapes their requests), so their HTTP connections (and TLS sessions) are reused
        instead of being set up again by every agent of every run; they are stateless between
        turns and safe to share between concurrent runs."""
        out: dict[str, Backend] = {}
        for spec in team.agents:
            key = _backend_key(spec)
            try:
                if spec.provider.wire in CLI_WIRES:  # one per run: it holds a session
                    out[spec.id] = create_backend(spec, **context, **(cli_context or {}))
                    continue
                if key is None:
                    out[spec.id] = create_backend(spec, **context)
                    continue
                if key not in self._backend_cache:
                    if len(self._backend_cache) >= BACKEND_CACHE_SIZE:
                        self._backend_cache.pop(next(iter(self._backend_cache)))
                    self._backend_cache[key] = create_backend(spec, **context)
                out[spec.id] = self._backend_cache[key]
            except MassgenError as e:
                out[spec.id] = _BrokenBackend(spec.provider.name, spec.model, str(e))
        return out

    async def _toolboxes(self, stack: AsyncExitStack, team: Team, live: LiveRun) -> dict[str, Any]:
        boxes = await self._mcp_toolboxes(stack, team, live)
        if team.orchestrator.context_paths:  # read-only file tools, served in-process
            from massgen_mcp.tools.files import with_file_tools

            # Coding agents read and edit their own workspace copy instead.
            boxes = with_file_tools(boxes, [a.id for a in team.agents
                                            if a.provider.wire not in CLI_WIRES],
                                    team.orchestrator.context_paths)
        return boxes

    async def _mcp_toolboxes(self, stack: AsyncExitStack, team: Team, live: LiveRun
                             ) -> dict[str, Any]:
        # A coding agent's own MCP servers are handed to its CLI, not opened here.
        with_tools = [a for a in team.agents
                      if a.backend.servers() and a.provider.wire not in CLI_WIRES]
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

    def _stopped(self, live: LiveRun, team: Team, task: str, status: str,
                 error: str | None = None, after: Callable[[RunResult], Any] | None = None
                 ) -> RunResult:
        if live.result is not None:  # stopped while its tool servers were shutting down
            return live.result
        orch = live.orchestrator
        if orch is not None:
            orch.cancel(status)  # type: ignore[arg-type]
            orch.settle()
            result = orch.result()
        else:
            result = RunResult(run_id=live.run_id, status="failed", task=task[:500],
                               team=team.name, log_dir=str(live.record.dir))
        result.status = status  # type: ignore[assignment]
        result.notes = [*team.warnings, *result.notes]
        if status == "interrupted":
            error = error or f"{self.stop_reason}; this is the best answer so far"
        if error:
            result.error = error
        live.on_event("run_finished", {"status": status, "error": error})
        self._finish(live, result, after)
        return result

    def _finish(self, live: LiveRun, result: RunResult,
                after: Callable[[RunResult], Any] | None = None) -> None:
        if result.status == "interrupted" and not result.error:
            result.error = f"{self.stop_reason}; this is the best answer so far"
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
            live.record.finish(result)
        except OSError:
            log.exception("writing the record of run %s failed", live.run_id)
        finally:
            live.done.set()
            self.live.pop(live.run_id, None)  # from now on it is served from its files

    async def _close(self, backends: dict[str, Backend]) -> None:
        """Close the backends that are not kept for later runs."""
        kept = {id(b) for b in self._backend_cache.values()}
        for b in backends.values():
            if id(b) in kept:
                continue
            try:
                await b.aclose()
            except Exception:
                log.debug("closing backend failed", exc_info=True)


def _backend_key(spec: AgentSpec) -> str | None:
    """What makes two agents' backends interchangeable; None for backends bound to a call
    (sampling talks to the calling client's session; a function is looked up per run)."""
    if spec.provider.wire in ("sampling", "function"):
        return None
    key = spec.api_key.get_secret_value() if spec.api_key else ""
    options = spec.backend.model_dump_json(exclude={"api_key", "mcp_servers", "allowed_tools",
                                                    "exclude_tools"})
    digest = hashlib.sha256(key.encode()).hexdigest()  # the key itself is not kept twice
    return f"{spec.provider.name}|{spec.model}|{spec.base_url}|{digest}|{options}"
