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


def checkpoint_team(env: Environment, configured: str | None, models: str | None,
                    team: str | None) -> str | None:
    """The reviewer team name: the call's, else --checkpoint-team, else the bundled one."""
    if models or team:
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


def prepare_checkpoint(engine: Engine, team: Team, *, objective: str,
                       action_goals: list[Any] | None, eval_criteria: list[str] | str | None,
                       workspace_dir: str | None = None, **prepare_kwargs: Any
                       ) -> tuple[PreparedRun, Path]:
    from massgen_mcp.modes.checkpoint.answer_format import CheckpointAnswerFormat
    from massgen_mcp.modes.checkpoint.prompt import review_task
    from massgen_mcp.modes.checkpoint.store import load_session, new_checkpoint_dir, record_result

    if not isinstance(objective, str) or not objective.strip():
        raise InputError("the objective is empty: say what risky phase needs a plan")
    session = load_session(engine.state, workspace_dir)
    fmt = CheckpointAnswerFormat(session.tool_names(), action_goals)
    task = review_task(session, objective, action_goals, eval_criteria, include_format=False)
    ckpt = new_checkpoint_dir(session, objective=objective, action_goals=action_goals,
                              eval_criteria=eval_criteria, review_task=task)
    recording = _RecordingFormat(fmt, ckpt)
    prepared = engine.prepare_run(team, task, mode="checkpoint", answer_format=recording,
                                  **prepare_kwargs)
    recording.redact = prepared.live.record.redact.value

    def record(result: RunResult) -> CheckpointResult:
        votes = [v.model_dump() for v in result.votes]
        out = record_result(ckpt, status=result.status, plan=result.final_data, votes=votes,
                            elapsed=result.elapsed_seconds,
                            winner=result.winner.agent_id if result.winner else None)
        return CheckpointResult(**out, run_id=result.run_id, votes=votes, error=result.error,
                                winner=result.winner.agent_id if result.winner else None)

    prepared.after = record
    return prepared, ckpt
