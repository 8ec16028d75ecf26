"""Runs a team on a task, and keeps track of the runs: the one object every caller's `App`
holds.

The `Engine` puts together what each does on its own: the run records (`store.py`, one
interface), the registry of runs live in this process (`live.py`), running a run here
(`runner.py`) or handing it to a worker (`scale/dispatch.py`), and the backends kept across
runs (`pool.py`). Its own part is preparing a run, and reading and cancelling runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio

from massgen_mcp.backends import BackendContext
from massgen_mcp.config.env import Environment
from massgen_mcp.config.team import Team
from massgen_mcp.coordination.answers import AnswerFormat
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import InputError, MassgenError, RunNotFoundError
from massgen_mcp.inputs import screen_inputs
from massgen_mcp.paths import state_dir
from massgen_mcp.redaction import Redactor, configured_secrets, install_log_redaction
from massgen_mcp.runs.live import Listener, LiveRun
from massgen_mcp.runs.owners import LOCAL, LOCAL_NAME, Principal, hidden, owner_in
from massgen_mcp.runs.pool import BackendPool
from massgen_mcp.runs.runner import SERVER_STOPPED, Runner
from massgen_mcp.runs.store import RunRecords, RunStore, check_run_id, new_run_id

log = logging.getLogger(__name__)

#: Run owners kept in memory (a run's owner never changes; this only bounds the table).
OWNERS_KEPT = 10_000

__all__ = ["Engine", "Listener", "PreparedRun"]


class Dispatch(Protocol):
    """Runs prepared runs elsewhere (runs/scale/dispatch.py: queued for a worker)."""

    async def run(self, prepared: PreparedRun) -> RunResult: ...


@dataclass
class PreparedRun:
    """A run whose team, task and context are settled; `start()` runs it to the end."""

    engine: Engine
    live: LiveRun
    team: Team
    task: str
    context: str | None
    answer_format: AnswerFormat | None = None
    backend_context: BackendContext | None = None
    #: Runs on the finished result (e.g. stores the winning plan); its value is `outcome`.
    after: Callable[[RunResult], Any] | None = None
    #: The run as a worker can prepare it again (`runs/scale/queue.py` RunJob without the run
    #: id: mode arguments and team reference), or None when only this process can run it.
    job: dict[str, Any] | None = None

    @property
    def run_id(self) -> str:
        return self.live.run_id

    @property
    def outcome(self) -> Any:
        if self.live.outcome_error:
            raise MassgenError(self.live.outcome_error)
        return self.live.outcome

    def cancel(self) -> bool:
        """Ask the run to stop (False when it is not running)."""
        return self.engine.cancel(self.run_id)

    async def start(self) -> RunResult:
        """Run to the end (here, or on a worker when there are workers and the run has a
        `job`) and return the final result. Raises nothing but cancellation: whatever fails
        ends in the run's record."""
        dispatcher = self.engine.dispatcher
        try:
            if dispatcher is not None and self.job is not None:
                return await dispatcher.run(self)
            return await self.engine.runner.run(
                self.live, self.team, self.task, context=self.context,
                answer_format=self.answer_format, backend_context=self.backend_context,
                after=self.after)
        except Exception as e:  # a bug even in recording how the run ended: still wake
            log.exception("run %s: its end could not be recorded", self.run_id)  # waiters
            live = self.live
            if live.result is None:
                live.result = RunResult(run_id=self.run_id, status="failed",
                                        task=self.task[:500], team=self.team.name,
                                        log_dir=str(live.record.dir),
                                        error=f"internal error: {type(e).__name__}: {e}")
            live.done.set()
            self.engine.live.pop(self.run_id, None)
            return live.result


