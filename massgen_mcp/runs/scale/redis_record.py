"""The writer side of the Redis store: one run's record (`RedisRecord`), and the lease
thread that keeps the leases of the runs this process executes alive and polls their cancel
flags (see redis_store.py for the keys).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from massgen_mcp.coordination.result import RunResult
from massgen_mcp.paths import runs_dir
from massgen_mcp.redaction import Redactor
from massgen_mcp.runs.store import RUN_FINISHED
from massgen_mcp.runs.store_url import scrub


class RedisStore(Protocol):
    """What a record needs of its store (redis_store.py's `RedisStore`)."""

    client: Any
    url: str
    shown: str
    state: Path
    holder: str
    lease_ttl: float
    leases: _Leases

    def finalize(self, run_id: str, result: RunResult, text: str, final_event: str,
                 seq: int) -> bool: ...

log = logging.getLogger("massgen_mcp.runs.scale.redis_store")

PREFIX = "massgen:"
# Renews the lease if this holder still has it; takes it back if it lapsed while nobody
# finalized the run (a pause longer than the TTL); 0 when another holder or a final record
# has it.
_RENEW = """
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if (not v) and redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""


def key(run_id: str, part: str) -> str:
    return f"{PREFIX}run:{run_id}:{part}"


RUNS = PREFIX + "runs"
#: Events kept for a Redis that stopped answering mid-run (a long run writes a few thousand).
BACKLOG_MAX = 20_000


class RedisRecord:
    """The record of one run in Redis (`RunRecordWriter`).

    If Redis stops answering mid-run, the run goes on: what it writes (events in order, its
    latest status, its final record) waits here, bounded, and the lease thread writes it
    once Redis answers again, before the final record. The lease is renewed meanwhile, so
    the run resumes in its record instead of reading `interrupted`; if this process ends
    first, the lease expires and readers see the run `interrupted` with its state so far.
    """

    def __init__(self, store: RedisStore, run_id: str, redactor: Redactor, seq: int = 0):
        self.store = store
        self.run_id = run_id
        self.dir = runs_dir(store.state) / run_id  # workspaces and logs stay on this machine
        self.dir.mkdir(parents=True, exist_ok=True)
        self.redact = redactor
        self._seq = seq
        self._final: dict[str, Any] | None = None
        self._closed = False
        self.cancel_flag = False  # kept current by the lease thread
        self.beat: float | None = None  # when the executing loop last polled cancel_requested
        #: Another process holds the run, or finalized it (`interrupted`, after this process
        #: stopped renewing): this record writes nothing more (`lose_lease`).
        self.lease_lost = False
        self._lock = threading.Lock()
        self._backlog: list[dict[str, Any]] = []  # stream entries Redis has not taken yet
        self._dropped = 0
        self._status: str | None = None  # the latest status Redis has not taken yet
        self._ending: tuple[RunResult, str, str, int] | None = None  # the final record, ditto

    @property
    def closed(self) -> bool:
        """Finished here (its final record written, or waiting for Redis to take it)."""
        return self._closed

    @property
    def behind(self) -> bool:
        """Is something waiting for Redis to answer again?"""
        return bool(self._backlog or self._status is not None or self._ending is not None)

    def _away(self, what: str, e: Exception) -> None:
        if not self.behind:
            log.warning("run %s: Redis at %s did not take its %s (%s); the run goes on and "
                        "its record catches up when Redis answers again", self.run_id,
                        self.store.shown, what, scrub(self.store.url, str(e)))

    def event(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        import redis

        self._seq += 1
        line = {"seq": self._seq, "ts": round(time.time(), 3), "kind": kind, **data}
        if self._closed:
            return line
        if kind == RUN_FINISHED:
            # Held back until the final record is written: a follower that sees it can
            # read the result.
            self._final = line
            return line
        entry = {"seq": line["seq"], "event": self.redact.json(line)}
        with self._lock:
            if self.lease_lost:
                return line
            if not self.behind:
                try:
                    self.store.client.xadd(key(self.run_id, "events"), entry)
                    return line
                except redis.RedisError as e:
                    self._away("events", e)
            if len(self._backlog) < BACKLOG_MAX:
                self._backlog.append(entry)
            else:
                self._dropped += 1
        return line

    def clean(self, result: RunResult) -> RunResult:
        return RunResult.model_validate(self.redact.value(result.model_dump(mode="json")))

    def status(self, result: RunResult) -> None:
        import redis

        if self._closed:
            return
        text = self.redact.json(result.model_dump(mode="json"))
        with self._lock:
            if self.lease_lost:
                return
            if not self.behind:
                try:
                    self.store.client.set(key(self.run_id, "status"), text)
                    return
                except redis.RedisError as e:
                    self._away("status", e)
            self._status = text

    def finish(self, result: RunResult) -> None:
        if self._closed:
            return
        self._closed = True
        if self.lease_lost:
            return
        final = self._final
        if final is None or final["seq"] != self._seq:
            self._seq += 1
            final = {**(final or {"kind": RUN_FINISHED, "status": result.status}),
                     "seq": self._seq, "ts": round(time.time(), 3)}
        text = self.redact.json(result.model_dump(mode="json"))
        with self._lock:
            self._ending = (result, text, self.redact.json(final), final["seq"])
        if self.catch_up():
            self.store.leases.release(self)

    def catch_up(self) -> bool:
        """Write what waits (events, status, final record), in that order; True once the
        final record is written (or lost to another process's finalization)."""
        import redis

        with self._lock:
            try:
                if self._backlog:
                    pipe = self.store.client.pipeline(transaction=False)
                    for entry in self._backlog:
                        pipe.xadd(key(self.run_id, "events"), entry)
                    pipe.execute()
                    self._backlog.clear()
                    if self._dropped:
                        log.warning("run %s: %d events were dropped while Redis was away",
                                    self.run_id, self._dropped)
                if self._status is not None and self._ending is None:
                    self.store.client.set(key(self.run_id, "status"), self._status)
                self._status = None
                if self._ending is None:
                    return False
                result, text, final, seq = self._ending
                if not self.store.finalize(self.run_id, result, text, final, seq):
                    log.warning("run %s was already finalized by another process (its lease "
                                "had expired); this process's result was not recorded",
                                self.run_id)
                self._ending = None
                return True
            except redis.RedisError as e:
                self._away("record", e)
                return False

    def lose_lease(self) -> None:
        """The lease thread found the run's lease held by another process, or the run
        finalized: what this process still has of the run is not written."""
        with self._lock:
            self.lease_lost = True
            self._backlog.clear()
            self._status = self._ending = None
        log.warning("run %s: this process lost its lease in %s (the run was finalized, or "
                    "another process holds it); what it still writes is dropped", self.run_id,
                    self.store.shown)

    def cancel_requested(self) -> bool:
        """Has any process asked this run to stop? (Polled by the lease thread, ≤ 0.5 s old.)
        The runner's event loop asks every 0.25 s: that is also its sign of life. A run whose
        lease is lost stops too: nothing it still does would be recorded, so every further
        provider call would be money spent on an outcome nobody can read."""
        self.beat = time.monotonic()
        return self.cancel_flag or self.lease_lost

    def alive(self) -> bool:
        """Should the lease thread renew this run's lease? Yes, unless the event loop that
        polled `cancel_requested` stopped polling for a whole TTL (a wedged loop must not
        keep a run `running` forever through a thread that is still fine)."""
        return self.beat is None or time.monotonic() - self.beat < self.store.lease_ttl

    def hand_to_queue(self, seconds: float) -> None:
        """This run was queued for a worker (runs/scale/dispatch.py): the lease becomes the
        queue's, for `seconds`, until a worker attaches (its own lease replaces it), and this
        process stops renewing it, so a worker that dies leaves nobody to keep it alive."""
        import redis

        self.store.leases.release(self)
        try:
            self.store.client.set(key(self.run_id, "lease"), f"queue:{self.store.holder}",
                                  px=int(seconds * 1000))
        except redis.RedisError as e:
            self._away("lease", e)


class _Leases:
    """One thread per store renews the leases of the runs this process executes and polls
    their cancel flags, in one pipeline per tick."""

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        self.held: dict[str, RedisRecord] = {}
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        # 0.5 s: a cancel asked on another replica reaches the run well within 1 s
        self.interval = min(0.5, store.lease_ttl / 3)
        self.down = False
        self.renew = store.client.register_script(_RENEW)

    def hold(self, record: RedisRecord) -> None:
        """Take the run's lease (a Redis error here reaches the caller: the run cannot
        start) and keep it renewed."""
        ms = int(self.store.lease_ttl * 1000)
        self.store.client.set(key(record.run_id, "lease"), self.store.holder, px=ms)
        with self.lock:
            self.held[record.run_id] = record
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, name="massgen-leases",
                                               daemon=True)
                self.thread.start()

    def release(self, record: RedisRecord) -> None:
        with self.lock:
            if self.held.get(record.run_id) is record:
                del self.held[record.run_id]

    def _lost(self, record: RedisRecord) -> None:
        """Its renewal found the lease another's or the run finalized. Not lost: a record
        released meanwhile (handed to the queue: the lease is the queue's), or one whose
        final record is written (finalizing dropped the lease)."""
        with self.lock:
            if self.held.get(record.run_id) is not record:
                return
            del self.held[record.run_id]
        if not (record.closed and not record.behind):
            record.lose_lease()

    def _loop(self) -> None:
        import redis

        stop = threading.Event()
        while not stop.wait(self.interval):
            with self.lock:
                records = [r for r in self.held.values() if r.alive() or r.closed]
                if not self.held:
                    self.thread = None
                    return
            ms = int(self.store.lease_ttl * 1000)
            try:
                pipe = self.store.client.pipeline(transaction=False)
                for r in records:
                    self.renew(keys=[key(r.run_id, "lease"), key(r.run_id, "result")],
                               args=[self.store.holder, ms], client=pipe)
                    pipe.exists(key(r.run_id, "cancel"))
                replies = pipe.execute()
            except redis.RedisError as e:
                if not self.down:  # once per outage, not every second
                    log.warning("renewing run leases in %s failed: %s; retrying every %.1f s",
                                self.store.shown, scrub(self.store.url, str(e)), self.interval)
                self.down = True
                continue
            if self.down:
                log.warning("Redis at %s answers again", self.store.shown)
                self.down = False
            for i, r in enumerate(records):
                if not replies[2 * i]:
                    self._lost(r)
                    continue
                r.cancel_flag = r.cancel_flag or bool(replies[2 * i + 1])
                if r.behind and r.catch_up():  # Redis is back: the record catches up
                    self.release(r)
