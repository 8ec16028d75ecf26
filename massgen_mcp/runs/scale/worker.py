"""A worker's side of the job queue: take run jobs, execute each on the record its front end
opened, honour cancellation from any replica, stop truthfully.

A job is executed at most once. The queue hands it to one worker (`retries=1`), and the
worker claims the run in Redis (`SET NX`) before touching it, so a job queued twice, or
handed out again by the queue after a worker stopped, never runs twice, let alone at once.

A worker killed mid-run (SIGKILL, a lost machine) is not replaced by another: its run's lease
runs out and the run ends `interrupted` with the best answer so far (decision 5 of SCALE.md).
Taking it over would mean starting it again, since an orchestration's state lives in its
process: every provider call already made would be paid for twice, the run's event stream
would hold two executions that disagree, and the client would wait for a second full run
instead of getting, within seconds, the answers the first had reached.

Everything that makes a run's result (budgets, output caps, workspaces, tool servers, early
stop) is the in-process `Runner` (runs/runner.py): a worker is the same engine, fed from
the queue. What the worker needs of the application (rebuilding a call's team and mode) is
given to it as `build`, by the `massgen-mcp worker` command (cli/worker.py).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import MassgenError, RunNotFoundError
from massgen_mcp.redaction import Redactor, configured_secrets
from massgen_mcp.runs.scale.dispatch import WORKER_STARTED
from massgen_mcp.runs.scale.queue import (
    JOB_TOUCH_SECONDS,
    RUN_FUNCTION,
    MalformedJob,
    RunJob,
    read_job,
)

if TYPE_CHECKING:
    from saq.queue.redis import RedisQueue
    from saq.types import Context

    from massgen_mcp.runs.engine import Engine, PreparedRun

log = logging.getLogger(__name__)

#: How long a claim on a run is kept (a run is never executed again after its claim).
CLAIM_SECONDS = 7 * 86400
#: After the drain, how long interrupted runs get to record how they ended.
STOP_SECONDS = 15.0

Build = Callable[[RunJob], Awaitable["PreparedRun"]]


def worker_id() -> str:
    """This worker's name in records and logs: host, pid and a random suffix."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"


