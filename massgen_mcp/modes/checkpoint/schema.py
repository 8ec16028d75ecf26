"""The checkpoint plan: its schema, its validation, and the `new_answer` format reviewers use.

A plan is `{"steps": [...]}`. A step has `step` (1..n in order), `kind` (verify, action,
backup, notify, wait), `description`, `preconditions` (`"step:N.proceed"`, N an earlier
step), `touches` (what it affects), `recovery` (a recovery node), and optionally
`constraints` and `approved_action` `{goal_id, tool, args, rollback}`. An action step must
carry an approved action whose `rollback` is given (an action spec `{tool, args}`, or
null when nothing can undo it); other kinds may not have a rollback. A recovery node is a
terminal (`proceed`, `recheckpoint`, `terminate`), `{if, then, else?, reason?}` or
`{compensate: {tool, args}, then, reason?}`. Approved, rollback and compensate tools must
be among the executor's tools, and every action goal needs an approved action.

`validate_checkpoint_plan` reports every problem at once, each with its path, so a reviewer
model can fix its plan in one try.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from massgen_mcp.coordination.answers import AnswerRejected
from massgen_mcp.hook.matching import same_tool

KINDS = ("verify", "action", "backup", "notify", "wait")
TERMINALS = ("proceed", "recheckpoint", "terminate")
_PRECONDITION = re.compile(r"^step:(\d+)\.proceed$")
_MAX_RECOVERY_DEPTH = 8


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ActionSpec(_Strict):
    """A tool call: used for rollbacks and compensations."""

    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ApprovedAction(_Strict):
    """The exact executor call a step allows, and how to undo it."""

    goal_id: str = Field(min_length=1)
    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)
    rollback: ActionSpec | None = None


class Step(_Strict):
    step: StrictInt
    kind: Literal["verify", "action", "backup", "notify", "wait"]
    description: str = Field(min_length=1)
    preconditions: list[str] = Field(default_factory=list)
    touches: list[str] = Field(default_factory=list)
    recovery: Any
    constraints: list[str] = Field(default_factory=list)
    approved_action: ApprovedAction | None = None


_FIELDS = {
    "step": "step, kind, description, preconditions, touches, recovery, constraints, "
            "approved_action",
    "approved_action": "goal_id, tool, args, rollback",
    "action": "tool, args",
}


def normalize_goals(action_goals: list[Any] | None) -> list[dict[str, Any]]:
    """Action goals as `{"id", "description", ...}`; missing ids become `g1`, `g2`, ..."""
    goals: list[dict[str, Any]] = []
    for i, goal in enumerate(action_goals or []):
        item = dict(goal) if isinstance(goal, dict) else {"description": str(goal)}
        goal_id = item.pop("goal_id", None) or item.get("id") or f"g{i + 1}"
        description = item.pop("goal", None) or item.get("description") or ""
        goals.append({**item, "id": str(goal_id), "description": str(description)})
    return goals


def _loc_path(prefix: str, loc: tuple[int | str, ...]) -> str:
    path = prefix
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _pydantic_problems(prefix: str, error: ValidationError, model: str = "step") -> list[str]:
    problems = []
    for err in error.errors():
        loc = tuple(err["loc"])
        path = _loc_path(prefix, loc)
        kind = err["type"]
        if kind == "missing":
            problems.append(f"{path}: required field is missing")
        elif kind == "extra_forbidden":
            depth = len(loc) + (2 if model == "action" else 0)
            owner = "step" if depth == 1 else ("approved_action" if depth == 2 else "action")
            noun = {"step": "a step", "approved_action": "an approved_action",
                    "action": "an action spec"}[owner]
            problems.append(f"{path}: unknown field ({noun} has {_FIELDS[owner]})")
        elif kind == "literal_error":
            problems.append(f"{path}: must be one of {', '.join(KINDS)}")
        elif kind in ("model_type", "dict_type", "model_attributes_type"):
            problems.append(f"{path}: must be an object")
        elif kind == "string_too_short":
            problems.append(f"{path}: must not be empty")
        else:
            problems.append(f"{path}: {err['msg'][0].lower()}{err['msg'][1:]}")
    return problems


class _Checker:
    def __init__(self, available_tools: list[str], goals: list[dict[str, Any]]) -> None:
        self.tools = list(available_tools)
        self.goal_ids = [g["id"] for g in goals]
        self.problems: list[str] = []

    def tool(self, path: str, name: str) -> None:
        if not any(same_tool(name, t) or same_tool(t, name) for t in self.tools):
            listed = ", ".join(self.tools) or "none were given"
            self.problems.append(f"{path}: '{name}' is not one of the executor's tools "
                                 f"({listed})")

    def preconditions(self, path: str, values: list[str], number: int, count: int) -> None:
        for j, value in enumerate(values):
            where = f"{path}.preconditions[{j}]"
            m = _PRECONDITION.match(value.strip())
            if not m:
                self.problems.append(f"{where}: '{value}' must look like 'step:N.proceed'")
                continue
            n = int(m.group(1))
            if n < 1 or n > count:
                self.problems.append(f"{where}: '{value}' refers to step {n}, which does not "
                                     f"exist (the plan has {count} steps)")
            elif n == number:
                self.problems.append(f"{where}: '{value}' refers to the step itself")
            elif n > number:
                self.problems.append(f"{where}: '{value}' refers to a later step")

    def recovery(self, path: str, node: Any, depth: int = 0) -> None:
        if depth > _MAX_RECOVERY_DEPTH:
            self.problems.append(f"{path}: recovery is nested too deeply")
            return
        if isinstance(node, str):
            if node not in TERMINALS:
                self.problems.append(f"{path}: '{node}' is not a recovery terminal "
                                     f"(use {', '.join(TERMINALS)})")
            return
        shape = ("a recovery node is 'proceed', 'recheckpoint', 'terminate', "
                 "{if, then, else?, reason?} or {compensate: {tool, args}, then, reason?}")
        if not isinstance(node, dict) or not ({"if", "compensate"} & node.keys()):
            got = f"keys {sorted(node)}" if isinstance(node, dict) else repr(node)[:60]
            self.problems.append(f"{path}: {shape}; got {got}")
            return
        branch = "if" in node
        allowed = {"if", "then", "else", "reason"} if branch else {"compensate", "then",
                                                                    "reason"}
        for key in sorted(node.keys() - allowed):
            self.problems.append(f"{path}.{key}: unknown field ({shape})")
        if branch and (not isinstance(node["if"], str) or not node["if"].strip()):
            self.problems.append(f"{path}.if: must be a non-empty condition")
        if not branch:
            try:
                spec = ActionSpec.model_validate(node["compensate"])
            except ValidationError as e:
                self.problems.extend(_pydantic_problems(f"{path}.compensate", e, "action"))
            else:
                self.tool(f"{path}.compensate.tool", spec.tool)
        if "reason" in node and not isinstance(node["reason"], str):
            self.problems.append(f"{path}.reason: must be a string")
        if "then" not in node:
            self.problems.append(f"{path}.then: required field is missing")
        else:
            self.recovery(f"{path}.then", node["then"], depth + 1)
        if branch and "else" in node:
            self.recovery(f"{path}.else", node["else"], depth + 1)

    def action(self, path: str, step: Step, raw: dict[str, Any]) -> str | None:
        action = step.approved_action
        raw_action = raw.get("approved_action")
        has_rollback = isinstance(raw_action, dict) and "rollback" in raw_action
        if step.kind == "action" and action is None:
            self.problems.append(f"{path}.approved_action: required on an action step "
                                 "({goal_id, tool, args, rollback})")
        elif step.kind == "action" and not has_rollback:
            self.problems.append(f"{path}.approved_action.rollback: required on an action "
                                 "step: {tool, args} that undoes it, or null if nothing can")
        elif step.kind != "action" and has_rollback:
            self.problems.append(f"{path}.approved_action.rollback: only action steps have a "
                                 f"rollback (this is a {step.kind} step); remove it")
        if action is None:
            return None
        self.tool(f"{path}.approved_action.tool", action.tool)
        if action.rollback is not None and step.kind == "action":
            self.tool(f"{path}.approved_action.rollback.tool", action.rollback.tool)
        if self.goal_ids and action.goal_id not in self.goal_ids:
            self.problems.append(f"{path}.approved_action.goal_id: '{action.goal_id}' is not "
                                 f"an action goal ({', '.join(self.goal_ids)})")
        return action.goal_id


def _dump(step: Step) -> dict[str, Any]:
    out = step.model_dump(exclude={"approved_action", "constraints"})
    if step.constraints:
        out["constraints"] = step.constraints
    if step.approved_action is not None:
        action = step.approved_action.model_dump()
        if step.kind != "action":
            action.pop("rollback")
        out["approved_action"] = action
    return out


def validate_checkpoint_plan(
    data: Any, *, available_tools: list[str], action_goals: list[Any] | None
) -> dict[str, Any]:
    """Check a plan; return it normalized or raise `AnswerRejected` listing every problem."""
    if not isinstance(data, dict):
        raise AnswerRejected(["plan: must be an object {\"steps\": [...]}"])
    goals = normalize_goals(action_goals)
    check = _Checker(available_tools, goals)
    for key in sorted(data.keys() - {"steps"}):
        check.problems.append(f"plan.{key}: unknown field (a plan has only 'steps')")
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise AnswerRejected([*check.problems, "steps: must be a non-empty list of steps"])
    steps: list[Step] = []
    mapped: set[str] = set()
    for i, raw in enumerate(raw_steps):
        path = f"steps[{i}]"
        if not isinstance(raw, dict):
            check.problems.append(f"{path}: must be an object")
            continue
        try:
            step = Step.model_validate(raw)
        except ValidationError as e:
            check.problems.extend(_pydantic_problems(path, e))
            # Check what can still be checked, and count its goal, so one broken field
            # neither hides other problems nor adds a spurious "goal not served".
            pre = raw.get("preconditions")
            if isinstance(pre, list) and all(isinstance(p, str) for p in pre):
                check.preconditions(path, pre, i + 1, len(raw_steps))
            if "recovery" in raw:
                check.recovery(f"{path}.recovery", raw["recovery"])
            raw_action = raw.get("approved_action")
            if isinstance(raw_action, dict) and isinstance(raw_action.get("goal_id"), str):
                mapped.add(raw_action["goal_id"])
            continue
        if step.step != i + 1:
            check.problems.append(f"{path}.step: expected {i + 1} (steps are numbered 1..n "
                                  f"in order), got {step.step}")
        check.preconditions(path, step.preconditions, i + 1, len(raw_steps))
        check.recovery(f"{path}.recovery", step.recovery)
        goal = check.action(path, step, raw)
        if goal:
            mapped.add(goal)
        steps.append(step)
    for goal in goals:
        if goal["id"] not in mapped:
            check.problems.append(
                f"action goal '{goal['id']}' ({goal['description']}) is not served by any "
                f"approved_action: add a step whose approved_action.goal_id is '{goal['id']}'")
    if check.problems:
        raise AnswerRejected(check.problems)
    return {"steps": [_dump(s) for s in steps]}
