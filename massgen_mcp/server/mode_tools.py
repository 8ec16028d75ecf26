"""The plan and checkpoint tools."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent
from pydantic import BaseModel, Field

from massgen_mcp.backends import BackendContext
from massgen_mcp.modes.checkpoint.run import CheckpointInitResult, CheckpointResult
from massgen_mcp.modes.consensus.schema import consensus_of
from massgen_mcp.modes.planning.run import PlanResult
from massgen_mcp.modes.planning.schema import Depth
from massgen_mcp.modes.planning.store import PlanSummary, StoredPlan
from massgen_mcp.runs.owners import Principal
from massgen_mcp.server.host import ToolHost, tool_errors
from massgen_mcp.server.users import asking


class PlanList(BaseModel):
    plans: list[PlanSummary]


class ExecutorTool(BaseModel):
    """One tool the executor (the coding agent) can call."""

    name: str = Field(description="Tool name as the executor calls it, e.g. Bash or "
                                  "mcp__deploy__release.")
    description: str = ""
    input_schema: dict[str, Any] | str = Field(
        default_factory=dict,
        description="JSON schema of its arguments, or a signature like 'deploy(env: str)'.")


def _plan_summary(out: PlanResult) -> str:
    """The plan tool's text: a short summary (the plan itself, as JSON and Markdown, is in the
    structured result; the text does not repeat it)."""
    if not out.plan_id:
        return f"No plan: the run ended with status {out.status}. " + (
            out.consensus.error or "")
    tasks = (out.plan or {}).get("tasks") or []
    chunks = {t.get("chunk") for t in tasks if isinstance(t, dict)}
    return (f"Plan {out.plan_id}: {len(tasks)} tasks in {len(chunks)} chunks, agreed by the "
            f"team (winner {out.consensus.winner}; votes {out.consensus.tally}). The plan is "
            f"in the structured result (plan, markdown), stored at {out.path}; "
            f"get_plan('{out.plan_id}') returns it again.")


def _checkpoint_reply(out: CheckpointResult) -> CallToolResult:
    """The checkpoint tool's result: the plan to follow (or why there is none), and what a
    person said about its irreversible steps."""
    if out.plan:
        from massgen_mcp.modes.checkpoint.answer_format import render_plan

        text = (f"Checkpoint {out.checkpoint_id} ({out.status}): follow these steps "
                f"exactly; calls outside the approved actions are blocked.\n\n"
                f"{render_plan(out.plan)}")
    else:
        text = f"No approved plan (status {out.status}): {out.error or 'no valid plan'}"
    if out.needs_person:
        text += (f"\n\nSteps that cannot be undone (a person's yes: {out.person}"
                 f"{'; ' + out.person_note if out.person_note and out.plan else ''}):\n"
                 + "\n".join(f"- {line}" for line in out.needs_person))
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=out.model_dump(mode="json"),
                          is_error=out.plan is None)


def register_mode_tools(mcp: MCPServer, host: ToolHost) -> None:
    """plan, get_plan, list_plans, checkpoint_init and checkpoint."""
    app = host.app

    @mcp.tool(title="Team plan")
    @tool_errors
    async def plan(
        goal: Annotated[str, Field(description="What the plan should achieve.")],
        ctx: Context,
        depth: Annotated[Depth, Field(
            description="shallow 5-10 tasks, medium 20-50, deep 100-200, dynamic fits the "
                        "scope.")] = "dynamic",
        constraints: Annotated[list[str] | None, Field(
            description="Rules the plan must respect (tech choices, deadlines, no-gos).")] = None,
        context: Annotated[str | None, Field(description="Background the planners need.")] = None,
        files: Annotated[list[str] | None, Field(description="Text files to give the planners, "
                                                             "relative to the server's working "
                                                             "directory.")] = None,
        models: Annotated[str | None, Field(description="Comma-separated provider/model list.")
                          ] = None,
        team: Annotated[str | None, Field(description="Bundled team name or team YAML path.")
                        ] = None,
        wait: Annotated[bool, Field(description="false: return the run id at once; the plan "
                                                "is stored when the run ends (list_plans).")
                        ] = True,
    ) -> Annotated[CallToolResult, PlanResult]:
        """Ask a team of models for a structured, validated task plan. Each agent submits a
        plan (tasks with ids, chunks, dependencies, priority, type, success criteria and
        verification); invalid plans (cycles, unknown or forward dependencies, wrong size)
        are sent back to be fixed; the team votes; the winning plan is stored under
        .massgen/plans/ and returned with a Markdown rendering and the vote."""
        full_context = app.context_for(context, files)
        chosen = await host.team_for(ctx, models=models, team=team)
        app.admit(asking())
        prepared = app.plan(chosen, goal, depth=depth, constraints=constraints,
                            context=full_context,
                            backend_context=BackendContext(session=ctx.session),
                            owner=asking().name)
        result = await host.run(prepared, ctx, wait)
        if not wait:
            out = PlanResult(plan_id=None, status="running", goal=goal, depth=depth,
                             consensus=consensus_of(result))
            text = (f"Planning run {result.run_id} started; follow it with get_run, then "
                    "get_plan('latest').")
        else:
            out = prepared.outcome
            text = _plan_summary(out)
        return CallToolResult(content=[TextContent(type="text", text=text)],
                              structured_content=out.model_dump(mode="json"),
                              is_error=wait and out.plan_id is None)

    @mcp.tool(title="Get a plan")
    @tool_errors
    async def get_plan(
        plan_id: Annotated[str, Field(description="A plan id, or 'latest'.")] = "latest",
    ) -> StoredPlan:
        """A stored plan: the structured plan, its Markdown and how it was chosen."""
        return app.get_plan(plan_id, asking())

    @mcp.tool(title="List plans")
    @tool_errors
    async def list_plans(
        limit: Annotated[int, Field(ge=1, le=200, description="How many plans.")] = 20,
    ) -> PlanList:
        """Stored plans, newest first, with their goal, depth, size and the run that chose
        them. Read one with get_plan."""
        return PlanList(plans=app.list_plans(limit, asking()))

    @mcp.tool(title="Start a checkpoint session")
    @tool_errors
    async def checkpoint_init(
        workspace_dir: Annotated[str, Field(description="The executor's workspace (project "
                                                        "root).")],
        original_task: Annotated[str, Field(description="The task the executor is working "
                                                        "on.")],
        available_tools: Annotated[list[ExecutorTool], Field(
            min_length=1, description="Every tool the executor can call, with its schema.")],
        trajectory_path: Annotated[str | None, Field(
            description="A file with the executor's recent steps (its tail is shown to the "
                        "reviewers): inside the server's working directory, never a secret "
                        "file (the same rules as `files`).")] = None,
        environment: Annotated[dict[str, Any] | str | None, Field(
            description="Facts about the environment (prod/staging, branch, ...).")] = None,
        safety_policy: Annotated[list[str] | str | None, Field(
            description="Extra rules for this project, added to the built-in policy.")] = None,
    ) -> CheckpointInitResult:
        """Store a checkpoint session for a workspace before a risky phase: the task, the
        executor's tools and any extra safety rules. Re-initializing replaces the session
        (and deactivates its current plan). Then call checkpoint with the objective."""
        session, replaced = app.checkpoint_init(
            workspace_dir, original_task,
            [t.model_dump() for t in available_tools], trajectory_path=trajectory_path,
            environment=environment, safety_policy=safety_policy, who=asking())
        verb = "replaced the previous session" if replaced else "stored a new session"
        return CheckpointInitResult(
            session_id=session.session_id, workspace_dir=session.workspace_dir,
            replaced=replaced, tools=session.tool_names(),
            message=f"{verb} for {session.workspace_dir} with {len(session.available_tools)} "
                    "tools; call checkpoint(objective, action_goals) before the risky phase")

    @mcp.tool(title="Checkpoint: get a safety plan")
    @tool_errors
    async def checkpoint(
        objective: Annotated[str, Field(description="The risky phase about to start, e.g. "
                                                    "'deploy v2.3 to production'.")],
        ctx: Context,
        action_goals: Annotated[list[dict[str, Any] | str] | None, Field(
            description="The risky actions the plan must cover, each {id, description} or a "
                        "string; each gets an approved action.")] = None,
        eval_criteria: Annotated[list[str] | str | None, Field(
            description="Extra criteria for this checkpoint.")] = None,
        workspace_dir: Annotated[str | None, Field(
            description="Which session (default: the most recent checkpoint_init).")] = None,
        models: Annotated[str | None, Field(
            description="Refused unless the server was started with "
                        "--allow-checkpoint-team-override: the reviewers are the operator's "
                        "checkpoint team.")] = None,
        team: Annotated[str | None, Field(
            description="Refused unless the server was started with "
                        "--allow-checkpoint-team-override.")] = None,
    ) -> Annotated[CallToolResult, CheckpointResult]:
        """A reviewer team writes the step plan the executor must follow before a risky
        phase: verify/backup/action/notify/wait steps, preconditions, approved tool calls
        with rollbacks, and recovery trees, checked against the built-in safety policy and the
        hardline policy no plan can approve. The reviewers are the operator's checkpoint team;
        a plan is approved only when a majority of them (or all, if the operator says so)
        vote for it. When it holds a step that cannot be undone (force-push to a shared
        branch, deploy, deleting data), the person is asked (MCP elicitation) before it
        becomes active; a no activates nothing. The approved plan is enforced by the
        `massgen-mcp hook pre-tool-use` Claude Code hook."""
        from massgen_mcp.server.checkpoint_person import can_ask, resume, settle

        # 2026-07-28: the retry carrying the person's answer (no second review run)
        resumed = await resume(ctx, app.checkpoint_person_answered)
        if resumed is not None:
            return _checkpoint_reply(resumed)
        # no session (of this caller's): say so before anything
        app.checkpoint_session(workspace_dir, Principal(asking().name))
        name = app.reviewer_team_name(models, team)  # models/team: operator's flag only
        chosen = (await host.team_for(ctx, models=models, team=name)).team
        if not app.allow_checkpoint_team_override and any(
                a.provider.uses_client_model for a in chosen.agents):
            raise ToolError(
                "checkpoint: no reviewer team is configured (the bundled checkpoint team's "
                "keys are not set), and sampling would make the calling agent's own model its "
                "reviewer. Set the provider keys, or start the server with "
                "--checkpoint-team <team>")
        app.admit(asking())
        prepared, _ = app.checkpoint(
            chosen, objective=objective, action_goals=action_goals,
            eval_criteria=eval_criteria, workspace_dir=workspace_dir,
            backend_context=BackendContext(session=ctx.session),
            hold_irreversible=can_ask(ctx), owner=asking().name)
        await host.run(prepared, ctx, True)
        # A plan with irreversible steps: the person's yes first, where the client can ask.
        settled = await settle(ctx, prepared.outcome, objective, app.checkpoint_person_answered,
                               app.checkpoint_bound)
        if isinstance(settled, InputRequiredResult):
            # 2026-07-28: the client asks its user and retries. The SDK passes this result
            # through unchanged; declaring it in the annotation would drop the outputSchema.
            return settled  # type: ignore[return-value]
        return _checkpoint_reply(settled)
