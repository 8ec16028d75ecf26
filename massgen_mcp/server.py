"""The MCP server: consensus, plan and checkpoint tools; run resources; prompts; transports.

Tool bodies are thin: they turn arguments into a `Service` call, stream the run's events
to the client as progress notifications, and turn our errors into tool errors whose text
says what to fix. Long runs can be started with `wait=false` and followed with `get_run`.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from . import __version__
from .coordination.result import RunResult
from .doctor import BackendsReport, backends_report
from .errors import MassgenError
from .progress import describe_event
from .service import PreparedRun, Service

log = logging.getLogger("massgen_mcp.server")

HEARTBEAT_SECONDS = 10.0
INSTRUCTIONS = (
    "massgen-mcp asks a team of models (different providers) instead of one: each agent "
    "answers, sees the others' anonymized answers, improves or votes, and the most-voted "
    "answer is returned with the votes and reasons. Use run_consensus for hard questions, "
    "decisions and reviews; plan for a validated task plan; checkpoint_init + checkpoint "
    "before risky actions. Runs take minutes: pass wait=false and poll get_run if your "
    "tool-call timeout is short.")


class RunSummary(BaseModel):
    run_id: str
    status: str
    task: str
    winner: str | None = None
    votes: str = Field(default="", description="e.g. '2/3' for the winner")
    elapsed_seconds: float = 0.0
    started_at: str = ""
    team: str = ""


class RunList(BaseModel):
    runs: list[RunSummary]


class CancelResult(BaseModel):
    run_id: str
    cancelled: bool
    status: str
    message: str


def _summary(r: RunResult) -> RunSummary:
    total = sum(r.tally.values())
    return RunSummary(
        run_id=r.run_id, status=r.status, task=r.task[:160],
        winner=r.winner.agent_id if r.winner else None,
        votes=f"{r.winner.votes}/{total}" if r.winner else "",
        elapsed_seconds=r.elapsed_seconds, started_at=r.started_at, team=r.team)


def _tool_result(result: RunResult) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=result.summary_text())],
                          structured_content=result.model_dump(mode="json"))


class Server:
    """Holds the service and the process-wide task group for background (`wait=false`) runs."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.background: anyio.abc.TaskGroup | None = None

    # ------------------------------------------------------------------ running

    async def team_for(self, ctx: Context, **choice: Any) -> Any:
        """The call's team (models/team/limits in `choice`), checked against what the client
        can do: a sampling team needs a client that can sample on this connection."""
        team = await self.service.team_for(sampling_available=self.can_sample(ctx), **choice)
        self.check_sampling(team, ctx)
        return team

    def check_sampling(self, team: Any, ctx: Context) -> None:
        """A team with sampling agents needs a client that can sample on this connection."""
        from .backends.sampling import NO_BACK_CHANNEL, NO_SAMPLING

        if any(a.provider.wire == "sampling" for a in team.agents) and not self.can_sample(ctx):
            version = getattr(ctx, "protocol_version", None) or "?"
            if version >= "2026":
                raise ToolError(f"{NO_BACK_CHANNEL} (negotiated protocol {version})")
            raise ToolError(NO_SAMPLING)

    def can_sample(self, ctx: Context) -> bool:
        from .backends.sampling import client_can_sample

        try:
            return client_can_sample(ctx.session)
        except Exception:
            return False

    async def run(self, prepared: PreparedRun, ctx: Context, wait: bool) -> RunResult:
        if not wait:
            if self.background is None:
                raise ToolError("background runs are not available in this server mode; "
                                "call with wait=true")
            self.background.start_soon(self._background, prepared)
            snap = prepared.live.snapshot()
            return snap or RunResult(run_id=prepared.run_id, status="running",
                                     task=prepared.task[:500], team=prepared.team.name,
                                     log_dir=str(prepared.live.record.dir))
        return await self._with_progress(prepared, ctx)

    async def _background(self, prepared: PreparedRun) -> None:
        try:
            await prepared.start()
        except Exception:
            log.exception("background run %s failed", prepared.run_id)

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

        async def report(message: str) -> None:
            nonlocal sent, last
            sent += 1
            last = anyio.current_time()
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
                    self.background.start_soon(self._background, prepared)
                    await live.done.wait()
                else:
                    await prepared.start()
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                    self.service.engine.cancel(prepared.run_id)
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


