"""A front end's side of the job queue: hand a prepared run to a worker and answer from its
event stream, so that progress, heartbeats, `wait=false`, tasks and `get_run` behave for the
client exactly as for a run executed here.

The front end has opened the run's record (`Engine.prepare`); it queues the call
(`runs/scale/queue.py`), then follows the record's events (`RunRecords.follow`) into the same
listeners an in-process run feeds, and returns the final result the worker recorded. While
no worker has taken the run, progress and heartbeats say so and name the command that starts
one; after `queue_timeout` the run is withdrawn and ends `interrupted` with that advice, so a
front end without workers never leaves a client waiting in silence.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio

from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import MassgenError
from massgen_mcp.runs.live import LiveRun, notify
from massgen_mcp.runs.scale.queue import RunJob, enqueue, withdraw
from massgen_mcp.runs.store import RUN_FINISHED
from massgen_mcp.runs.store_url import masked_url, scrub

if TYPE_CHECKING:
    from saq.queue.redis import RedisQueue

    from massgen_mcp.runs.engine import Engine, PreparedRun
    from massgen_mcp.runs.store import RunRecords

log = logging.getLogger(__name__)

#: Event kinds of the dispatch itself (in the run's stream like the others).
QUEUED = "queued"
WORKER_STARTED = "worker_started"
#: How often a queued run looks for a cancel request made on this front end.
CANCEL_POLL_SECONDS = 0.2
#: How long a front end keeps following a run through a store that stopped answering.
STORE_AWAY_SECONDS = 60.0
#: After the stream ends, how long the final record may take to appear (the orchestrator's
#: `run_finished` comes just before the worker writes it).
FINAL_RECORD_SECONDS = 15.0
DEFAULT_QUEUE_TIMEOUT = 300.0
#: The queue's lease outlives the queue timeout a little: the front end that queued the run
#: ends it first, with advice; the lease ends it only when that front end is gone.
QUEUE_LEASE_MARGIN = 30.0


def worker_advice(store_shown: str) -> str:
    return f"start one with `massgen-mcp worker --store {store_shown}`"


class Dispatcher:
    """Runs prepared runs by queueing them for workers (see the module docstring).

    `url` is the store's (shown with its password masked); `finish` is the runner's
    (records the outcome hook, wakes waiters, drops the run from the live ones)."""

    def __init__(self, queue: RedisQueue, store: RunRecords, *, url: str,
                 finish: Callable[..., None],
                 queue_timeout: float = DEFAULT_QUEUE_TIMEOUT) -> None:
        self.queue = queue
        self.store = store
        self.url = url
        self.store_shown = masked_url(url)
        self.finish = finish
        self.queue_timeout = queue_timeout

    async def run(self, prepared: PreparedRun) -> RunResult:
        live = prepared.live
        try:
            return await self._hand_over(prepared)
        except anyio.get_cancelled_exc_class():
            # The caller went away (or the server stops): the run goes on in its worker
            # unless someone asked to cancel it; this front end just stops following.
            with anyio.CancelScope(shield=True):
                if live.stop.requested and live.waiting is not None:
                    await self._stop_queued(live, prepared, "cancelled",
                                            "cancelled before a worker took it")
            raise
        except Exception as e:  # never leave a waiting client hanging, nor a run `running`
            log.exception("run %s: handing it to a worker failed", live.run_id)
            if live.result is None:
                self._end(live, prepared, "failed", f"handing the run to a worker failed: "
                          f"{scrub(self.url, str(e))}", write=live.waiting is not None)
            assert live.result is not None
            return live.result
        finally:
            live.done.set()

    async def _hand_over(self, prepared: PreparedRun) -> RunResult:
        live = prepared.live
        run_id = live.run_id
        # What leaves the process is redacted, the job included (keys never reach Redis).
        body = live.record.redact.value({"run_id": run_id, **(prepared.job or {})})
        job = RunJob.model_validate(body)
        live.remote = lambda: self.store.load(run_id)
        live.waiting = (f"waiting for a worker: no worker has taken this run yet; "
                        f"{worker_advice(self.store_shown)}")
        line = live.record.event(QUEUED, {"message": live.waiting,
                                          "queue_timeout": self.queue_timeout})
        notify(live.listeners, line, what="run listener")
        hand_over = getattr(live.record, "hand_to_queue", None)  # the Redis record's
        if hand_over is not None:  # the queue holds the lease until a worker attaches
            hand_over(self.queue_timeout + QUEUE_LEASE_MARGIN)
        await enqueue(self.queue, job)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._while_queued, live, prepared)
            await self._follow(live, int(line["seq"]))
            tg.cancel_scope.cancel()
        result = await self._final(run_id)
        if live.result is None:
            self.finish(live, result, prepared.after, write=False)
        return live.result or result

    async def _follow(self, live: LiveRun, seen: int) -> None:
        """The worker's events, into this front end's listeners, to the run's end. A store
        that stops answering (Redis restarting) is followed again where it left off, for up
        to STORE_AWAY_SECONDS."""
        away: float | None = None
        while True:
            try:
                async for event in self.store.follow(live.run_id, after_seq=seen):
                    away = None
                    seen = max(seen, int(event.get("seq") or 0))
                    if event.get("kind") == WORKER_STARTED:
                        live.waiting = None
                    notify(live.listeners, event, what="run listener")
                return
            except MassgenError as e:  # StoreUnavailableError: Redis went away
                now = anyio.current_time()
                away = now if away is None else away
                if now - away > STORE_AWAY_SECONDS:
                    raise
                log.warning("run %s: following it in %s: %s; trying again", live.run_id,
                            self.store_shown, e)
                await anyio.sleep(1.0)

    async def _final(self, run_id: str) -> RunResult:
        """The run's final record (the stream ended: it is written, or about to be)."""
        result = self.store.load(run_id)
        with anyio.move_on_after(FINAL_RECORD_SECONDS):
            while result.status == "running":
                await anyio.sleep(0.05)
                result = self.store.load(run_id)
        return result

    async def _while_queued(self, live: LiveRun, prepared: PreparedRun) -> None:
        """Until a worker takes the run: honour a cancel asked here, and the queue timeout."""
        deadline = anyio.current_time() + self.queue_timeout
        while live.waiting is not None:
            if live.stop.requested:
                await self._stop_queued(live, prepared, "cancelled",
                                        "cancelled before a worker took it")
                return
            if anyio.current_time() >= deadline:
                await self._stop_queued(
                    live, prepared, "interrupted",
                    f"no worker took this run within {self.queue_timeout:g} s "
                    f"(--queue-timeout): {worker_advice(self.store_shown)} (with the same "
                    "--team/--team-dir and provider keys as this server)")
                return
            await anyio.sleep(CANCEL_POLL_SECONDS)

    async def _stop_queued(self, live: LiveRun, prepared: PreparedRun, status: str,
                           why: str) -> None:
        """End a run no worker has taken, if it is still in the queue (else its worker ends
        it: it sees the cancel request in the store)."""
        if not await withdraw(self.queue, live.run_id, why):
            return  # a worker has it: it sees the cancel request, or it was just taken
        live.waiting = None
        self._end(live, prepared, status, why)

    def _end(self, live: LiveRun, prepared: PreparedRun, status: str, why: str, *,
             write: bool = True) -> None:
        """End the run here with `status` and `why`; `write`: the record too (not when a
        worker has the run: its record is the worker's to finish)."""
        live.waiting = None
        result = RunResult(run_id=live.run_id, status=status,  # type: ignore[arg-type]
                           task=prepared.task[:500], team=prepared.team.name,
                           log_dir=str(live.record.dir), error=why)
        if write:
            try:
                live.record.event(RUN_FINISHED, {"status": status, "error": why})
            except Exception:  # the store is away: the caller still gets the result
                log.warning("run %s: recording its end failed", live.run_id, exc_info=True)
        self.finish(live, result, prepared.after, write=write)


def dispatch_to_workers(engine: Engine, queue_timeout: float = DEFAULT_QUEUE_TIMEOUT) -> None:
    """Make `engine` (on the Redis store) hand the runs of tool calls to workers."""
    from massgen_mcp.runs.scale.queue import queue_on

    url: str = getattr(engine.store, "url")  # noqa: B009 (the Redis store's; Protocol has none)
    engine.dispatcher = Dispatcher(queue_on(url), engine.store, url=url,
                                   finish=engine.runner.finish, queue_timeout=queue_timeout)