class Engine:
    def __init__(self, state: Path | None = None, env: Environment | None = None, *,
                 store: RunRecords | None = None, pool: BackendPool | None = None) -> None:
        self.state = state or state_dir()
        self.env = env or Environment()
        self.store: RunRecords = store if store is not None else RunStore(self.state)
        self.live: dict[str, LiveRun] = {}
        self.pool = pool if pool is not None else BackendPool()
        self.runner = Runner(self.env, self.pool, self.live)
        #: Set on a front end that hands runs to workers (`--store redis://`,
        #: runs/scale/dispatch.py).
        self.dispatcher: Dispatch | None = None
        self._owners: dict[str, str] = {}  # run id -> owner: written once, never changes

    # ------------------------------------------------------------------ running

    def prepare(
        self,
        team: Team,
        task: str,
        *,
        context: str | None = None,
        mode: str = "consensus",
        answer_format: AnswerFormat | None = None,
        backend_context: BackendContext | None = None,
        listener: Listener | None = None,
        title: str | None = None,
        run_id: str | None = None,
        owner: str = LOCAL_NAME,
        follow_up_of: str | None = None,
    ) -> PreparedRun:
        """A run with its id and record, ready to `start()`: callers can return the id before
        the run starts. `title`: the user's own words when `task` is a prompt built from them
        (a plan's goal, a checkpoint's objective); pages and reports show it. `run_id`: a
        worker running a run a front end prepared attaches to that record instead
        (`RunRecords.attach`). `owner`: the user who started it (runs/owners.py)."""
        if not isinstance(task, str) or not task.strip():
            raise InputError("the task is empty: say what the team should answer or decide")
        # Bounded, and without the configured keys, before anything reaches a provider.
        task, context = screen_inputs(task, context, configured_secrets(team, self.env))
        redactor = Redactor(configured_secrets(team, self.env))
        install_log_redaction(redactor.secrets)  # the team file's own keys, in debug logs too
        if run_id is not None:
            record = self.store.attach(check_run_id(run_id), redactor)
        else:
            run_id = new_run_id()
            record = self.store.open(run_id, redactor, self._meta(team, task, mode, title,
                                                                  owner, follow_up_of))
        live = LiveRun(run_id, record, follow_up_of=follow_up_of)
        if listener is not None:
            live.listeners.append(listener)
        # status.json exists from the start, so a run whose process dies is never lost
        record.status(RunResult(run_id=run_id, status="running", task=task[:500],
                                team=team.name, log_dir=str(record.dir),
                                follow_up_of=follow_up_of))
        self.live[run_id] = live
        return PreparedRun(self, live, team, task, context, answer_format, backend_context)

    @staticmethod
    def _meta(team: Team, task: str, mode: str, title: str | None, owner: str,
              follow_up_of: str | None) -> dict[str, Any]:
        """What a front end records when it opens a run (`App.run_meta` reads it back)."""
        meta: dict[str, Any] = {
            "task": task, "team": team.name, "source": team.source, "mode": mode,
            "owner": owner,
            "agents": [{"id": a.id, "provider": a.provider.name, "model": a.model}
                       for a in team.agents]}
        if title and title.strip():
            meta["title"] = title.strip()[:500]
        if follow_up_of:
            meta["follow_up_of"] = follow_up_of
        if team.warnings:  # keys of the team file accepted but not honoured
            meta["warnings"] = list(team.warnings)
        return meta

    # ------------------------------------------------------------------ stopping

    def cancel(self, run_id: str) -> bool:
        """Ask a run to stop; False when it is not running. A run live in this process is
        stopped here; any other (executed by a worker, or by another replica) through the
        store, whose executing process sees the request within a second."""
        live = self.live.get(check_run_id(run_id))
        if live is None or live.result is not None:
            return self.store.request_cancel(run_id)
        live.stop.request(self.runner.stop_status())
        if live.remote is not None:  # a worker runs it (a queued one is withdrawn here)
            self.store.request_cancel(run_id)
        return True

    async def cancel_and_wait(self, run_id: str, timeout: float = 10.0) -> tuple[bool, str]:
        """Stop a run and wait (bounded) until its record says how it ended; returns
        whether a stop was requested and the status the run has now."""
        live = self.live.get(check_run_id(run_id))
        requested = self.cancel(run_id)
        if requested:
            with anyio.move_on_after(timeout):
                if live is not None:
                    await live.done.wait()
                else:  # run elsewhere: its stream ends with its final record
                    async for _ in self.store.follow(run_id):
                        pass
        return requested, self.get(run_id).status

    def shut_down(self, reason: str | None = None) -> None:
        """From now on, runs that stop are recorded `interrupted`, with `reason` (else the
        reason given before, else that the server stopped)."""
        self.runner.shutdown_reason = reason or self.runner.shutdown_reason or SERVER_STOPPED
        self.pool.kill_standbys()  # warm coding-agent CLIs kept for later runs (pool.py)

    async def wait_for_live_runs(self) -> None:
        """Until every run live in this process has closed its record."""
        for live in list(self.live.values()):
            await live.done.wait()

    # ------------------------------------------------------------------ reading

    def live_run(self, run_id: str) -> LiveRun | None:
        return self.live.get(run_id)

    def get(self, run_id: str) -> RunResult:
        live = self.live.get(check_run_id(run_id))
        if live is not None:
            snap = live.snapshot()
            if snap is not None:
                return snap
        return self.store.load(run_id)

    def owner(self, run_id: str) -> str:
        """Who started the run (from its meta; kept once read: it never changes)."""
        owner = self._owners.get(run_id)
        if owner is None:
            owner = owner_in(self.store.meta(run_id))
            if len(self._owners) >= OWNERS_KEPT:
                self._owners.clear()
            self._owners[run_id] = owner
        return owner

    def visible(self, run_id: str, who: Principal) -> str:
        """`run_id` when `who` may see the run; else the very error an unknown id gets."""
        run_id = check_run_id(run_id)
        if who.admin:
            return run_id
        try:
            owner = self.owner(run_id)
        except MassgenError:
            raise hidden(run_id, self.store.location) from None
        if not who.may_see(owner):
            raise hidden(run_id, self.store.location)
        return run_id

    def list(self, limit: int = 20, who: Principal = LOCAL) -> list[RunResult]:
        out = []
        for run_id in self.store.ids():
            try:
                out.append(self.get(self.visible(run_id, who)))
            except RunNotFoundError as e:
                if who.admin:
                    log.warning("skipping run %r: %s", str(run_id)[:80], e)
            except (MassgenError, ValueError) as e:
                # One unreadable record (or a malformed id in a shared index) must not
                # take the whole list down.
                log.warning("skipping run %r: %s", str(run_id)[:80], e)
            if len(out) >= limit:
                break
        return out