class RunWorker:
    """Executes queued runs on `engine` (a plain, non-dispatching engine on the shared store).

    `build` turns a job into a prepared run attached to the job's record, or raises a
    `MassgenError` saying why this worker will not run it (the run then ends `failed` with
    that message)."""

    def __init__(self, queue: RedisQueue, engine: Engine, build: Build, *,
                 concurrency: int = 4, drain_seconds: float = 15.0,
                 name: str | None = None) -> None:
        self.queue = queue
        self.engine = engine
        self.build = build
        self.concurrency = concurrency
        self.drain_seconds = drain_seconds
        self.name = name or worker_id()
        self.active: dict[str, anyio.CancelScope] = {}
        self.idle = anyio.Event()
        self.idle.set()
        self.stopping = False

    @classmethod
    def on_store(cls, engine: Engine, build: Build, **options: Any) -> RunWorker:
        """A worker on the queue of `engine`'s store (the Redis store: its `url`)."""
        from massgen_mcp.runs.scale.queue import queue_on

        url: str = getattr(engine.store, "url")  # noqa: B009 (the Redis store's)
        return cls(queue_on(url), engine, build, **options)

    # ------------------------------------------------------------------ serving

    async def serve(self, stop: anyio.Event, now: anyio.Event | None = None) -> None:
        """Take jobs until `stop` is set; then finish the runs in hand for up to
        `drain_seconds` (or until `now` is set), and interrupt the rest, recorded as such."""
        from saq import Worker

        worker = Worker(
            self.queue, functions=[(RUN_FUNCTION, self._job)], id=self.name,
            concurrency=self.concurrency,
            dequeue_timeout=1.0,  # a stop is noticed between two takes
            # By the time saq stops, the runs are over (drained or interrupted below): what
            # is left are its upkeep loops, asleep between two rounds.
            shutdown_grace_period_s=1,
            # saq's own abort would cancel a run's task when its sweep misjudges a job just
            # taken: runs are stopped through the store (`request_cancel`), never by saq.
            timers={"sweep": 60, "abort": 86400, "schedule": 1, "worker_info": 10})
        worker.SIGNALS = []  # signals are the command's (cli/worker.py), not saq's
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker.start)
            await stop.wait()
            self.stopping = True
            worker.event.set()  # take no more jobs
            log.warning("worker %s stopping: %d run(s) in hand", self.name, len(self.active))
            with anyio.move_on_after(self.drain_seconds):
                async with anyio.create_task_group() as wait:
                    wait.start_soon(_set_when, self.idle, wait.cancel_scope)
                    if now is not None:
                        wait.start_soon(_set_when, now, wait.cancel_scope)
            if self.active:
                self.interrupt()
                with anyio.move_on_after(STOP_SECONDS):
                    await self.idle.wait()
                for scope in list(self.active.values()):  # the last resort
                    scope.cancel()
        with anyio.CancelScope(shield=True):
            await self.queue.disconnect()

    def interrupt(self) -> None:
        """Stop every run in hand now: each ends `interrupted` with its best answer."""
        self.engine.shut_down("the worker running it was stopped (SIGTERM) while the run was "
                              "live")
        for run_id in list(self.active):
            self.engine.cancel(run_id)

    # ------------------------------------------------------------------ one job

    async def _job(self, ctx: Context, **_: Any) -> dict[str, Any]:
        """saq's job function. Never raises for a job it refuses: the reason is logged (and
        recorded on the run when there is one), and the queue marks the job done."""
        entry = ctx.get("job")
        try:
            job = read_job(getattr(entry, "kwargs", None))
        except MalformedJob as e:
            log.error("worker %s: dropped queue entry %s: %s", self.name,
                      getattr(entry, "key", "?"), e)
            return {"refused": str(e)}
        if not await self._claim(job.run_id):
            log.warning("worker %s: run %s is claimed by another worker; job dropped",
                        self.name, job.run_id)
            return {"skipped": "claimed by another worker"}
        try:
            state = self.engine.store.load(job.run_id)
        except (RunNotFoundError, ValueError) as e:
            log.error("worker %s: job for run %s has no record (%s); dropped", self.name,
                      job.run_id, e)
            return {"refused": "no such run"}
        except MassgenError as e:  # the store is away: the run's lease ends it
            log.error("worker %s: run %s: %s; job dropped", self.name, job.run_id, e)
            return {"refused": str(e)}
        if state.status != "running":  # ended while queued (cancelled, queue timeout)
            return {"skipped": f"the run is already {state.status}"}
        scope = anyio.CancelScope()
        if not self.active:
            self.idle = anyio.Event()
        self.active[job.run_id] = scope
        try:
            with scope:
                return await self._execute(job, entry)
            return {"status": "interrupted"}
        finally:
            self.active.pop(job.run_id, None)
            if not self.active:
                self.idle.set()

    async def _execute(self, job: RunJob, entry: Any) -> dict[str, Any]:
        try:
            prepared = await self.build(job)
        except Exception as e:
            error = str(e) if isinstance(e, MassgenError) else \
                f"internal error preparing the run: {type(e).__name__}: {e}"
            log.error("worker %s: refused run %s: %s", self.name, job.run_id, error,
                      exc_info=not isinstance(e, MassgenError))
            try:
                self._refuse(job.run_id, error)
            except Exception:  # the store is away: the run's lease ends it, unanswered here
                log.exception("worker %s: recording the refusal of %s failed", self.name,
                              job.run_id)
            return {"status": "failed", "error": error}
        live = prepared.live
        prepared.after = None  # the outcome (a stored plan) is the front end's to make
        live.on_event(WORKER_STARTED, {"worker": self.name,
                                       "message": f"a worker took the run ({self.name})"})
        if live.record.cancel_requested():
            # asked while queued: it stops before any call
            live.stop.request(self.engine.runner.stop_status())
        async with anyio.create_task_group() as tg:
            if entry is not None:
                tg.start_soon(self._watch, prepared, entry)
            result = await prepared.start()
            tg.cancel_scope.cancel()
        return {"status": result.status}

    async def _watch(self, prepared: PreparedRun, entry: Any) -> None:
        """While the run goes, keep the queue's heartbeat of its job (a cancel asked anywhere
        is the runner's to see: `Runner._watch_cancel`)."""
        while prepared.live.result is None:
            await anyio.sleep(JOB_TOUCH_SECONDS)
            try:
                await entry.update()
            except Exception:  # the queue's bookkeeping only: the run goes on
                log.debug("touching job %s failed", prepared.run_id, exc_info=True)

    async def _claim(self, run_id: str) -> bool:
        key = f"massgen-mcp:claim:{run_id}"
        return bool(await self.queue.redis.set(key, self.name, nx=True, ex=CLAIM_SECONDS))

    def _refuse(self, run_id: str, error: str) -> None:
        """End a run this worker will not execute: `failed`, with the reason."""
        store = self.engine.store
        record = store.attach(run_id, Redactor(configured_secrets(env=self.engine.env)))
        try:
            result = store.load(run_id)
        except (RunNotFoundError, ValueError):
            result = RunResult(run_id=run_id, status="failed", task="")
        result.status = "failed"
        result.error = error
        record.event("run_finished", {"status": "failed", "error": error})
        record.finish(record.clean(result))


async def _set_when(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()
