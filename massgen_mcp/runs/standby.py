"""Warm coding-agent CLIs between runs: the start-up of a member's CLI off the run's path.

A long-lived CLI (`backends/cli/_live.py`) pays its start-up once per run, on the member's
first turn (seconds for Claude Code). When a run's CLI member ends, a standby for the same
member configuration is started at once, the way that member's first turn started it, and
left idle: the CLI starts up and waits, with no message sent and so no model request. The
next run with that member takes it (`take`); the CLI is moved into the new run's workspace
before its first message, in a new session that has seen nothing of the last run. Anything
that differs, or a standby that died, and the turn starts cold as before.

Standbys are few and bounded: one per member configuration, at most `size` (least recently
used closed first), none idle past `idle_seconds`. They end with the pool (`aclose`), at
once when the server exits (`kill_now`), and with the server process in any case (the CLIs'
parent-death signal and process group, `backends/cli/_process.py`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from massgen_mcp.backends import Backend, BackendContext, create_backend
from massgen_mcp.config.team import AgentSpec

log = logging.getLogger(__name__)

#: Warm CLI processes a server keeps (``--cli-standbys``; each holds what the CLI holds at
#: rest, ~0.2 GB for Claude Code 2.1.332).
STANDBY_SIZE = 6
STANDBY_IDLE_SECONDS = 900.0


def standby_key(spec: AgentSpec, env: Mapping[str, str]) -> str:
    """What makes two members' CLIs start alike: everything in the member's backend section
    (its key hashed), its id, and the server environment the CLI is given."""
    secret = spec.api_key.get_secret_value() if spec.api_key else ""
    digest = hashlib.sha256(json.dumps([secret, sorted(env.items())]).encode()).hexdigest()
    options = spec.backend.model_dump_json(exclude={"api_key"})
    return f"{spec.id}|{spec.provider.name}|{spec.model}|{spec.base_url}|{digest}|{options}"


class Standbys:
    """The warm CLIs of a pool, by `standby_key`."""

    def __init__(self, size: int = STANDBY_SIZE,
                 idle_seconds: float = STANDBY_IDLE_SECONDS) -> None:
        self.size = size
        self.idle_seconds = idle_seconds
        self._warm: OrderedDict[str, Any] = OrderedDict()  # least recently started first
        self._origin: dict[int, tuple[str, AgentSpec, Mapping[str, str]]] = {}
        self.closed = False

    def __len__(self) -> int:
        return len(self._warm)

    def backends(self) -> list[Any]:
        """The warm backends, least recently started first."""
        return list(self._warm.values())

    def take(self, spec: AgentSpec, context: BackendContext) -> tuple[Backend | None,
                                                                     list[Backend]]:
        """A warm backend for `spec` bound to the run of `context` (or None), and standbys
        to close (idle too long)."""
        env = context.env if context.env is not None else {}
        key = standby_key(spec, env)
        backend = self._warm.pop(key, None)
        if backend is not None:
            backend.bind(spec, context)
        return backend, self._expired()

    def note(self, backend: Backend, spec: AgentSpec, context: BackendContext) -> None:
        """`backend` is a CLI member of a run: on release it may leave a standby."""
        env = context.env if context.env is not None else {}
        self._origin[id(backend)] = (standby_key(spec, env), spec, env)

    async def replace(self, backend: Backend) -> list[Backend]:
        """`backend` (closed) ended its run: start a standby like it. Returns the standbys
        to close (past `size`, or idle too long)."""
        origin = self._origin.pop(id(backend), None)
        plan = getattr(backend, "standby_plan", None)
        if origin is None or plan is None or self.closed or self.size <= 0:
            return []
        key, spec, env = origin
        if key in self._warm:
            return self._expired()
        fresh: Any = create_backend(spec, BackendContext(env=env))
        try:
            await fresh.warm(plan)
        except Exception as e:  # the next run starts cold, and says why there
            log.info("no standby for %s: %s", spec.id, e)
            return [fresh]
        self._warm[key] = fresh
        out = self._expired()
        while len(self._warm) > self.size:
            out.append(self._warm.popitem(last=False)[1])
        return out

    def drain(self) -> list[Backend]:
        """Every standby, out of the pool (to be closed); no more are started."""
        self.closed = True
        out = list(self._warm.values())
        self._warm.clear()
        return out

    def kill_now(self) -> None:
        """Kill every standby's process group at once (the server is exiting)."""
        for backend in self.drain():
            getattr(backend, "kill_now", lambda: None)()

    def _expired(self) -> list[Backend]:
        now = time.monotonic()
        old = [k for k, b in self._warm.items() if now - (b.warmed_at or now) > self.idle_seconds]
        return [self._warm.pop(k) for k in old]
