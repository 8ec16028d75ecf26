"""The run tools (run_consensus, get_run, list_runs, cancel_run, list_backends).

Tool bodies are thin: they turn arguments into an `App` call and hand the prepared run to
the `ToolHost`, which streams progress. Long runs can be started with `wait=false` and
followed with `get_run`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from massgen_mcp.backends import BackendContext
from massgen_mcp.backends.availability import BackendsReport, backends_report
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import MassgenError
from massgen_mcp.runs.outcome import is_error, settle_wording
from massgen_mcp.server.apps import APP_URI
from massgen_mcp.server.host import ToolHost, tool_errors
from massgen_mcp.server.result_size import (
    CLAUDE_CODE_INLINE_CHARS,
    CompactRun,
    Detail,
    compact,
    compact_result,
)
from massgen_mcp.server.users import asking

if TYPE_CHECKING:
    from massgen_mcp.app import App

Share = Annotated[float, Field(gt=0, le=1)]


class RunSummary(BaseModel):
    run_id: str
    status: str
    task: str
    winner: str | None = None
    votes: str = Field(default="", description="e.g. '2/3' for the winner")
    elapsed_seconds: float = 0.0
    started_at: str = ""
    team: str = ""
    owner: str = Field(default="", description="who started it (an admin sees every user's)")


class RunList(BaseModel):
    runs: list[RunSummary]


class CancelResult(BaseModel):
    run_id: str
    cancelled: bool
    status: str
    message: str


def run_summary(r: RunResult, owner: str = "") -> RunSummary:
    total = sum(r.tally.values())
    return RunSummary(
        run_id=r.run_id, status=r.status, task=r.task[:160],
        winner=r.winner.agent_id if r.winner else None,
        votes=f"{r.winner.votes}/{total}" if r.winner else "",
        elapsed_seconds=r.elapsed_seconds, started_at=r.started_at, team=r.team, owner=owner)


def run_list(app: App, limit: int) -> RunList:
    """The runs the caller may see, newest first, with their owners."""
    def owner(run_id: str) -> str:
        try:
            return app.run_owner(run_id)
        except MassgenError:  # a record without meta (older, or written by hand)
            return ""

    return RunList(runs=[run_summary(r, owner(r.run_id))
                         for r in app.list_runs(limit, asking())])


def _tool_result(result: RunResult, notes: tuple[str, ...] = (), detail: Detail = "summary",
                 events: list[dict[str, Any]] | None = None) -> CallToolResult:
    """The run as a compact tool result (server/result_size.py), with one line saying where
    to watch the run. A failed run (or one stopped with no answer at all) is an error to the
    client, with its structured result still attached. `notes` say how the team was put
    together (agents left out for missing keys)."""
    from massgen_mcp.runs.view import view_hint

    settle_wording(result)
    view = compact(result, detail, events)
    out = compact_result(view, [f"Note: {n}" for n in notes], [view_hint(result.run_id)])
    out.is_error = is_error(result)
    return out


def tool_result(result: RunResult) -> CallToolResult:
    """A run record as the result `run_consensus` gives (what a task reports after a
    restart)."""
    return _tool_result(result)


#: Lets Claude Code keep a run's result inline (its default is 50,000 characters), and names
#: the run viewer App (server/apps.py) for hosts that render MCP Apps.
RUN_TOOL_META: dict[str, Any] = {"anthropic/maxResultSizeChars": CLAUDE_CODE_INLINE_CHARS,
                                 "ui": {"resourceUri": APP_URI}}


def register_run_tools(mcp: MCPServer, host: ToolHost) -> None:
    """run_consensus, get_run, list_runs, cancel_run and list_backends."""
    app = host.app

    @mcp.tool(title="Run a consensus", meta=RUN_TOOL_META)
    @tool_errors
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
        min_agreement: Annotated[Share | dict[str, Share] | None, Field(description=(
            "Share of the votes the winner needs (e.g. 0.67), or {share, independent_share} "
            "(independent_share: each model family's votes count once); below it the run "
            "ends no_consensus and lists the candidates instead of one answer. Unset: a "
            "winner needs two votes in a team of three or more (a split is no decision)."))
        ] = None,
        stances: Annotated[list[Annotated[str, Field(max_length=1000)]] | None, Field(
            max_length=64, description=(
                "One stance per agent in team order: for, against, neutral or an "
                "instruction; 'agent_id=stance' names the agent."))] = None,
        follow_up_of: Annotated[str | None, Field(max_length=200, description=(
            "A finished run this task follows up (its run_id, or 'latest'): the team is "
            "given that run's task, final answer and dissent, and the runs are linked."))
        ] = None,
    ) -> Annotated[CallToolResult, CompactRun]:
        """Ask a team of models: each agent answers in parallel, sees the others' anonymized
        answers, improves its own or votes; the most-voted answer wins and its author presents
        the final answer. Returns the decision: the final answer, the winner, how strongly
        the team agreed and who dissented, the votes with their reasons, totals and one line
        per agent (every answer and usage detail: get_run with detail). Sends progress
        notifications while it runs."""
        # Arguments first: a bad path is reported as such, before any team is chosen.
        full_context = app.context_for(context, files)
        # looked up as get_run looks a run up: one the caller cannot see is unknown
        previous = app.previous_run(follow_up_of, asking()) if follow_up_of else None
        chosen = await host.team_for(ctx, models=models, team=team, timeout_s=timeout_s,
                                     max_answers_per_agent=max_answers_per_agent,
                                     min_agreement=min_agreement, stances=stances)
        app.admit(asking())
        prepared = app.consensus(chosen, task, context=full_context,
                                 backend_context=BackendContext(session=ctx.session),
                                 owner=asking().name, follow_up=previous)
        return _tool_result(await host.run(prepared, ctx, wait), chosen.team.notes)

    @mcp.tool(title="Get a run", meta=RUN_TOOL_META)
    @tool_errors
    async def get_run(
        run_id: Annotated[str, Field(description="The run id returned by run_consensus.")],
        detail: Annotated[Detail, Field(description=(
            "summary: the decision (as run_consensus returns it); answers: also every "
            "agent's latest answer; agents: also each agent's usage, notes and errors; "
            "events: also the coordination events; all: everything."))] = "summary",
    ) -> Annotated[CallToolResult, CompactRun]:
        """The status of a run (running, completed, timeout, failed, cancelled, interrupted)
        and, when it is over, its decision; `detail` adds every answer, each agent's usage
        or the events. Use it to follow a run started with wait=false."""
        result = app.get_run(run_id, asking())
        events = app.run_events(run_id, asking()) if detail in ("events", "all") else None
        return _tool_result(result, detail=detail, events=events)

    @mcp.tool(title="List runs")
    @tool_errors
    async def list_runs(
        limit: Annotated[int, Field(ge=1, le=200, description="How many runs.")] = 20,
    ) -> RunList:
        """Recent runs, newest first, with their status and winner."""
        return run_list(app, limit)

    @mcp.tool(title="Cancel a run")
    @tool_errors
    async def cancel_run(
        run_id: Annotated[str, Field(description="The run to stop.")],
    ) -> CancelResult:
        """Stop a running run. In-flight model calls are cancelled; the run is recorded as
        cancelled with the best answer so far. Reports what happened: `cancelled` is true
        only when the run has stopped as cancelled."""
        requested, status = await app.cancel_run(run_id, asking())
        cancelled = requested and status in ("cancelled", "interrupted")
        if cancelled:
            message = f"stopped (status: {status})"
        elif requested:
            message = (f"asked the run to stop, but it has not stopped yet (status: {status}); "
                       "check again with get_run")
        else:
            message = f"not running in this server (status: {status}); nothing to cancel"
        return CancelResult(run_id=run_id, cancelled=cancelled, status=status, message=message)

    @mcp.tool(title="List backends")
    @tool_errors
    async def list_backends(ctx: Context) -> BackendsReport:
        """Which providers are usable right now (key present, or local server answering),
        which team a call without models/team would use, and what to do for the others,
        and the usage so far by provider (calls, tokens, cost). Never shows a key."""
        report = await backends_report(app.env, app.default_team,
                                       sampling_available=host.can_sample(ctx))
        report.usage = app.store.usage()
        return report

