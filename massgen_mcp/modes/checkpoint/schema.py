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
model can fix its plan in one try. It is liberal in what it accepts and strict in what it
records: fields a plan or a step does not have (a `summary`, a step's `notes`, an
approved action's `why`) are dropped and listed in the plan's `notes`, so they never
reach the approved calls. What cannot be dropped without changing what runs stays an
error: an unknown field in a recovery node (`otherwise` for `else` would change what
happens on failure) or in an action spec with no `args` (`arguments` for `args`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictInt,
    StringConstraints,
    Tag,
    TypeAdapter,
    ValidationError,
)

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


class BranchNode(_Strict):
    """`{if, then, else?, reason?}`: a condition the executor checks, and what follows."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    if_: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)] = Field(
        alias="if")
    then: Recovery
    else_: Recovery | None = Field(default=None, alias="else")
    reason: str | None = None


class CompensateNode(_Strict):
    """`{compensate: {tool, args}, then, reason?}`: an undo call, then what follows."""

    compensate: ActionSpec
    then: Recovery
    reason: str | None = None


def _recovery_tag(node: Any) -> str | None:
    if isinstance(node, str):
        return "terminal"
    if isinstance(node, BranchNode | CompensateNode):  # when serializing
        return "branch" if isinstance(node, BranchNode) else "compensate"
    if isinstance(node, dict):
        return "branch" if "if" in node else "compensate" if "compensate" in node else None
    return None


Recovery = Annotated[
    Annotated[Literal["proceed", "recheckpoint", "terminate"], Tag("terminal")]
    | Annotated[BranchNode, Tag("branch")]
    | Annotated[CompensateNode, Tag("compensate")],
    Discriminator(_recovery_tag, custom_error_type="recovery_shape",
                  custom_error_message="not a recovery node"),
]
BranchNode.model_rebuild()
CompensateNode.model_rebuild()
_RECOVERY: TypeAdapter[Any] = TypeAdapter(Recovery)
_TAGS = frozenset({"terminal", "branch", "compensate"})
_SHAPE = ("a recovery node is 'proceed', 'recheckpoint', 'terminate', "
          "{if, then, else?, reason?} or {compensate: {tool, args}, then, reason?}")


def _depth(node: Any) -> int:
    """Nesting depth of a recovery tree, counted without recursion (a hostile tree is deep)."""
    deepest, stack = 0, [(node, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict) and depth <= _MAX_RECOVERY_DEPTH:
            stack.extend((item[k], depth + 1) for k in ("then", "else") if k in item)
    return deepest


def _recovery_path(prefix: str, loc: tuple[int | str, ...]) -> str:
    """`steps[2].recovery` + ('branch', 'then', 'terminal') -> `steps[2].recovery.then`."""
    path, expect_tag = prefix, True
    for part in loc:
        if expect_tag and part in _TAGS:
            expect_tag = False
            continue
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
        expect_tag = part in ("then", "else")
    return path


def recovery_problems(path: str, node: Any) -> tuple[Any, list[str]]:
    """(normalized recovery tree, problems), each problem naming its path."""
    if _depth(node) > _MAX_RECOVERY_DEPTH:
        return None, [f"{path}: recovery is nested too deeply"]
    try:
        value = _RECOVERY.validate_python(node)
    except ValidationError as e:
        return None, [_recovery_problem(path, err) for err in e.errors()]
    return _RECOVERY.dump_python(value, by_alias=True, exclude_none=True), []


def _recovery_problem(prefix: str, err: Any) -> str:
    loc = tuple(err["loc"])
    path, kind, value = _recovery_path(prefix, loc), err["type"], err.get("input")
    in_action = path.split(".")[-2:-1] == ["compensate"]
    if kind == "literal_error":
        return (f"{path}: '{value}' is not a recovery terminal (use {', '.join(TERMINALS)})")
    if kind == "recovery_shape":
        got = f"keys {sorted(value)}" if isinstance(value, dict) else repr(value)[:60]
        return f"{path}: {_SHAPE}; got {got}"
    if kind == "missing":
        return f"{path}: required field is missing"
    if kind == "extra_forbidden":
        what = "an action spec has tool, args" if in_action else _SHAPE
        return f"{path}: unknown field ({what})"
    if kind == "string_too_short" and path.endswith(".if"):
        return f"{path}: must be a non-empty condition"
    if kind == "string_type" and path.endswith(".reason"):
        return f"{path}: must be a string"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"{path}: must be an object"
    if kind == "string_too_short":
        return f"{path}: must not be empty"
    return f"{path}: {err['msg'][0].lower()}{err['msg'][1:]}"


def compensations(node: Any, path: str) -> list[tuple[str, str]]:
    """(path, tool) of every compensate call in a normalized recovery tree."""
    found: list[tuple[str, str]] = []
    if isinstance(node, dict):
        if "compensate" in node:
            found.append((f"{path}.compensate.tool", node["compensate"]["tool"]))
        for key in ("then", "else"):
            if key in node:
                found.extend(compensations(node[key], f"{path}.{key}"))
    return found


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
