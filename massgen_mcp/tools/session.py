"""The agents' own MCP tool servers: one client session per (agent, server) for a whole run.

``open_toolboxes`` starts every server of every agent at once, each with a start-up
deadline, and yields one ``AgentToolbox`` per agent. A toolbox offers its tools to the model
as ``mcp__<server>__<tool>`` and answers calls with ``(text, is_error)``; it never raises
for a failing tool, a timeout or a dead server, so an agent's turn always gets a tool result.
A server that fails to start or dies is dropped for that agent with an event and a note; the
run goes on.

Each session lives in one task of its own (open, signal ready, wait for close), so the SDK's
cancel scopes are entered and left by the same task whatever the caller does; leaving the
``open_toolboxes`` block for any reason closes every session, and the SDK then stops each
stdio server (close stdin, wait, SIGTERM/SIGKILL to its process group, every wait bounded).

Why not the SDK's ``ClientSessionGroup``: it connects servers one after another in the
caller's task with no per-server start-up deadline, a server that fails to connect raises
instead of being dropped, it closes sessions from other tasks than the ones that opened
them (anyio cancel scopes forbid that when a server is still starting), and it names tools
by the server's self-reported name where we need the config's name (``mcp__<name>__<tool>``)
and per-agent filters. What it does well is reused: one ``AsyncExitStack`` per session.
Every stdio server is started through ``guard.py`` so that no kill timing leaves an orphan.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from massgen_mcp.tools.toolbox import (
    MAX_RESULT_CHARS,
    PREFIX,
    AgentToolbox,
    AgentToolConfig,
    EventFn,
    describe,
    render_result,
    tool_name,
)

if TYPE_CHECKING:  # the MCP SDK is imported on first use: runs without tools never pay for it
    import mcp_types as types
    from mcp import ClientSession

    from massgen_mcp.config.team import BackendConfig, MCPServerConfig
    from massgen_mcp.redaction import Redactor

log = logging.getLogger(__name__)

# Whatever else the SDK adds (HOME, LOGNAME, PATH, SHELL, TERM, USER), these pass through.
_PASSTHROUGH_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "TMPDIR", "SYSTEMROOT", "TEMP", "TMP")
_CALL_GRACE = 5.0  # on top of the per-call timeout, for a transport that cannot even send
# Bound on a graceful close; stdio process shutdown is shielded inside the SDK and bounded there.
_CLOSE_TIMEOUT = 5.0
_GUARD = str(Path(__file__).with_name("guard.py"))


def server_environment(
    config_env: Mapping[str, str], base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A stdio server's environment: PATH, HOME, locale and temp dirs, plus its config ``env``.

    Nothing else from ``base`` (``os.environ`` by default) passes, so provider keys reach a
    server only when its config names them.
    """
    base = os.environ if base is None else base
    env = {
        k: v for k, v in base.items()
        if (k in _PASSTHROUGH_ENV or k.startswith("LC_")) and not v.startswith("()")
    }
    env.update(config_env)
    return env


