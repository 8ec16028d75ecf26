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
                 seq: int, *, write: Any) -> bool: ...

log = logging.getLogger("massgen_mcp.runs.redis_store")

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


class RedisRecord:
    """The record of one run in Redis (`RunRecordWriter`)."""

    def __init__(self, store: RedisStore, run_id: str, redactor: Redactor, seq: int = 0):
        self.store = store
        self.run_id = run_id
        self.dir = runs_dir(store.state) / run_id  # workspaces and logs stay on this machine
        self.dir.mkdir(parents=True, exist_ok=True)
        self.redact = redactor
        self._seq = seq
        self._final: dict[str, Any] | None = None
        self._closed = False
        self._failed = False
        self.cancel_flag = False  # kept current by the lease thread
        self.lease_lost = False

    def _write(self, what: str, op: Any) -> Any:
        import redis

        try:
            return op()
        except redis.RedisError as e:
            if not self._failed:
                self._failed = True
                log.warning("run %s: writing its %s to %s failed (%s); the run goes on, its "
                            "record in Redis is incomplete", self.run_id, what,
                            self.store.shown, scrub(self.store.url, str(e)))
            return None

    def event(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        self._seq += 1
        line = {"seq": self._seq, "ts": round(time.time(), 3), "kind": kind, **data}
        if self._closed:
            return line
        if kind == RUN_FINISHED:
            # Held back until the final record is written: a follower that sees it can
            # read the result.
            self._final = line
            return line
        text = self.redact.json(line)
        self._write("events", lambda: self.store.client.xadd(
            key(self.run_id, "events"), {"seq": line["seq"], "event": text}))
        return line

    def clean(self, result: RunResult) -> RunResult:
        return RunResult.model_validate(self.redact.value(result.model_dump(mode="json")))

    def status(self, result: RunResult) -> None:
        if self._closed:
            return
        text = self.redact.json(result.model_dump(mode="json"))
        self._write("status", lambda: self.store.client.set(key(self.run_id, "status"), text))

    def finish(self, result: RunResult) -> None:
        if self._closed:
            return
        self._closed = True
        self.store.leases.release(self)
        final = self._final
        if final is None or final["seq"] != self._seq:
            self._seq += 1
            final = {**(final or {"kind": RUN_FINISHED, "status": result.status}),
                     "seq": self._seq, "ts": round(time.time(), 3)}
        text = self.redact.json(result.model_dump(mode="json"))
        if not self.store.finalize(self.run_id, result, text, self.redact.json(final),
                                   final["seq"], write=self._write):
            log.warning("run %s was already finalized by another process (its lease had "
                        "expired); this process's result was not recorded", self.run_id)

    def cancel_requested(self) -> bool:
        """Has any process asked this run to stop? (Polled by the lease thread, ≤ 1 s old.)"""
        return self.cancel_flag

    def hand_to_queue(self, seconds: float) -> None:
        """This run was queued for a worker (runs/dispatch.py): the lease becomes the
        queue's, for `seconds`, until a worker attaches (its own lease replaces it), and this
        process stops renewing it, so a worker that dies leaves nobody to keep it alive."""
        self.store.leases.release(self)
        self._write("lease", lambda: self.store.client.set(
            key(self.run_id, "lease"), f"queue:{self.store.holder}", px=int(seconds * 1000)))


class _Leases:
    """One thread per store renews the leases of the runs this process executes and polls
    their cancel flags, in one pipeline per tick."""

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        self.held: dict[str, RedisRecord] = {}
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.interval = min(1.0, store.lease_ttl / 3)
        self.renew = store.client.register_script(_RENEW)

    def hold(self, record: RedisRecord) -> None:
        ms = int(self.store.lease_ttl * 1000)
        record._write("lease", lambda: self.store.client.set(
            key(record.run_id, "lease"), self.store.holder, px=ms))
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

    def _loop(self) -> None:
        import redis

        stop = threading.Event()
        while not stop.wait(self.interval):
            with self.lock:
                records = list(self.held.values())
                if not records:
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
                log.warning("renewing run leases in %s failed: %s", self.store.shown,
                            scrub(self.store.url, str(e)))
                continue
            for i, r in enumerate(records):
                r.lease_lost = not replies[2 * i]
                r.cancel_flag = r.cancel_flag or bool(replies[2 * i + 1])
