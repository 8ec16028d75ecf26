"""Prepare a `checkpoint` run: the review task, the recorded candidates, the returned plan."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from massgen_mcp.config.env import Environment
from massgen_mcp.config.team import Team
from massgen_mcp.coordination.answers import AnswerFormat, AnswerRejected, ParsedAnswer
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import ConfigError, InputError
from massgen_mcp.runs.engine import Engine, PreparedRun
from massgen_mcp.runs.owners import LOCAL_NAME, Principal


class CheckpointInitResult(BaseModel):
    session_id: str
    workspace_dir: str
    replaced: bool
    tools: list[str]
    message: str


class CheckpointResult(BaseModel):
    """The reviewers' step plan the executor must follow (status `completed` = approved;
    `no_agreement` = the reviewers split, so nothing is approved)."""

    status: str
    plan: dict[str, Any] | None = None
    checkpoint_id: str
    elapsed: float
    logs_dir: str
    run_id: str
    winner: str | None = None
    votes: list[dict[str, str]] = Field(default_factory=list)
    error: str | None = None
    approval: str = Field(default="majority", description="How much agreement approval "
                          "needed: majority or unanimous of the live reviewers.")
    needs_person: list[str] = Field(default_factory=list, description="The approved steps "
                                    "that cannot be undone (force-push to a shared branch, "
                                    "deploy, deleting data): they need a person's yes.")
    person: str | None = Field(default=None, description="What the person said about those "
                               "steps: approved, declined, cancelled, no_answer, or not_asked "
                               "(the client cannot ask; see person_note). Anything but "
                               "approved/not_asked: nothing became active.")
    person_note: str | None = None


#: Status of a checkpoint whose reviewers did not agree enough: nothing was approved.
NO_AGREEMENT = "no_agreement"


class _RecordingFormat:
    """Keeps every submitted candidate plan (accepted or rejected) in the audit trail."""

    def __init__(self, inner: AnswerFormat, ckpt_dir: Path) -> None:
        self.inner, self.ckpt_dir, self.count = inner, ckpt_dir, 0
        self.noun = inner.noun
        #: The run's redaction, set once the run exists: candidates are model output and
        #: may quote a key.
        self.redact: Callable[[Any], Any] = lambda value: value

    def tool_description(self) -> str:
        return self.inner.tool_description()

    def tool_parameters(self) -> dict[str, Any]:
        return self.inner.tool_parameters()

    def instructions(self) -> str:
        return self.inner.instructions()

    def render(self, answer: ParsedAnswer) -> str:
        return self.inner.render(answer)

    def parse(self, arguments: dict[str, Any]) -> ParsedAnswer:
        from massgen_mcp.modes.checkpoint.store import record_candidate

        self.count += 1
        label = f"candidate_{self.count:03d}"
        try:
            parsed = self.inner.parse(arguments)
        except AnswerRejected as e:
            record_candidate(self.ckpt_dir, label,
                             self.redact(arguments.get("plan", arguments)),
                             problems=self.redact(e.problems))
            raise
        record_candidate(self.ckpt_dir, label, self.redact(parsed.data))
        return parsed


#: Status of a checkpoint whose irreversible steps the person did not approve.
NOT_APPROVED = "not_approved_by_person"


def person_answered(out: CheckpointResult, verdict: str,
                    bound: dict[str, str] | None = None) -> CheckpointResult:
    """Settle a plan that needed a person (`human.py`): a yes activates the held plan; no,
    cancel or no answer activate nothing; `not_asked` (the client cannot ask) leaves the
    plan as activated, with the note. The answer is kept in the checkpoint's person.json."""
    from massgen_mcp.modes.checkpoint.human import APPROVED, NOT_ASKED, NOT_SHOWN_NOTE
    from massgen_mcp.modes.checkpoint.store import activate_plan, record_person

    ckpt = Path(out.logs_dir)
    out.person = verdict
    if verdict == NOT_ASKED:
        out.person_note = NOT_SHOWN_NOTE
    elif verdict == APPROVED and out.plan is not None:
        activate_plan(ckpt, out.plan, bound)
    else:
        out.person_note = out.error = (
            f"the person's answer was {verdict.replace('_', ' ')}: the plan did NOT become "
            "active and its steps are not approved. Stop, or call checkpoint again with a "
            "plan the person can accept")
        out.status, out.plan = NOT_APPROVED, None
    record_person(ckpt, verdict, out.needs_person, out.person_note or "")
    return out


OVERRIDE_FLAG = "--allow-checkpoint-team-override"


