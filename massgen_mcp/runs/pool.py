"""The backends of a run, and the provider backends kept across runs.

A provider backend holds an SDK client with its HTTP connections (and TLS sessions); building
one per agent per run would set those up again every time. So backends are kept, keyed by
everything that shapes their requests, and shared between runs (they are stateless between
turns). The pool is bounded: past `size`, the least recently used backend is evicted and its
client closed, as soon as no run still uses it.

Backends bound to one run (a coding-agent CLI holds a session; sampling talks to the calling
client; a function is looked up per run) are built for the run and closed with it. A
coding-agent member that ends its run leaves a warm standby of its CLI for the next run with
that member (`standby.py`): the CLI's start-up is then paid between runs, not in one.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict

import anyio

from massgen_mcp.backends import Backend, BackendContext, create_backend
from massgen_mcp.backends.cli import CLI_WIRES
from massgen_mcp.config.team import AgentSpec, Team
from massgen_mcp.errors import BackendError, MassgenError
from massgen_mcp.messages import Message, ToolSpec, Turn
from massgen_mcp.runs.standby import Standbys

log = logging.getLogger(__name__)

BACKEND_POOL_SIZE = 64
#: Wires whose backend is bound to one run (see the module docstring).
_PER_RUN_WIRES = frozenset({"sampling", "function", "test", "demo"})


class BrokenBackend:
    """Stands in for a backend that could not be built, so the agent fails like any other."""

    def __init__(self, provider: str, model: str, error: str) -> None:
        self.provider, self.model, self.error = provider, model, error

    async def turn(self, messages: list[Message], tools: list[ToolSpec]) -> Turn:
        raise BackendError(self.error, provider=self.provider, model=self.model)

    async def aclose(self) -> None:
        return None


class BackendPool:
    """`acquire()` a run's backends, `release()` them when the run ends. `standby_size`:
    warm CLI processes kept between runs (the server keeps `standby.STANDBY_SIZE`, see
    ``--cli-standbys``; none by default, for one-shot callers)."""

    def __init__(self, size: int = BACKEND_POOL_SIZE, standby_size: int = 0) -> None:
        self.size = size
        self.standbys = Standbys(standby_size)
        self._kept: OrderedDict[str, Backend] = OrderedDict()  # least recently used first
        self._users: dict[int, int] = {}  # id(backend) -> runs using it now
        self._evicted: dict[int, Backend] = {}  # out of the pool, still used by a run

    def __len__(self) -> int:
        return len(self._kept)

    async def acquire(self, team: Team, context: BackendContext,
                      run_context: BackendContext) -> dict[str, Backend]:
        """One backend per agent. `run_context` (the caller's context with the run's own
        objects) goes to the coding-agent CLIs, which are built for this run."""
        out: dict[str, Backend] = {}
        closing: list[Backend] = []
        try:
            for spec in team.agents:
                try:
                    out[spec.id] = self._backend(spec, context, run_context, out, closing)
                except MassgenError as e:
                    out[spec.id] = BrokenBackend(spec.provider.name, spec.model, str(e))
        except Exception:  # a backend that cannot even fail cleanly: the run fails
            await _close_all(closing)
            await self.release(out)
            raise
        await _close_all(closing)
        return out

    def _backend(self, spec: AgentSpec, context: BackendContext, run_context: BackendContext,
                 taken: dict[str, Backend], closing: list[Backend]) -> Backend:
        if spec.provider.wire in CLI_WIRES:
            warm, expired = self.standbys.take(spec, run_context)
            closing += expired
            cli = warm if warm is not None else create_backend(spec, run_context)
            self.standbys.note(cli, spec, run_context)
            return cli
        key = backend_key(spec)
        if key is None:
            return create_backend(spec, context)
        backend = self._kept.get(key)
        if backend is None:
            backend = create_backend(spec, context)
            self._kept[key] = backend
        self._kept.move_to_end(key)
        if not any(b is backend for b in taken.values()):  # in use by this run from now on
            self._users[id(backend)] = self._users.get(id(backend), 0) + 1
        closing += self._evict()
        return backend

    async def release(self, backends: dict[str, Backend]) -> None:
        """The run is over: close its own backends, and pooled ones evicted meanwhile."""
        closing: list[Backend] = []
        for backend in {id(b): b for b in backends.values()}.values():
            if not self._is_pooled(backend):
                closing.append(backend)
                continue
            left = self._users.get(id(backend), 1) - 1
            if left > 0:
                self._users[id(backend)] = left
                continue
            self._users.pop(id(backend), None)
            evicted = self._evicted.pop(id(backend), None)
            if evicted is not None:
                closing.append(evicted)
        await _close_all(closing)
        with anyio.CancelScope(shield=True):  # started after the run's CLIs are stopped
            for backend in closing:
                try:
                    await _close_all(await self.standbys.replace(backend))
                except Exception:
                    log.debug("starting a standby failed", exc_info=True)

    async def aclose(self) -> None:
        """Close every kept backend (runs still using one keep it until they release it) and
        every standby."""
        await _close_all(self.standbys.drain())
        idle = [b for b in self._kept.values() if id(b) not in self._users]
        self._evicted.update({id(b): b for b in self._kept.values() if id(b) in self._users})
        self._kept.clear()
        await _close_all(idle)

    def kill_standbys(self) -> None:
        """The server is exiting: kill the standbys now, and start no more."""
        self.standbys.kill_now()

    def _is_pooled(self, backend: Backend) -> bool:
        return any(b is backend for b in self._kept.values()) or id(backend) in self._evicted

    def _evict(self) -> list[Backend]:
        """Drop the least recently used backends past `size`; those no run uses are returned
        to be closed now, the others are closed when their last run releases them."""
        idle: list[Backend] = []
        while len(self._kept) > self.size:
            _, backend = self._kept.popitem(last=False)
            if id(backend) in self._users:
                self._evicted[id(backend)] = backend
            else:
                idle.append(backend)
        return idle


async def _close_all(backends: list[Backend]) -> None:
    """Close them all at once (a CLI may take a moment to exit: no one waits on the next)."""

    async def close(backend: Backend) -> None:
        try:
            await backend.aclose()
        except Exception:
            log.debug("closing backend failed", exc_info=True)

    with anyio.CancelScope(shield=True):  # a cancelled run still closes what it opened
        async with anyio.create_task_group() as tg:
            for backend in backends:
                tg.start_soon(close, backend)


def backend_key(spec: AgentSpec) -> str | None:
    """What makes two agents' backends interchangeable; None for backends bound to a run."""
    if spec.provider.wire in _PER_RUN_WIRES:
        return None
    key = spec.api_key.get_secret_value() if spec.api_key else ""
    options = spec.backend.model_dump_json(exclude={"api_key", "mcp_servers", "allowed_tools",
                                                    "exclude_tools"})
    digest = hashlib.sha256(key.encode()).hexdigest()  # the key itself is not kept twice
    return f"{spec.provider.name}|{spec.model}|{spec.base_url}|{digest}|{options}"
