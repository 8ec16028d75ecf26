"""Structured run modes: `plan` (a validated task plan) and `checkpoint` (a safety step plan).

Each mode is a consensus run with its own answer format, plus what happens to the winning
answer: a plan is stored under `plans/`, a checkpoint plan is recorded (with every candidate)
under `checkpoints/` and becomes the plan the PreToolUse hook enforces.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .config import Team
from .coordination.answers import AnswerFormat, AnswerRejected, ParsedAnswer
from .coordination.result import RunResult
from .errors import ConfigError, InputError
from .service import PreparedRun, Service

DEPTHS = ("shallow", "medium", "deep", "dynamic")


class Consensus(BaseModel):
    run_id: str
    status: str
    winner: str | None = None
    tally: dict[str, int] = Field(default_factory=dict)
    votes: list[dict[str, str]] = Field(default_factory=list)
    elapsed_seconds: float = 0.0
    error: str | None = None


def consensus_of(result: RunResult) -> Consensus:
    return Consensus(run_id=result.run_id, status=result.status,
                     winner=result.winner.agent_id if result.winner else None,
                     tally=result.tally, votes=[v.model_dump() for v in result.votes],
                     elapsed_seconds=result.elapsed_seconds, error=result.error)


# ---------------------------------------------------------------------------- plan


class PlanResult(BaseModel):
    """A team-agreed plan: the structured plan, its Markdown, where it is stored, the vote."""

    plan_id: str | None = Field(description="Stored plan id (None while running or on failure).")
    status: str
    goal: str
    depth: str
    plan: dict[str, Any] | None = Field(default=None, description="summary + tasks (see schema "
                                        "in the plan's new_answer tool)")
    markdown: str = ""
    path: str | None = None
    consensus: Consensus


def prepare_plan(service: Service, team: Team, goal: str, *, depth: str = "dynamic",
                 constraints: list[str] | str | None = None, context: str | None = None,
                 **prepare_kwargs: Any) -> PreparedRun:
    from .plan_format import PlanAnswerFormat, plan_task_text
    from .plan_store import save_plan

    if depth not in DEPTHS:
        raise InputError(f"depth '{depth}' is not one of {', '.join(DEPTHS)}")
    if not isinstance(goal, str) or not goal.strip():
        raise InputError("the goal is empty: say what the plan should achieve")
    if isinstance(constraints, list):
        constraints = "\n".join(f"- {c}" for c in constraints if c and c.strip())
    prepared = service.prepare(team, plan_task_text(goal, constraints), context=context,
                               mode="plan", answer_format=PlanAnswerFormat(depth, goal=goal),
                               **prepare_kwargs)

    def store(result: RunResult) -> PlanResult:
        consensus = consensus_of(result)
        if result.final_data is None:
            return PlanResult(plan_id=None, status=result.status, goal=goal, depth=depth,
                              consensus=consensus)
        stored = save_plan(service.state, goal=goal, depth=depth, plan=result.final_data,
                           run_id=result.run_id, consensus=consensus.model_dump())
        return PlanResult(plan_id=stored.plan_id, status=result.status, goal=goal, depth=depth,
                          plan=stored.plan.model_dump(mode="json"), markdown=stored.markdown,
                          path=stored.path, consensus=consensus)

    prepared.after = store
    return prepared


# ---------------------------------------------------------------------------- checkpoint


class CheckpointInitResult(BaseModel):
    session_id: str
    workspace_dir: str
    replaced: bool
    tools: list[str]
    message: str


class CheckpointResult(BaseModel):
    """The reviewers' step plan the executor must follow (status `completed` = approved)."""

    status: str
    plan: dict[str, Any] | None = None
    checkpoint_id: str
    elapsed: float
    logs_dir: str
    run_id: str
    winner: str | None = None
    votes: list[dict[str, str]] = Field(default_factory=list)
    error: str | None = None


