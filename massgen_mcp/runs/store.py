"""Run records: one interface (`RunRecords`, `RunRecordWriter`), files by default.

`RunStore` keeps them on disk: `<state>/runs/<run_id>/{meta.json,events.jsonl,status.json,
result.json}`. Every write is redacted (no API key reaches a file) and the JSON files are
replaced atomically, so a reader never sees half a file. A run that was live in a process
that has since died is reported `interrupted`, never lost. `RedisStore` (redis_store.py)
implements the same interface for several processes; everything that reads runs (get_run,
list_runs, resources, tasks, the viewer, export) goes through it.
"""

from __future__ import annotations

import functools
import json
import os
import re
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

import anyio

from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import InputError, RunNotFoundError
from massgen_mcp.paths import open_private, private_dir, runs_dir, write_atomic
from massgen_mcp.redaction import Redactor
from massgen_mcp.runs.store_usage import add_file_usage, read_file_usage

#: The kind of a run's last event (the orchestrator's, or the one written when an abandoned
#: run is finalized as interrupted).
RUN_FINISHED = "run_finished"
#: How often a file-store follower looks for new lines (the Redis store blocks on its stream).
FOLLOW_POLL_SECONDS = 0.2


class RunRecordWriter(Protocol):
    """The record of one run as it is written. `dir` is the run's working directory on this
    machine (agents' workspaces, tool-server logs), whichever store keeps the record."""

    run_id: str
    dir: Path
    redact: Redactor

    def event(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        """Append one event (redacted); returns it as recorded (with `seq` and `ts`)."""
        ...

    def clean(self, result: RunResult) -> RunResult:
        """`result` as it may leave the process: keys redacted, text encodable."""
        ...

    def status(self, result: RunResult) -> None:
        """Replace the run's current status (readable by other processes)."""
        ...

    def finish(self, result: RunResult) -> None:
        """Record the final result (and add its usage to the store's counters); nothing is
        written after it."""
        ...

    def cancel_requested(self) -> bool:
        """Has any process asked this run to stop (`RunRecords.request_cancel`)? Cheap
        enough to poll every second."""
        ...


class RunRecords(Protocol):
    """Where runs are recorded and read back. `RunStore` (files) is the default; another
    store (e.g. Redis) implements the same methods."""

    def open(self, run_id: str, redactor: Redactor, meta: dict[str, Any]) -> RunRecordWriter:
        """Start the record of a new run."""
        ...

    def load(self, run_id: str) -> RunResult:
        """A run's result, or its last status (a dead owner's run reads as interrupted);
        `RunNotFoundError` when there is none."""
        ...

    def ids(self, limit: int | None = None) -> list[str]:
        """Run ids, newest first."""
        ...

    def events(self, run_id: str) -> list[dict[str, Any]]:
        """A run's events, in order."""
        ...

    @property
    def location(self) -> str:
        """Where the records are, for messages: a directory, or a URL without its password."""
        ...

    def meta(self, run_id: str) -> dict[str, Any]:
        """The run's meta (task, team, mode, agents, title); `RunNotFoundError` if none."""
        ...

    def exists(self, run_id: str) -> bool:
        ...

    def follow(self, run_id: str, after_seq: int = 0, *, idle: float | None = None
               ) -> AsyncIterator[dict[str, Any]]:
        """The run's events after `after_seq`, waiting for new ones; ends once the run's
        final record is written, or when the run reads as no longer running. With `idle`,
        an empty dict after that many seconds without an event (an SSE keep-alive)."""
        ...

    def attach(self, run_id: str, redactor: Redactor) -> RunRecordWriter:
        """Continue the record of a run opened by another process (its `seq` goes on)."""
        ...

    def request_cancel(self, run_id: str) -> bool:
        """Ask the run to stop wherever it executes; False when it is not running."""
        ...

    def put_task(self, digest: str, pointer: dict[str, Any]) -> None:
        """Keep a task pointer (server/tasks.py: the SHA-256 of a task id -> its run)."""
        ...

    def task_pointer(self, digest: str) -> dict[str, Any] | None:
        ...

    def usage(self) -> dict[str, dict[str, float]]:
        """Per-provider counters of every finished run on this store, all processes."""
        ...


_RUN_ID = re.compile(r"^run_[0-9]{8}T[0-9]{6}Z_[0-9a-f]{6}$")


_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def check_digest(digest: str) -> str:
    """A task pointer's name is a SHA-256 hex digest, never a path."""
    if not _DIGEST.match(digest):
        raise InputError("a task pointer is named by a SHA-256 hex digest")
    return digest


def new_run_id() -> str:
    return time.strftime("run_%Y%m%dT%H%M%SZ_", time.gmtime()) + secrets.token_hex(3)


def check_run_id(run_id: str) -> str:
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
        raise InputError(f"'{run_id}' is not a run id (they look like "
                         "run_20261130T183300Z_a1b2c3); list_runs shows the recent ones")
    return run_id


def _process_start(pid: int) -> str | None:
    """The kernel's start time of a process (to tell a live owner from a reused pid)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@functools.cache
def _owner() -> dict[str, Any]:
    return {"pid": os.getpid(), "pid_start": _process_start(os.getpid())}


def _owner_alive(owner: dict[str, Any]) -> bool:
    pid = owner.get("pid")
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    start = owner.get("pid_start")
    return start is None or _process_start(pid) == start


class RunRecord:
    """The files of one run. Use `event()` as the orchestrator's event sink."""

    def __init__(self, state: Path, run_id: str, redactor: Redactor,
                 meta: dict[str, Any] | None, seq: int = 0):
        self.run_id = run_id
        self.state = state
        self.dir = runs_dir(state) / run_id
        private_dir(self.dir, up_to=state)  # the state directory, runs/ and the run: 0700
        self.redact = redactor
        self._seq = seq
        self._events = open_private(self.dir / "events.jsonl")  # 0600, like every record
        if meta is not None:  # None: attached to a run another process opened
            write_atomic(self.dir / "meta.json", redactor.json({**meta, "run_id": run_id}))

    def event(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        self._seq += 1
        line = {"seq": self._seq, "ts": round(time.time(), 3), "kind": kind, **data}
        if not self._events.closed:
            self._events.write(self.redact.json(line) + "\n")
            self._events.flush()
        return line

    def clean(self, result: RunResult) -> RunResult:
        """`result` as it may leave the process: keys redacted, text encodable."""
        return RunResult.model_validate(self.redact.value(result.model_dump(mode="json")))

    def status(self, result: RunResult) -> None:
        body = {**result.model_dump(mode="json"), "owner": _owner()}
        write_atomic(self.dir / "status.json", self.redact.json(body))

    def finish(self, result: RunResult) -> None:
        try:
            text = self.redact.json(result.model_dump(mode="json"))
            write_atomic(self.dir / "result.json", text)
            write_atomic(self.dir / "status.json", text)
            add_file_usage(self.state, result)
        finally:
            self._events.close()

    def cancel_requested(self) -> bool:
        return (self.dir / "cancel").exists()


class RunStore:
    """Run records as files in the state directory (`RunRecords`)."""

    def __init__(self, state: Path) -> None:
        self.state = state

    @property
    def root(self) -> Path:
        return runs_dir(self.state)

    @property
    def location(self) -> str:
        return str(self.root)

    def open(self, run_id: str, redactor: Redactor, meta: dict[str, Any]) -> RunRecord:
        return RunRecord(self.state, run_id, redactor, meta)

    def attach(self, run_id: str, redactor: Redactor) -> RunRecord:
        if not self.exists(run_id):
            raise RunNotFoundError(f"no run '{run_id}' in {self.root}")
        seq = max((e["seq"] for e in self.events(run_id) if isinstance(e.get("seq"), int)),
                  default=0)
        return RunRecord(self.state, run_id, redactor, None, seq=seq)

    def exists(self, run_id: str) -> bool:
        return (self.root / check_run_id(run_id)).is_dir()

    def meta(self, run_id: str) -> dict[str, Any]:
        path = self.root / check_run_id(run_id) / "meta.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RunNotFoundError(f"no run '{run_id}' in {self.root}; list_runs shows the "
                                   "recent ones") from None
        except (OSError, ValueError) as e:
            raise RunNotFoundError(f"run {run_id}: meta.json is unreadable ({e})") from None
        if not isinstance(data, dict):
            raise RunNotFoundError(f"run {run_id}: meta.json is not an object")
        return data

    def _running(self, run_id: str) -> bool:
        try:
            return self.load(run_id).status == "running"  # a dead owner reads interrupted
        except (RunNotFoundError, ValueError):
            return False

    async def follow(self, run_id: str, after_seq: int = 0, *, idle: float | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        """Tail events.jsonl (see `RunRecords.follow`): the file store's one tail."""
        path = self.root / check_run_id(run_id) / "events.jsonl"
        if not self.exists(run_id):
            raise RunNotFoundError(f"no run '{run_id}' in {self.root}")
        pos, rest = 0, b""
        quiet_since = time.monotonic()
        while True:
            # Whether the run was over is read before the file: no line written before the
            # end is missed.
            over = (path.parent / "result.json").exists() or not self._running(run_id)
            try:
                with path.open("rb") as f:
                    f.seek(pos)
                    chunk = f.read()
            except FileNotFoundError:
                chunk = b""
            pos += len(chunk)
            *lines, rest = (rest + chunk).split(b"\n")
            for raw in lines:
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                seq = line.get("seq") if isinstance(line, dict) else None
                if isinstance(seq, int) and seq > after_seq:
                    after_seq = seq
                    quiet_since = time.monotonic()
                    yield line
            if over:
                return
            if idle is not None and time.monotonic() - quiet_since >= idle:
                quiet_since = time.monotonic()
                yield {}
            await anyio.sleep(FOLLOW_POLL_SECONDS)

    def request_cancel(self, run_id: str) -> bool:
        if not self._running(run_id) or (self.root / run_id / "result.json").exists():
            return False
        write_atomic(self.root / run_id / "cancel", "1")
        return True

    def put_task(self, digest: str, pointer: dict[str, Any]) -> None:
        path = self.state / "tasks" / f"{check_digest(digest)}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(pointer))

    def task_pointer(self, digest: str) -> dict[str, Any] | None:
        try:
            data = json.loads((self.state / "tasks" / f"{check_digest(digest)}.json")
                              .read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def usage(self) -> dict[str, dict[str, float]]:
        return read_file_usage(self.state)

    def load(self, run_id: str) -> RunResult:
        d = self.root / check_run_id(run_id)
        for name in ("result.json", "status.json"):
            try:
                data = json.loads((d / name).read_text(encoding="utf-8"))
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as e:
                raise RunNotFoundError(f"run {run_id}: {name} is unreadable ({e})") from None
            owner = data.pop("owner", None)
            result = RunResult.model_validate(data)
            if result.status == "running" and not _owner_alive(owner or {}):
                result.status = "interrupted"
                result.error = ("the process running this run stopped before it "
                                "finished; this is the state it had reached")
                self._when(d, result)
            return result
        raise RunNotFoundError(f"no run '{run_id}' in {self.root}; list_runs shows the recent "
                               "ones")

    def _when(self, d: Path, result: RunResult) -> None:
        """An interrupted run's start and length, from its id and its event times (its
        status.json may predate the first event)."""
        if not result.started_at:
            stamp = d.name[4:20]  # run_20261130T183300Z_... -> 20261130T183300Z
            result.started_at = (f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[9:11]}:"
                                 f"{stamp[11:13]}:{stamp[13:15]}Z")
        if not result.elapsed_seconds:
            # The last sign of life: the last event, or the events file's time (a live CLI
            # run touches it while it waits on slow providers).
            times = [e["ts"] for e in self.events(d.name)
                     if isinstance(e.get("ts"), int | float)]
            try:
                times.append((d / "events.jsonl").stat().st_mtime)
                created = (d / "meta.json").stat().st_mtime
            except OSError:
                created = min(times, default=0.0)
            if times:
                result.elapsed_seconds = round(max(0.0, max(times) - created), 3)

    def ids(self, limit: int | None = None) -> list[str]:
        """Run ids, newest first."""
        if not self.root.is_dir():
            return []
        def created(p: Path) -> tuple[str, int]:
            # ids carry whole seconds; within a second, meta.json's write time orders them
            try:
                return p.name[:20], (p / "meta.json").stat().st_mtime_ns
            except OSError:
                return p.name[:20], 0

        dirs = sorted((p for p in self.root.iterdir() if _RUN_ID.match(p.name)), key=created,
                      reverse=True)
        ids = [p.name for p in dirs]
        return ids[:limit] if limit else ids

    def events(self, run_id: str) -> list[dict[str, Any]]:
        path = self.root / check_run_id(run_id) / "events.jsonl"
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise RunNotFoundError(f"no run '{run_id}' in {self.root}") from None
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut short by a crash
        return out
