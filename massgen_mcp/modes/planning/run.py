"""Prepare a `plan` run and turn its result into a stored `PlanResult`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from massgen_mcp.config.team import Team
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import InputError
from massgen_mcp.modes.consensus.schema import Consensus, consensus_of
from massgen_mcp.modes.planning.answer_format import PlanAnswerFormat, plan_task_text
from massgen_mcp.modes.planning.schema import DEPTHS
from massgen_mcp.modes.planning.store import save_plan
from massgen_mcp.runs.engine import Engine, PreparedRun
from massgen_mcp.runs.owners import LOCAL_NAME


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


def prepare_plan(engine: Engine, team: Team, goal: str, *, depth: str = "dynamic",
                 constraints: list[str] | str | None = None, context: str | None = None,
                 **prepare_kwargs: Any) -> PreparedRun:

    if depth not in DEPTHS:
        raise InputError(f"depth '{depth}' is not one of {', '.join(DEPTHS)}")
    if not isinstance(goal, str) or not goal.strip():
        raise InputError("the goal is empty: say what the plan should achieve")
    if isinstance(constraints, list):
        constraints = "\n".join(f"- {c}" for c in constraints if c and c.strip())
    prepared = engine.prepare(team, plan_task_text(goal, constraints), context=context,
                               mode="plan", answer_format=PlanAnswerFormat(depth, goal=goal),
                               title=goal, **prepare_kwargs)

    def store(result: RunResult) -> PlanResult:
        consensus = consensus_of(result)
        if result.final_data is None:
            return PlanResult(plan_id=None, status=result.status, goal=goal, depth=depth,
                              consensus=consensus)
        stored = save_plan(engine.state, goal=goal, depth=depth, plan=result.final_data,
                           run_id=result.run_id, consensus=consensus.model_dump(),
                           owner=prepare_kwargs.get("owner", LOCAL_NAME))
        return PlanResult(plan_id=stored.plan_id, status=result.status, goal=goal, depth=depth,
                          plan=stored.plan.model_dump(mode="json"), markdown=stored.markdown,
                          path=stored.path, consensus=consensus)

    prepared.after = store
    return prepared