class _RecordingFormat:
    """Keeps every submitted candidate plan (accepted or rejected) in the audit trail."""

    def __init__(self, inner: AnswerFormat, ckpt_dir: Path) -> None:
        self.inner, self.ckpt_dir, self.count = inner, ckpt_dir, 0
        self.noun = inner.noun

    def tool_description(self) -> str:
        return self.inner.tool_description()

    def tool_parameters(self) -> dict[str, Any]:
        return self.inner.tool_parameters()

    def instructions(self) -> str:
        return self.inner.instructions()

    def render(self, answer: ParsedAnswer) -> str:
        return self.inner.render(answer)

    def parse(self, arguments: dict[str, Any]) -> ParsedAnswer:
        from .checkpoint.session import record_candidate

        self.count += 1
        label = f"candidate_{self.count:03d}"
        try:
            parsed = self.inner.parse(arguments)
        except AnswerRejected as e:
            record_candidate(self.ckpt_dir, label, arguments.get("plan", arguments),
                             problems=e.problems)
            raise
        record_candidate(self.ckpt_dir, label, parsed.data)
        return parsed


def checkpoint_team(service: Service, models: str | None, team: str | None) -> str | None:
    """The reviewer team name: the call's, else --checkpoint-team, else the bundled one."""
    if models or team:
        return team
    if service.checkpoint_team:
        return service.checkpoint_team
    from .config import bundled_configs_dir, load_team

    if (bundled_configs_dir() / "checkpoint.yaml").is_file():
        try:
            load_team("checkpoint", service.env)
            return "checkpoint"
        except ConfigError:
            return None  # its keys are not set: fall back to the default team
    return None


def prepare_checkpoint(service: Service, team: Team, *, objective: str,
                       action_goals: list[Any] | None, eval_criteria: list[str] | str | None,
                       workspace_dir: str | None = None, **prepare_kwargs: Any
                       ) -> tuple[PreparedRun, Path]:
    from .checkpoint.plan_format import CheckpointAnswerFormat
    from .checkpoint.prompt import review_task
    from .checkpoint.session import load_session, new_checkpoint_dir, record_result

    if not isinstance(objective, str) or not objective.strip():
        raise InputError("the objective is empty: say what risky phase needs a plan")
    session = load_session(service.state, workspace_dir)
    fmt = CheckpointAnswerFormat(session.tool_names(), action_goals)
    task = review_task(session, objective, action_goals, eval_criteria, include_format=False)
    ckpt = new_checkpoint_dir(session, objective=objective, action_goals=action_goals,
                              eval_criteria=eval_criteria, review_task=task)
    prepared = service.prepare(team, task, mode="checkpoint",
                               answer_format=_RecordingFormat(fmt, ckpt), **prepare_kwargs)

    def record(result: RunResult) -> CheckpointResult:
        votes = [v.model_dump() for v in result.votes]
        out = record_result(ckpt, status=result.status, plan=result.final_data, votes=votes,
                            elapsed=result.elapsed_seconds,
                            winner=result.winner.agent_id if result.winner else None)
        return CheckpointResult(**out, run_id=result.run_id, votes=votes, error=result.error,
                                winner=result.winner.agent_id if result.winner else None)

    prepared.after = record
    return prepared, ckpt


async def plan_once(args: Any, listener: Any) -> PlanResult:
    """`massgen-mcp plan "goal"`: run, store and return the plan."""
    service = Service(Path(args.state_dir) if args.state_dir else None)
    team = await service.team_for(models=args.models, team=args.team,
                                  max_answers_per_agent=args.max_answers,
                                  timeout_s=args.timeout_s,
                                  max_total_tokens=args.max_total_tokens)
    prepared = prepare_plan(service, team, args.goal, depth=args.depth,
                            constraints=args.constraints,
                            context=service.context_for(args.context, args.files),
                            listener=listener)
    await prepared.start()
    outcome: PlanResult = prepared.outcome
    return outcome
