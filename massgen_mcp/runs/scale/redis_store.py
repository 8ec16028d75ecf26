"""Run records in Redis (`--store redis://...`): any process on the same Redis serves any run.

Keys (prefix `massgen:`), all JSON text written through the run's `Redactor`:

    run:<id>:meta     the run's meta (task, team, agents, mode)
    run:<id>:status   its current status (a `RunResult`)
    run:<id>:result   its final result, written once (SET NX: whoever finalizes first wins)
    run:<id>:events   a Stream: one entry per event, fields `seq` and `event` (the JSON line)
    run:<id>:lease    who executes it (holder id), with a TTL its holder keeps renewing
    run:<id>:cancel   set when someone asked the run to stop
    runs              a sorted set of run ids by creation time (newest first for list_runs)
    task:<sha256>     a task pointer (server/tasks.py): the run a task id stands for
    usage:<provider>  a hash of counters (runs, provider_calls, tokens, cost_usd), added to
                      once per run when its final record is written

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

import functools
import json
import logging
import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import ConfigError, MassgenError, RunNotFoundError
from massgen_mcp.redaction import Redactor
from massgen_mcp.runs.scale.redis_record import PREFIX, RUNS, RedisRecord, _Leases, key
from massgen_mcp.runs.store import RUN_FINISHED, check_digest, check_run_id
from massgen_mcp.runs.store_url import masked_url, scrub
from massgen_mcp.runs.store_usage import tidy, usage_of

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])


class StoreUnavailableError(MassgenError):
    """The Redis store did not answer a read (or the start of a run)."""


def _guarded(fn: F) -> F:
    """A Redis failure in a read becomes a `MassgenError` naming the store (password
    masked) and the fix, so a tool call fails clearly and the server stays up."""
    @functools.wraps(fn)
    def wrapper(self: RedisStore, *args: Any, **kwargs: Any) -> Any:
        import redis

        try:
            return fn(self, *args, **kwargs)
        except redis.RedisError as e:
            raise self.unavailable(e) from None

    return wrapper  # type: ignore[return-value]


LEASE_TTL = 10.0  # seconds without a renewal before a run counts as abandoned
USAGE = PREFIX + "usage:"
FOLLOW_BLOCK_MS = 1000  # a follower notices an abandoned run within about this long
FOLLOW_BATCH = 500
# The final record in one step (a Redis that fails half-way leaves nothing written, and
# the writer tries again): the result if none is there yet, then its status, the final
# event, no lease or cancel flag, and the run's usage added to the counters.
_FINALIZE = """
if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then return 0 end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('XADD', KEYS[3], '*', 'seq', ARGV[3], 'event', ARGV[2])
redis.call('DEL', KEYS[4], KEYS[5])
local k = 6
for i = 4, #ARGV, 3 do
  if ARGV[i + 1] == 'f' then redis.call('HINCRBYFLOAT', KEYS[k], ARGV[i], ARGV[i + 2])
  else redis.call('HINCRBY', KEYS[k], ARGV[i], ARGV[i + 2]) end
  k = k + 1
