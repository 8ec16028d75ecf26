"""Checking a checkpoint plan: `validate_checkpoint_plan`, and the hard line no plan crosses.

The plan's shape is in `models.py`. An action step must carry an approved action whose
`rollback` is given (an action spec `{tool, args}`, or null when nothing can undo it); other
kinds may not have a rollback. Approved, rollback and compensate tools must be among the
executor's tools, and every action goal needs an approved action.

`validate_checkpoint_plan` reports every problem at once, each with its path, so a reviewer
model can fix its plan in one try. It is liberal in what it accepts and strict in what it
records: fields a plan or a step does not have (a `summary`, a step's `notes`, an
approved action's `why`) are dropped and listed in the plan's `notes`, so they never
reach the approved calls. What cannot be dropped without changing what runs stays an
error: an unknown field in a recovery node (`otherwise` for `else` would change what
happens on failure) or in an action spec with no `args` (`arguments` for `args`).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ValidationError

from massgen_mcp.coordination.answers import AnswerRejected
from massgen_mcp.hook.matching import same_tool
from massgen_mcp.modes.checkpoint.models import (
    KINDS,
    ActionSpec,
    ApprovedAction,
    Step,
    compensations,
    recovery_problems,
)

_PRECONDITION = re.compile(r"^step:(\d+)\.proceed$")


#: What each kind of object has, as a problem or a note names it.
_FIELDS = {owner: ", ".join(model.model_fields) for owner, model in
           (("step", Step), ("approved_action", ApprovedAction), ("action", ActionSpec))}


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

    def recovery(self, path: str, node: Any) -> Any:
        tree, problems = recovery_problems(path, node)
        self.problems.extend(problems)
        for where, tool in compensations(tree, path):
            self.tool(where, tool)
        return tree

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


def _drop_extras(path: str, raw: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """`raw` without the fields a step (or its actions) does not have, each noted."""
    kept = {k: v for k, v in raw.items() if k in Step.model_fields}
    for key in sorted(raw.keys() - kept.keys()):
        notes.append(f"{path}.{key}: dropped (a step has {_FIELDS['step']})")
    action = kept.get("approved_action")
    if isinstance(action, dict) and "args" in action:
        kept["approved_action"] = action = _drop_spec(
            f"{path}.approved_action", action, ApprovedAction, "approved_action", notes)
        rollback = action.get("rollback")
        if isinstance(rollback, dict) and "args" in rollback:
            action["rollback"] = _drop_spec(f"{path}.approved_action.rollback", rollback,
                                            ActionSpec, "action", notes)
    return kept


def _drop_spec(path: str, raw: dict[str, Any], model: type[BaseModel], owner: str,
               notes: list[str]) -> dict[str, Any]:
    # Only when `args` is there: without it an extra field may be the call's arguments
    # under another name, and dropping it would approve a different call.
    kept = {k: v for k, v in raw.items() if k in model.model_fields}
    for key in sorted(raw.keys() - kept.keys()):
        notes.append(f"{path}.{key}: dropped ({owner} has {_FIELDS[owner]})")
    return kept


def _dump(step: Step, recovery: Any) -> dict[str, Any]:
    out = step.model_dump(exclude={"approved_action", "constraints"})
    out["recovery"] = recovery
    if step.constraints:
        out["constraints"] = step.constraints
    if step.approved_action is not None:
        action = step.approved_action.model_dump()
        if step.kind != "action":
            action.pop("rollback")
        out["approved_action"] = action
    return out


def validate_checkpoint_plan(
    data: Any, *, available_tools: list[str], action_goals: list[Any] | None,
    workspace: str | None = None,
) -> dict[str, Any]:
    """Check a plan; return it normalized or raise `AnswerRejected` listing every problem.

    With `workspace`, every approved call, rollback and compensation is also held to the
    hardline policy (`hook/hardline.py`), judged as the hook would judge it there: a plan
    that lists a hardline action is rejected, naming the step and the reason.
    """
    if not isinstance(data, dict):
        raise AnswerRejected(["plan: must be an object {\"steps\": [...]}"])
    goals = normalize_goals(action_goals)
    check = _Checker(available_tools, goals)
    notes = [f"plan.{key}: dropped (a plan has only 'steps')"
             for key in sorted(data.keys() - {"steps"})]
    raw_steps = data.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise AnswerRejected(["steps: must be a non-empty list of steps"])
    steps: list[tuple[Step, Any]] = []
    mapped: set[str] = set()
    for i, raw in enumerate(raw_steps):
        path = f"steps[{i}]"
        if not isinstance(raw, dict):
            check.problems.append(f"{path}: must be an object")
            continue
        raw = _drop_extras(path, raw, notes)
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
        recovery = check.recovery(f"{path}.recovery", step.recovery)
        goal = check.action(path, step, raw)
        if goal:
            mapped.add(goal)
        steps.append((step, recovery))
    for wanted in goals:
        if wanted["id"] not in mapped:
            check.problems.append(
                f"action goal '{wanted['id']}' ({wanted['description']}) is not served by any "
                f"approved_action: add a step whose approved_action.goal_id is "
                f"'{wanted['id']}'")
    if check.problems:
        raise AnswerRejected(check.problems)
    plan: dict[str, Any] = {"steps": [_dump(step, tree) for step, tree in steps]}
    if workspace is not None:
        from massgen_mcp.hook.active import approved_calls

        hard = hardline_problems(approved_calls(plan["steps"]), workspace)
        if hard:
            raise AnswerRejected([f"{p}; remove it from the plan (no plan can approve it)"
                                  for p in hard])
    if notes:
        plan["notes"] = notes
    return plan


def hardline_problems(approved: list[dict[str, Any]], workspace: str) -> list[str]:
    """Each approved call, rollback or compensation of a plan that is on the hard line,
    as a validation problem naming the step (placeholders are judged as a plain value)."""
    from massgen_mcp.hook.hardline import RecordingScope, call_findings
    from massgen_mcp.hook.matching import PLACEHOLDER
    from massgen_mcp.hook.patterns import check_call

    def fill(value: Any) -> Any:
        if isinstance(value, str):
            return PLACEHOLDER.sub("X", value)
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [fill(v) for v in value]
        return value

    problems: list[str] = []
    for entry in approved:
        args = fill(entry.get("args") or {})
        if not isinstance(args, dict):
            continue
        scope = RecordingScope.record(workspace, workspace)
        findings = check_call(entry["tool"], args, scope)
        hard = call_findings(entry["tool"], args, scope, findings)
        role = "" if entry.get("role") == "action" else f" ({entry.get('role')})"
        problems.extend(f"step {entry['step']}{role}: {entry['tool']} {f.detail}" for f in hard)
    return problems