class ServerSession:
    """One MCP session of one agent, owned by the single task that runs ``run()``."""

    def __init__(self, agent_id: str, config: MCPServerConfig, *, run_dir: Path,
                 startup_timeout: float, call_timeout: float,
                 base_env: Mapping[str, str] | None, redactor: Redactor | None = None) -> None:
        self.agent_id = agent_id
        self.config = config
        self.name = config.name
        self.state = "starting"  # -> ready -> closing | dead; starting -> failed
        self.reason = ""
        self.tools: list[types.Tool] = []
        self.startup_seconds: float | None = None
        self.on_lost: Callable[[ServerSession], None] = lambda _s: None
        self._session: ClientSession | None = None
        self._run_dir = run_dir
        self._startup_timeout = startup_timeout
        self._call_timeout = call_timeout
        self._base_env = base_env
        self._redactor = redactor
        self._spawning = False  # a stop now would leak the process: `_stop` defers it
        self._stop_pending = False
        self._settled = anyio.Event()  # started or failed
        self._closing = anyio.Event()
        self._scope = anyio.CancelScope()
        self.stderr_path: Path | None = None

    async def run(self) -> None:
        from mcp import ClientSession

        t0 = time.monotonic()
        # Shielded from the caller's cancellation, which `open_toolboxes` turns into `close()`:
        # a cancel delivered while the SDK spawns the process would leak it (asyncio then
        # kills only the leader, not its group). Our own stops wait for the spawn (`_stop`).
        with anyio.CancelScope(shield=True), self._scope:
            try:
                async with AsyncExitStack() as stack:
                    read, write = await self._open(stack)
                    session = await stack.enter_async_context(ClientSession(read, write))
                    await session.initialize()
                    self.tools = await _list_tools(session)
                    self._session = session
                    self.startup_seconds = time.monotonic() - t0
                    self.state = "ready"
                    self._settled.set()
                    await self._closing.wait()
                    self._scope.deadline = anyio.current_time() + _CLOSE_TIMEOUT
            except Exception as exc:  # any failure only drops this server
                if self.state == "starting":
                    self._fail(self._startup_failure(exc))
                elif self.state == "ready":
                    self.lost(describe(exc))
                else:
                    log.debug("MCP server %s/%s closed with %r", self.agent_id, self.name, exc)
        self._settled.set()

    def _startup_failure(self, exc: BaseException) -> str:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
            what = "exited during start-up" if self.stderr_path else "closed the connection"
            return what + self._stderr_tail()
        return describe(exc) + self._stderr_tail()

    async def _open(self, stack: AsyncExitStack) -> Any:
        if self.config.type == "streamable-http":
            return await self._open_http(stack)
        return await self._open_stdio(stack)

    async def _open_stdio(self, stack: AsyncExitStack) -> Any:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        from massgen_mcp.redaction import Redactor
        from massgen_mcp.tools.stderr_log import StderrLog

        tools_dir = self._run_dir / "tools"
        tools_dir.mkdir(parents=True, exist_ok=True)
        self.stderr_path = tools_dir / f"{_safe(self.agent_id)}-{self.name}.stderr.log"
        # Entered first, left last: the log drains after the process is gone.
        # A server may echo its own token: its env values are secrets in its log.
        redactor = (self._redactor or Redactor()).extended(
            v for v in self.config.env.values() if len(v) >= 8)
        errlog = await stack.enter_async_context(StderrLog(self.stderr_path, redactor))
        command, args = self.config.command or "", list(self.config.args)
        if os.name == "posix":  # the guard takes the server's group down if we die
            command, args = sys.executable, ["-I", "-S", _GUARD, command, *args]
        params = StdioServerParameters(
            command=command, args=args, cwd=self.config.cwd,
            env=server_environment(self.config.env, self._base_env))
        assert errlog.errlog is not None
        self._spawning = True
        try:
            read, write = await stack.enter_async_context(
                stdio_client(params, errlog=errlog.errlog))
        finally:
            self._spawning = False
        errlog.spawned()
        if self._stop_pending:
            self._scope.cancel()
        # Relay the server's messages so its exit is seen at once, not at the next call.
        relay_tx, relay_rx = anyio.create_memory_object_stream[Any](0)
        tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)  # runs before the group exits: stop the relay
        tg.start_soon(self._relay, read, relay_tx)
        return relay_rx, write

    async def _open_http(self, stack: AsyncExitStack) -> Any:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        client = await stack.enter_async_context(httpx2.AsyncClient(
            headers=self.config.headers or None, timeout=httpx2.Timeout(30.0, read=300.0)))
        return await stack.enter_async_context(
            streamable_http_client(self.config.url or "", http_client=client))

    async def _relay(self, source: Any, sink: Any) -> None:
        try:
            async with sink:
                async for item in source:
                    await sink.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return
        if self.state == "ready":
            self.lost("its process exited" + self._stderr_tail())

    async def wait_settled(self, deadline: float) -> None:
        """Wait until started or failed; past ``deadline``, give up on it (it is dropped)."""
        with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
            await self._settled.wait()
        if self.state == "starting":
            self._fail(f"did not start within {self._startup_timeout:g}s{self._stderr_tail()}")
            self._stop()

    def _stop(self) -> None:
        if self._spawning:
            self._stop_pending = True
        else:
            self._scope.cancel()

    async def call(self, tool: str, exposed: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        session = self._session
        if self.state != "ready" or session is None:
            return self._unavailable(exposed), True
        try:
            with anyio.fail_after(self._call_timeout + _CALL_GRACE):
                result = await session.call_tool(
                    tool, arguments, read_timeout_seconds=self._call_timeout)
        except TimeoutError:
            return self._timed_out(exposed), True
        except MCPError as e:
            if e.code == REQUEST_TIMEOUT:
                return self._timed_out(exposed), True
            if e.code == CONNECTION_CLOSED:
                self.lost(f"the connection was lost during a call to {tool}{self._stderr_tail()}")
                return self._unavailable(exposed), True
            return f"{exposed} failed: MCP error {e.code}: {e.message}", True
        return render_result(result), bool(result.is_error)

    def close(self) -> None:
        """Ask the session task to wind down (graceful when started, cancelled if starting)."""
        if self.state == "ready":
            self.state = "closing"
            self._closing.set()
        elif self.state == "starting":
            self.state, self.reason = "failed", "the run ended before it started"
            self._stop()

    def lost(self, reason: str) -> None:
        """Mark a started server dead (once) and let its task tear the session down."""
        if self.state != "ready":
            return
        self.state, self.reason = "dead", reason
        self._closing.set()
        self.on_lost(self)

    def _fail(self, reason: str) -> None:
        if self.state == "starting":
            self.state, self.reason = "failed", reason
            self._settled.set()

    def _timed_out(self, exposed: str) -> str:
        return (f"{exposed} timed out after {self._call_timeout:g}s: the MCP server "
                f"'{self.name}' did not answer in time and the call was cancelled")

    def _unavailable(self, exposed: str) -> str:
        what = "stopped" if self.state == "dead" else "is not available"
        return (f"{exposed} is unavailable: MCP server '{self.name}' {what} "
                f"({self.reason or self.state}); its tools were removed for this run")

    def _stderr_tail(self) -> str:
        if self.stderr_path is None:
            return ""
        try:
            with self.stderr_path.open("rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - 2048))
                lines = f.read().decode("utf-8", "replace").strip().splitlines()
        except OSError:
            return ""
        if not lines:
            return ""
        return f"; last stderr line: {lines[-1][-300:]}"  # the log is redacted already


@asynccontextmanager
async def open_toolboxes(
    agents: Mapping[str, BackendConfig | AgentToolConfig | Sequence[MCPServerConfig]],
    *,
    run_dir: Path,
    startup_timeout: float,
    call_timeout: float,
    on_event: EventFn | None = None,
    base_env: Mapping[str, str] | None = None,
    redactor: Redactor | None = None,
) -> AsyncIterator[dict[str, AgentToolbox]]:
    """Start every agent's MCP servers concurrently; yield ``{agent_id: AgentToolbox}``.

    ``agents`` maps an agent id to its ``BackendConfig`` (its ``mcp_servers`` and backend-level
    ``allowed_tools``/``exclude_tools``), an ``AgentToolConfig``, or just a list of servers.
    Each (agent, server) gets its own session and process. Enter and leave this block in
    the same task; on leaving it, for any reason, every session is closed and every stdio
    server stopped before the block returns (bounded by the SDK's kill escalation, ~6 s).
    ``base_env`` is where PATH, HOME and locale for stdio servers come from (os.environ).
    ``redactor`` cleans the servers' stderr logs (by default, of key-shaped text only).
    """
    from massgen_mcp.config.team import BackendConfig

    emit = _safe_emitter(on_event)
    toolboxes: dict[str, AgentToolbox] = {}
    servers: list[ServerSession] = []
    for agent_id, raw in agents.items():
        if isinstance(raw, BackendConfig):
            config = AgentToolConfig.from_backend(raw)
        elif isinstance(raw, AgentToolConfig):
            config = raw
        else:
            config = AgentToolConfig(servers=tuple(raw))
        mine = [ServerSession(agent_id, s, run_dir=run_dir, startup_timeout=startup_timeout,
                              call_timeout=call_timeout, base_env=base_env,
                              redactor=redactor) for s in config.servers]
        servers += mine
        toolboxes[agent_id] = AgentToolbox(agent_id, config, mine, emit)
    try:
        async with anyio.create_task_group() as tg:
            try:
                for server in servers:
                    tg.start_soon(server.run, name=f"mcp:{server.agent_id}/{server.name}")
                deadline = anyio.current_time() + startup_timeout
                for server in servers:
                    await server.wait_settled(deadline)
                for box in toolboxes.values():
                    box._build()
                for server in servers:
                    if server.state == "ready":
                        emit("tool_server_started", {
                            "agent": server.agent_id, "server": server.name,
                            "tools": len(server.tools),
                            "seconds": round(server.startup_seconds or 0.0, 3)})
                yield toolboxes
            finally:
                for server in servers:
                    server.close()
    except BaseExceptionGroup as group:
        # Session tasks never raise, so a group holds what the caller's block raised:
        # hand that back as it was, not wrapped by our task group.
        if len(group.exceptions) != 1:
            raise
        exc = group.exceptions[0]
        raise exc from exc.__cause__


async def _list_tools(session: ClientSession) -> list[types.Tool]:
    import mcp_types as types

    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text) or "agent"


def _safe_emitter(on_event: EventFn | None) -> EventFn:
    def emit(kind: str, data: dict[str, Any]) -> None:
        log.info("%s %s", kind, data)
        if on_event is None:
            return
        try:
            on_event(kind, data)
        except Exception:  # a broken listener must not break tools
            log.exception("on_event listener for %s failed", kind)
    return emit


__all__ = [
    "MAX_RESULT_CHARS", "PREFIX", "AgentToolConfig", "AgentToolbox", "open_toolboxes",
    "render_result", "server_environment", "tool_name",
]