def checkpoint_team(env: Environment, configured: str | None, models: str | None,
                    team: str | None, *, allow_override: bool = False) -> str | None:
    """The reviewer team name: --checkpoint-team, else the bundled `checkpoint` team.

    The agent being reviewed never picks its reviewers: a call's `models`/`team` is an
    InputError unless the operator started the server with --allow-checkpoint-team-override
    (then the call's team is used, held to the same rules as any tool-named team). None
    means the server's default team (the bundled team's keys are not set).
    """
    if models or team:
        if not allow_override:
            raise InputError(
                "checkpoint: the `models` and `team` arguments are refused: the reviewers are "
                "the operator's checkpoint team (--checkpoint-team, else the bundled "
                "`checkpoint` team), never a team the reviewed agent chooses. Call checkpoint "
                f"without them, or start the server with {OVERRIDE_FLAG} to allow it")
        return team
    if configured:
        return configured
    from massgen_mcp.config.load import load_team
    from massgen_mcp.paths import bundled_configs_dir

    if (bundled_configs_dir() / "checkpoint.yaml").is_file():
        try:
            load_team("checkpoint", env)
            return "checkpoint"
        except ConfigError:
            return None  # its keys are not set: fall back to the default team
    return None


def approval_rule(team: Team, operator: str | None = None) -> str:
    """The stricter of the team file's `orchestrator.approval` and the server's flag."""
    rules = {getattr(team.orchestrator, "approval", None) or "majority", operator or "majority"}
    return "unanimous" if "unanimous" in rules else "majority"


def agreement_problem(result: RunResult, rule: str) -> str | None:
    """Why the reviewers did not really agree on the winning plan, or None when they did.

    `majority`: more than half of the live reviewers voted for the winner; `unanimous`: all
    of them. A split or a plurality (1-1-1, 2-2-1) approves nothing. Computed here from the
    run's votes; the run result's shared agreement summary (issue 21) says the same thing.
    """
    live = {a.agent_id for a in result.agents if a.status != "failed"}
    winner = result.winner.agent_id if result.winner else None
    backing = sum(1 for v in result.votes if v.voter in live and v.voted_for == winner)
    need = len(live) if rule == "unanimous" else len(live) // 2 + 1
    if winner is not None and live and backing >= need:
        return None
    tally = ", ".join(f"{agent} {n}" for agent, n in result.tally.items()) or "no votes"
    shape = "split" if backing * 2 <= len(live) else "short of unanimous"
    return (f"no agreement: the reviewers' vote was {shape} ({tally}); the leading plan has "
            f"{backing} of {len(live)} live reviewers' votes and approval needs {need} "
            f"({rule}). Nothing is approved: call checkpoint again with a narrower objective, "
            "clearer action goals or more context")


def prepare_checkpoint(engine: Engine, team: Team, *, objective: str,
                       action_goals: list[Any] | None, eval_criteria: list[str] | str | None,
                       workspace_dir: str | None = None, approval: str | None = None,
                       hold_irreversible: bool = False, **prepare_kwargs: Any
                       ) -> tuple[PreparedRun, Path]:
    from massgen_mcp.modes.checkpoint.answer_format import CheckpointAnswerFormat
    from massgen_mcp.modes.checkpoint.human import needs_person
    from massgen_mcp.modes.checkpoint.prompt import review_task
    from massgen_mcp.modes.checkpoint.store import load_session, new_checkpoint_dir, record_result

    if not isinstance(objective, str) or not objective.strip():
        raise InputError("the objective is empty: say what risky phase needs a plan")
    # The caller's own session: by name, so an admin's checkpoint acts on their sessions only.
    session = load_session(engine.state, workspace_dir,
                           Principal(prepare_kwargs.get("owner", LOCAL_NAME)))
    fmt = CheckpointAnswerFormat(session.tool_names(), action_goals, session.workspace_dir)
    task = review_task(session, objective, action_goals, eval_criteria, include_format=False)
    ckpt = new_checkpoint_dir(session, objective=objective, action_goals=action_goals,
                              eval_criteria=eval_criteria, review_task=task)
    recording = _RecordingFormat(fmt, ckpt)
    # Every reviewer's vote counts toward approval (majority or unanimous): no early stop;
    # the approval rule (agreement_problem) judges a split, so the run's own rule is off.
    team = team.with_overrides(early_stop=False, min_winner_votes=1)
    prepared = engine.prepare(team, task, mode="checkpoint", answer_format=recording,
                                  title=objective, **prepare_kwargs)
    recording.redact = prepared.live.record.redact.value

    rule = approval_rule(team, approval)

    def record(result: RunResult) -> CheckpointResult:
        votes = [v.model_dump() for v in result.votes]
        winner = result.winner.agent_id if result.winner else None
        status: str = result.status
        error = result.error
        problem = agreement_problem(result, rule) if status in ("completed", "degraded") else None
        if problem:
            status, error = NO_AGREEMENT, problem
        plan = result.final_data
        lines = (needs_person(plan["steps"]) if status == "completed" and isinstance(
            plan, dict) and isinstance(plan.get("steps"), list) else [])
        held = hold_irreversible and bool(lines)  # active only once a person says yes
        out = record_result(ckpt, status=status, plan=plan, votes=votes,
                            elapsed=result.elapsed_seconds, winner=winner,
                            activate=False if held else None)
        if problem:
            out["plan"] = None  # kept in plan.json for the record; nobody may follow it
        return CheckpointResult(**out, run_id=result.run_id, votes=votes, error=error,
                                winner=winner, approval=rule, needs_person=lines,
                                person="pending" if held else None)

    prepared.after = record
    return prepared, ckpt