def build_server(service: Service) -> tuple[MCPServer, Server]:
    """The MCPServer with every tool, resource and prompt registered."""
    mcp = MCPServer(name="massgen-mcp", title="MassGen MCP — ask a team of models",
                    version=__version__, instructions=INSTRUCTIONS,
                    website_url="https://github.com/massgen-mcp/massgen-mcp")
    app = Server(service)

    @mcp.tool(title="Run a consensus")
    async def run_consensus(
        task: Annotated[str, Field(description="The question, decision or task for the team. "
                                               "Be specific: what to decide, constraints, "
                                               "what a good answer contains.")],
        ctx: Context,
        context: Annotated[str | None, Field(description="Background text the agents need "
                                                         "(code, logs, prior decisions).")] = None,
        files: Annotated[list[str] | None, Field(description="Text files to give the agents, "
                                                             "relative to the server's working "
                                                             "directory.")] = None,
        models: Annotated[str | None, Field(description="Comma-separated provider/model list, "
                                                        "e.g. 'openai/gpt-5,anthropic/claude-"
                                                        "sonnet-4-5'; 'sampling' uses your own "
                                                        "model.")] = None,
        team: Annotated[str | None, Field(description="A bundled team name or a path to a "
                                                      "team YAML file.")] = None,
        max_answers_per_agent: Annotated[int | None, Field(ge=1, le=20, description=(
            "Answers an agent may submit before it may only vote."))] = None,
        timeout_s: Annotated[float | None, Field(gt=0, le=86400, description=(
            "Whole-run time limit; on timeout the best answer so far is returned."))] = None,
        wait: Annotated[bool, Field(description="false: return the run id at once and follow "
                                                "it with get_run (for short client "
                                                "timeouts).")] = True,
    ) -> Annotated[CallToolResult, RunResult]:
        """Ask a team of models: each agent answers in parallel, sees the others' anonymized
        answers, improves its own or votes; the most-voted answer wins and its author presents
        the final answer. Returns the final answer with the winner, the votes and their
        reasons, every agent's answer, usage and the run id. Sends progress notifications
        while it runs."""
        try:
            chosen = await app.team_for(ctx, models=models, team=team, timeout_s=timeout_s,
                                        max_answers_per_agent=max_answers_per_agent)
            prepared = service.prepare(chosen, task, context=service.context_for(context, files),
                                       backend_context={"session": ctx.session})
        except MassgenError as e:
            raise ToolError(str(e)) from None
        return _tool_result(await app.run(prepared, ctx, wait))

    @mcp.tool(title="Get a run")
    async def get_run(
        run_id: Annotated[str, Field(description="The run id returned by run_consensus.")],
    ) -> RunResult:
        """The status of a run (running, completed, timeout, failed, cancelled, interrupted)
        and, when it is over, its full result. Use it to follow a run started with
        wait=false."""
        try:
            return service.engine.get(run_id)
        except MassgenError as e:
            raise ToolError(str(e)) from None

    @mcp.tool(title="List runs")
    async def list_runs(
        limit: Annotated[int, Field(ge=1, le=200, description="How many runs.")] = 20,
    ) -> RunList:
        """Recent runs, newest first, with their status and winner."""
        return RunList(runs=[_summary(r) for r in service.engine.list(limit)])

    @mcp.tool(title="Cancel a run")
    async def cancel_run(
        run_id: Annotated[str, Field(description="The run to stop.")],
    ) -> CancelResult:
        """Stop a running run. In-flight model calls are cancelled; the run is recorded as
        cancelled with the best answer so far."""
        try:
            stopped = service.engine.cancel(run_id)
            status = service.engine.get(run_id).status
        except MassgenError as e:
            raise ToolError(str(e)) from None
        message = ("cancelled" if stopped else
                   f"not running in this server (status: {status}); nothing to cancel")
        return CancelResult(run_id=run_id, cancelled=stopped, status=status, message=message)

    @mcp.tool(title="List backends")
    async def list_backends(ctx: Context) -> BackendsReport:
        """Which providers are usable right now (key present, or local server answering),
        which team a call without models/team would use, and what to do for the others.
        Never shows a key."""
        return await backends_report(service, sampling_available=app.can_sample(ctx))

    _register_resources(mcp, service)
    _register_prompts(mcp)
    _register_extra_tools(mcp, app)
    return mcp, app


def _register_resources(mcp: MCPServer, service: Service) -> None:
    @mcp.resource("massgen://runs", name="runs", mime_type="application/json",
                  description="The 50 most recent runs with status and winner.")
    def runs_index() -> str:
        return RunList(runs=[_summary(r) for r in service.engine.list(50)]).model_dump_json(
            indent=1)

    @mcp.resource("massgen://runs/{run_id}", name="run", mime_type="application/json",
                  description="A run's status and result (JSON).")
    def run_resource(run_id: str) -> str:
        try:
            return service.engine.get(run_id).model_dump_json(indent=1)
        except MassgenError as e:
            raise ResourceNotFoundError(str(e)) from None

    @mcp.resource("massgen://runs/{run_id}/events", name="run-events",
                  mime_type="application/x-ndjson",
                  description="A run's coordination events, one JSON object per line.")
    def run_events(run_id: str) -> str:
        try:
            return "\n".join(json.dumps(e) for e in service.engine.store.events(run_id))
        except MassgenError as e:
            raise ResourceNotFoundError(str(e)) from None


def _register_prompts(mcp: MCPServer) -> None:
    @mcp.prompt(title="Ask the team")
    def consensus(question: str) -> str:
        """Ask a team of models a hard question and get the answer they converge on."""
        return (f"Use the massgen run_consensus tool to ask a team of models:\n\n{question}\n\n"
                "Then report the final answer, who won with how many votes, and any dissent "
                "worth knowing from the votes' reasons.")

    @mcp.prompt(title="Team review")
    def review(target: str, focus: str = "correctness, security and maintainability") -> str:
        """Have a team of models review code, a design or a document."""
        return (f"Use the massgen run_consensus tool to get a team review of {target}. Give the "
                f"team the relevant files with the `files` argument. Focus: {focus}. Ask for "
                "concrete findings ranked by severity, each with a suggested fix. Report the "
                "team's final review and where reviewers disagreed.")

    @mcp.prompt(name="plan", title="Team plan")
    def plan_prompt(goal: str) -> str:
        """Have a team of models agree on a validated task plan for a goal."""
        return (f"Use the massgen plan tool to get a team-agreed task plan for: {goal}\n\n"
                "Then summarize the plan's chunks and first tasks, and follow it.")


def _register_extra_tools(mcp: MCPServer, app: Server) -> None:
    """Plan and checkpoint tools live in their own module (they are bigger)."""
    from .server_extra import register

    register(mcp, app)
