"""Run records in Redis (`--store redis://...`): any process on the same Redis serves any run.

Keys (prefix `massgen:`), all JSON text written through the run's `Redactor`:

    run:<id>:meta     the run's meta (task, team, agents, mode)
    run:<id>:status   its current status (a `RunResult`)
    run:<id>:result   its final result, written once (SET NX: whoever finalizes first wins)
    run:<id>:events   a Stream: one entry per event, fields `seq` and `event` (the JSON line)
    run:<id>:lease    who executes it (holder id), with a TTL its holder keeps renewing
    run:<id>:cancel   set when someone asked the run to stop
    runs              a sorted set of run ids by creation time (newest first for list_runs)

Liveness is the lease: a `running` run whose lease is gone reads `interrupted` with the
state it had reached, and the first reader to notice writes that as its final record (the
same rule as the file store's dead-owner check, across machines). Nothing in Redis is code
or pickle: every value read back is parsed as JSON and validated.

The writer uses redis-py's synchronous client: the orchestrator's event sink is synchronous
and one XADD on loopback costs a fraction of a millisecond (bench/store.py). A Redis that
goes away mid-run does not break the run: writes that fail are logged (once per run) and the
run ends with its result returned to its caller; the lease then expires and readers see it
`interrupted`.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
import time
from pathlib import Path
from typing import Any

from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import ConfigError, RunNotFoundError
from massgen_mcp.paths import runs_dir
from massgen_mcp.redaction import Redactor
from massgen_mcp.runs.store import RUN_FINISHED, check_run_id
from massgen_mcp.runs.store_url import masked_url, scrub

log = logging.getLogger(__name__)

PREFIX = "massgen:"
LEASE_TTL = 10.0  # seconds without a renewal before a run counts as abandoned
INTERRUPTED = ("the process running this run stopped before it finished (its lease in Redis "
               "expired); this is the state it had reached")
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
        if not self.store.finalize(self.run_id, text, self.redact.json(final), final["seq"],
                                   holder=self.store.holder, write=self._write):
            log.warning("run %s was already finalized by another process (its lease had "
                        "expired); this process's result was not recorded", self.run_id)

    def cancel_requested(self) -> bool:
        """Has any process asked this run to stop? (Polled by the lease thread, ≤ 1 s old.)"""
        return self.cancel_flag


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


class RedisStore:
    """Run records in Redis (`RunRecords`); `state` is where runs' working directories
    (workspaces, tool logs) live on this machine."""

    def __init__(self, url: str, state: Path, *, lease_ttl: float = LEASE_TTL,
                 connect_timeout: float = 3.0, timeout: float = 5.0) -> None:
        import redis
        from redis.backoff import ExponentialBackoff
        from redis.retry import Retry

        self.url = url
        self.shown = masked_url(url)
        self.state = state
        self.lease_ttl = lease_ttl
        try:
            # Any: redis-py types replies as bytes | str; decode_responses=True makes them str
            self.client: Any = redis.Redis.from_url(
                url, decode_responses=True, socket_connect_timeout=connect_timeout,
                socket_timeout=timeout, retry=Retry(ExponentialBackoff(cap=0.2, base=0.02), 2))
            self.client.ping()
        except (redis.RedisError, ValueError, OSError) as e:
            raise ConfigError(
                f"--store {self.shown}: Redis does not answer ({scrub(url, str(e))}); start "
                "redis-server there, or correct the URL (host, port, password, database)"
            ) from None
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.leases = _Leases(self)

    # ------------------------------------------------------------------ writing

    def open(self, run_id: str, redactor: Redactor, meta: dict[str, Any]) -> RedisRecord:
        record = RedisRecord(self, run_id, redactor)
        text = redactor.json({**meta, "run_id": run_id})
        pipe = self.client.pipeline(transaction=True)
        pipe.set(key(run_id, "meta"), text)
        pipe.zadd(RUNS, {run_id: time.time()})
        record._write("meta", pipe.execute)
        self.leases.hold(record)
        return record

    def attach(self, run_id: str, redactor: Redactor) -> RedisRecord:
        """Continue the record of a run opened elsewhere (a worker executing it)."""
        check_run_id(run_id)
        if not self.exists(run_id):
            raise RunNotFoundError(f"no run '{run_id}' in {self.shown}")
        last = self.client.xrevrange(key(run_id, "events"), count=1)
        seq = int(last[0][1].get("seq", 0)) if last else 0
        record = RedisRecord(self, run_id, redactor, seq=seq)
        self.leases.hold(record)
        return record

    def finalize(self, run_id: str, result: str, final_event: str, seq: int, *,
                 holder: str | None, write: Any) -> bool:
        """Write a run's final record once: the result (SET NX), its status, the final
        event, and drop its lease. False when another process finalized it first."""
        written = write("result", lambda: self.client.set(key(run_id, "result"), result,
                                                           nx=True))
        if not written:
            return written is None  # None: Redis failed (logged), not a lost race
        pipe = self.client.pipeline(transaction=True)
        pipe.set(key(run_id, "status"), result)
        pipe.xadd(key(run_id, "events"), {"seq": seq, "event": final_event})
        pipe.delete(key(run_id, "lease"), key(run_id, "cancel"))
        write("final record", pipe.execute)
        return True

    # ------------------------------------------------------------------ reading

    def exists(self, run_id: str) -> bool:
        return bool(self.client.exists(key(check_run_id(run_id), "meta"),
                                       key(run_id, "status")))

    def meta(self, run_id: str) -> dict[str, Any]:
        text = self.client.get(key(check_run_id(run_id), "meta"))
        if text is None:
            raise RunNotFoundError(f"no run '{run_id}' in {self.shown}; list_runs shows the "
                                   "recent ones")
        data = _json(text, run_id, "meta")
        if not isinstance(data, dict):
            raise RunNotFoundError(f"run {run_id}: its meta in {self.shown} is not an object")
        return data

    def load(self, run_id: str) -> RunResult:
        pipe = self.client.pipeline(transaction=False)
        for part in ("result", "status", "lease"):
            pipe.get(key(check_run_id(run_id), part))
        result_text, status_text, lease = pipe.execute()
        text = result_text or status_text
        if text is None:
            raise RunNotFoundError(f"no run '{run_id}' in {self.shown}; list_runs shows the "
                                   "recent ones")
        result = _result(text, run_id)
        if result_text or result.status != "running" or lease:
            return result
        return self._interrupted(run_id, result)

    def _interrupted(self, run_id: str, result: RunResult) -> RunResult:
        """A running run nobody holds: its state as reached, recorded as its end (once)."""
        result.status = "interrupted"
        result.error = INTERRUPTED
        events = self.events(run_id)
        if not result.started_at:
            stamp = run_id[4:20]
            result.started_at = (f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[9:11]}:"
                                 f"{stamp[11:13]}:{stamp[13:15]}Z")
        created = self.client.zscore(RUNS, run_id)
        times = [e["ts"] for e in events if isinstance(e.get("ts"), int | float)]
        if not result.elapsed_seconds and times and created is not None:
            result.elapsed_seconds = round(max(0.0, max(times) - float(created)), 3)
        seq = max((e.get("seq", 0) for e in events if isinstance(e.get("seq"), int)),
                  default=0) + 1
        final = {"seq": seq, "ts": round(time.time(), 3), "kind": RUN_FINISHED,
                 "status": "interrupted", "error": INTERRUPTED}
        text = json.dumps(result.model_dump(mode="json"), ensure_ascii=False)

        def write(_what: str, op: Any) -> Any:
            return op()

        if self.finalize(run_id, text, json.dumps(final), seq, holder=None, write=write):
            return result
        return _result(self.client.get(key(run_id, "result")) or text, run_id)

    def ids(self, limit: int | None = None) -> list[str]:
        return list(self.client.zrevrange(RUNS, 0, (limit or 0) - 1))

    def events(self, run_id: str) -> list[dict[str, Any]]:
        entries = self.client.xrange(key(check_run_id(run_id), "events"))
        if not entries and not self.exists(run_id):
            raise RunNotFoundError(f"no run '{run_id}' in {self.shown}")
        return [e for e in (_event(fields) for _id, fields in entries) if e is not None]

    def request_cancel(self, run_id: str) -> bool:
        """Ask the run to stop wherever it runs; False when it is not running anywhere."""
        pipe = self.client.pipeline(transaction=False)
        pipe.exists(key(check_run_id(run_id), "result"))
        pipe.exists(key(run_id, "lease"))
        finished, leased = pipe.execute()
        if finished or not leased:
            return False
        self.client.set(key(run_id, "cancel"), "1", ex=max(60, int(self.lease_ttl * 6)))
        return True


def _json(text: str, run_id: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise RunNotFoundError(f"run {run_id}: its {what} in Redis is unreadable ({e})") from None


def _result(text: str, run_id: str) -> RunResult:
    data = _json(text, run_id, "record")
    if isinstance(data, dict):
        data.pop("owner", None)
    return RunResult.model_validate(data)


def _event(fields: dict[str, str]) -> dict[str, Any] | None:
    try:
        data = json.loads(fields.get("event", ""))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
