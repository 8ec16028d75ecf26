"""What the tool bodies share: team choice checked against the client, running with progress
notifications and heartbeats, background runs, and the one boundary from our errors to
tool errors."""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from massgen_mcp.errors import MassgenError
from massgen_mcp.runs.progress import describe_event

if TYPE_CHECKING:  # loaded by the first run (start-up time)
    from massgen_mcp.app import App, ChosenTeam
    from massgen_mcp.config.team import Team
    from massgen_mcp.coordination.result import RunResult
    from massgen_mcp.runs.engine import PreparedRun

log = logging.getLogger("massgen_mcp.server")

HEARTBEAT_SECONDS = 10.0

P = ParamSpec("P")
R = TypeVar("R")


def tool_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Our errors are meant for the user: they become tool errors with the same text.
    Anything else is a bug, which the SDK logs and reports without details."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except MassgenError as e:
            raise ToolError(str(e)) from None

    return wrapper


class ToolHost:
    """What every tool body shares: the `App`, and the process-wide task group for
    background (`wait=false`) runs."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.background: anyio.abc.TaskGroup | None = None

    # ------------------------------------------------------------------ running

    async def team_for(self, ctx: Context, **choice: Any) -> ChosenTeam:
        """The call's team (models/team/limits in `choice`), checked against what the client
        can do: a sampling team needs a client that can sample on this connection."""
        chosen = await self.app.tool_team(sampling_available=self.can_sample(ctx), **choice)
        self.check_sampling(chosen.team, ctx)
        return chosen

    def check_sampling(self, team: Team, ctx: Context) -> None:
        """A team with sampling agents needs a client that can sample on this connection."""
        from massgen_mcp.backends.sampling import NO_BACK_CHANNEL, NO_SAMPLING

        if any(a.provider.uses_client_model for a in team.agents) and not self.can_sample(ctx):
            version = getattr(ctx, "protocol_version", None) or "?"
            if version >= "2026":
                raise ToolError(f"{NO_BACK_CHANNEL} (negotiated protocol {version})")
            raise ToolError(NO_SAMPLING)

    def can_sample(self, ctx: Context) -> bool:
        from massgen_mcp.backends.sampling import client_can_sample

        try:
            return client_can_sample(ctx.session)
        except Exception:
            return False

    async def run(self, prepared: PreparedRun, ctx: Context, wait: bool) -> RunResult:
        from massgen_mcp.server.tasks import current_task

        task = current_task()
        if task is not None:  # an MCP task: the client gets its id now and polls tasks/get
            task.bind(prepared.run_id)
        if not wait:
            if self.background is None:
                raise ToolError("background runs are not available in this server mode; "
                                "call with wait=true")
            from massgen_mcp.coordination.result import RunResult

            self.background.start_soon(prepared.start)  # it raises nothing but cancellation
            snap = prepared.live.snapshot()
            return snap or RunResult(run_id=prepared.run_id, status="running",
                                     task=prepared.task[:500], team=prepared.team.name,
                                     log_dir=str(prepared.live.record.dir))
        return await self._with_progress(prepared, ctx)

    async def _with_progress(self, prepared: PreparedRun, ctx: Context) -> RunResult:
        """Run, sending one progress notification per event and a heartbeat when quiet.

        The run itself goes to the background task group and this request waits for its
        result: the agents' tool servers are then stopped after the answer is sent, not
        before. A client that cancels the request cancels the run.
        """
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
        live = prepared.live
        live.listeners.append(send.send_nowait)
        sent = 0
        last = anyio.current_time()

        from massgen_mcp.server.tasks import current_task

        task = current_task()

        async def report(message: str) -> None:
            nonlocal sent, last
            sent += 1
            last = anyio.current_time()
            if task is not None:
                task.progress(message)
            try:
                await ctx.report_progress(sent, None, message)
            except Exception:  # a client that went away must not stop the run
                log.debug("progress notification failed", exc_info=True)

        async def pump() -> None:
            async with receive:
                async for line in receive:
                    message = describe_event(line)
                    if message:
                        await report(message)

        async def heartbeat() -> None:
            while True:
                await anyio.sleep(HEARTBEAT_SECONDS)
                if anyio.current_time() - last >= HEARTBEAT_SECONDS:
                    if live.waiting is not None:  # queued: no worker has taken it yet
                        await report(live.waiting)
                        continue
                    snap = live.snapshot()
                    working = [a.agent_id for a in snap.agents if a.status == "working"] \
                        if snap else []
                    await report(f"still working ({', '.join(working) or 'team'}; "
                                 f"{snap.totals.answers if snap else 0} answers, "
                                 f"{snap.totals.votes if snap else 0} votes so far)")

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            beat = anyio.CancelScope()
            tg.start_soon(_in_scope, beat, heartbeat)
            try:
                if self.background is not None:
                    self.background.start_soon(prepared.start)
                    await live.done.wait()
                else:
                    await prepared.start()
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                    prepared.cancel()
                    await live.done.wait()  # the record says "cancelled" before we go
                raise
            finally:
                live.listeners.remove(send.send_nowait)
                send.close()  # the pump sends what is queued, then ends
                beat.cancel()
        assert live.result is not None
        return live.result


async def _in_scope(scope: anyio.CancelScope, fn: Any) -> None:
    with scope:
        await fn()