end
return 1
"""
INTERRUPTED = ("the process running this run stopped before it finished (its lease in Redis "
               "expired); this is the state it had reached")


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
        self.connect_timeout, self.timeout = connect_timeout, timeout
        try:
            # Any: redis-py types replies as bytes | str; decode_responses=True makes them str
            self.client: Any = redis.Redis.from_url(
                url, decode_responses=True, socket_connect_timeout=connect_timeout,
                socket_timeout=timeout, retry=Retry(ExponentialBackoff(cap=0.2, base=0.02), 2))
            self.client.ping()
        except TypeError as e:  # an option redis-py does not know, from the URL's query
            raise ConfigError(
                f"--store {self.shown}: the URL has an option the Redis client does not know "
                f"({scrub(url, str(e))}); keep to db, ssl_ca_certs, ssl_cert_reqs, "
                "socket_timeout and the like") from None
        except (redis.RedisError, ValueError, OSError) as e:
            raise ConfigError(
                f"--store {self.shown}: Redis does not answer ({scrub(url, str(e))}); start "
                "redis-server there, or correct the URL (host, port, password, database)"
            ) from None
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.leases = _Leases(self)
        self._finalize = self.client.register_script(_FINALIZE)

    def unavailable(self, e: Exception) -> StoreUnavailableError:
        return StoreUnavailableError(
            f"the run store {self.shown} did not answer ({scrub(self.url, str(e))}); check "
            "that redis-server is running there (runs already going keep their results)")

    # ------------------------------------------------------------------ writing

    @_guarded
    def open(self, run_id: str, redactor: Redactor, meta: dict[str, Any]) -> RedisRecord:
        record = RedisRecord(self, run_id, redactor)
        text = redactor.json({**meta, "run_id": run_id})
        pipe = self.client.pipeline(transaction=True)
        pipe.set(key(run_id, "meta"), text)
        pipe.zadd(RUNS, {run_id: time.time()})
        pipe.execute()  # a store that cannot record the run refuses it (_guarded)
        self.leases.hold(record)
        return record

    @_guarded
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

    def finalize(self, run_id: str, result: RunResult, text: str, final_event: str,
                 seq: int) -> bool:
        """Write a run's final record once: the result (SET NX), its status, the final
        event, its usage into the counters, and drop its lease. False when another process
        finalized it first. (Redis errors reach the caller.)"""
        keys = [key(run_id, part) for part in ("result", "status", "events", "lease",
                                               "cancel")]
        args: list[Any] = [text, final_event, seq]
        for provider, row in usage_of(result).items():
            for name, value in row.items():
                if value:
                    keys.append(USAGE + provider)
                    args += [name, "f" if name == "cost_usd" else "i",
                             value if name == "cost_usd" else int(value)]
        return bool(self._finalize(keys=keys, args=args))

    # ------------------------------------------------------------------ reading

    @property
    def location(self) -> str:
        return self.shown

    @_guarded
    def exists(self, run_id: str) -> bool:
        return bool(self.client.exists(key(check_run_id(run_id), "meta"),
                                       key(run_id, "status")))

    @_guarded
    def meta(self, run_id: str) -> dict[str, Any]:
        text = self.client.get(key(check_run_id(run_id), "meta"))
        if text is None:
            raise RunNotFoundError(f"no run '{run_id}' in {self.shown}; list_runs shows the "
                                   "recent ones")
        data = _json(text, run_id, "meta")
        if not isinstance(data, dict):
            raise RunNotFoundError(f"run {run_id}: its meta in {self.shown} is not an object")
        return data

    @_guarded
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
        if self.finalize(run_id, result, text, json.dumps(final), seq):
            return result
        return _result(self.client.get(key(run_id, "result")) or text, run_id)

    @_guarded
    def ids(self, limit: int | None = None) -> list[str]:
        return list(self.client.zrevrange(RUNS, 0, (limit or 0) - 1))

    @_guarded
    def events(self, run_id: str) -> list[dict[str, Any]]:
        entries = self.client.xrange(key(check_run_id(run_id), "events"))
        if not entries and not self.exists(run_id):
            raise RunNotFoundError(f"no run '{run_id}' in {self.shown}")
        return [e for e in (_event(fields) for _id, fields in entries) if e is not None]

    @_guarded
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


    async def follow(self, run_id: str, after_seq: int = 0, *, idle: float | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        """XREAD BLOCK on the run's stream (see `RunRecords.follow`); between blocks, a run
        that reads as no longer running (its lease gone: finalized now) ends it too."""
        import redis.asyncio

        if not self.exists(run_id):
            raise RunNotFoundError(f"no run '{run_id}' in {self.shown}")
        stream, last = key(run_id, "events"), "0-0"
        client: Any = redis.asyncio.Redis.from_url(
            self.url, decode_responses=True, socket_connect_timeout=self.connect_timeout,
            socket_timeout=FOLLOW_BLOCK_MS / 1000 + self.timeout)
        quiet_since = time.monotonic()
        try:
            over = False
            while True:
                try:
                    replies = await client.xread({stream: last}, count=FOLLOW_BATCH,
                                                 block=None if over else FOLLOW_BLOCK_MS)
                except redis.RedisError as e:
                    raise self.unavailable(e) from None
                entries = replies[0][1] if replies else []
                for entry_id, fields in entries:
                    last = entry_id
                    event = _event(fields)
                    if event is None or not isinstance(event.get("seq"), int):
                        continue
                    if event["seq"] > after_seq:
                        after_seq = event["seq"]
                        quiet_since = time.monotonic()
                        yield event
                    if event.get("kind") == RUN_FINISHED:
                        return  # only the final record's event is in the stream
                if over and not entries:
                    return
                if not entries and not over:
                    # Nothing for a while: is anyone still running it? (load() finalizes
                    # an abandoned run, whose final event the next read then gets.)
                    over = self.load(run_id).status != "running"
                    if idle is not None and time.monotonic() - quiet_since >= idle:
                        quiet_since = time.monotonic()
                        yield {}
        finally:
            await client.aclose()

    @_guarded
    def put_task(self, digest: str, pointer: dict[str, Any]) -> None:
        self.client.set(f"{PREFIX}task:{check_digest(digest)}", json.dumps(pointer))

    @_guarded
    def task_pointer(self, digest: str) -> dict[str, Any] | None:
        text = self.client.get(f"{PREFIX}task:{check_digest(digest)}")
        try:
            data = json.loads(text) if text else None
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    @_guarded
    def usage(self) -> dict[str, dict[str, float]]:
        names = sorted(self.client.scan_iter(match=USAGE + "*", count=500))
        pipe = self.client.pipeline(transaction=False)
        for name in names:
            pipe.hgetall(name)
        return tidy({name[len(USAGE):]: row for name, row in zip(names, pipe.execute(),
                                                                   strict=True)})


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
