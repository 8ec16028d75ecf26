"""The checkpoint plan's models, the `new_answer` tool schema made from them, and recovery trees.

A plan is `{"steps": [...]}`. A step has `step` (1..n in order), `kind` (verify, action,
backup, notify, wait), `description`, `preconditions` (`"step:N.proceed"`, N an earlier
step), `touches` (what it affects), `recovery` (a recovery node), and optionally
`constraints` and `approved_action` `{goal_id, tool, args, rollback}`. A recovery node is a
terminal (`proceed`, `recheckpoint`, `terminate`), `{if, then, else?, reason?}` or
`{compensate: {tool, args}, then, reason?}`. What the models cannot say (step numbers,
preconditions, tools, goals, rollbacks) is checked in `schema.py`.

The tool schema reviewers see is `plan_tool_schema`, generated from `CheckpointPlan`; where it
is looser than the models (a recovery node, a rollback), the field says so and why.
"""

from __future__ import annotations

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
    WithJsonSchema,
)

from massgen_mcp.coordination.answers import tool_json_schema

KINDS = ("verify", "action", "backup", "notify", "wait")
TERMINALS = ("proceed", "recheckpoint", "terminate")
_MAX_RECOVERY_DEPTH = 8


def _also_ask_for(*names: str) -> Any:
    """A `json_schema_extra` that lists `names` as required in the tool schema, though
    validation fills them in when a plan leaves them out (liberal in what it accepts)."""
    def extra(schema: dict[str, Any], _model: Any) -> None:
        asked = set(schema.get("required", [])) | set(names)
        schema["required"] = [name for name in schema["properties"] if name in asked]
    return extra


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ActionSpec(_Strict):
    """A tool call: used for rollbacks and compensations."""

    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ApprovedAction(_Strict):
    """The exact executor call a step allows, and how to undo it."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_also_ask_for("args"))

    goal_id: str = Field(min_length=1)
    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)
    # Typed loosely for the tool: null ("nothing can undo it") differs from leaving it out.
    rollback: Annotated[ActionSpec | None, WithJsonSchema({})] = Field(
        default=None, description="action steps only (and required there): {tool, args} that "
        "undoes it, or null if nothing can")


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


class Step(_Strict):
    model_config = ConfigDict(extra="forbid",
                              json_schema_extra=_also_ask_for("preconditions", "touches"))

    step: StrictInt = Field(description="1..n in order")
    kind: Literal["verify", "action", "backup", "notify", "wait"]
    description: str = Field(min_length=1)
    preconditions: list[str] = Field(default_factory=list,
                                     description="'step:N.proceed' for earlier steps")
    touches: list[str] = Field(default_factory=list)
    # Checked by `recovery_problems`, which names the path of every problem in the tree; the
    # tool schema describes the shapes rather than nesting a union (no $ref or oneOf).
    recovery: Any = Field(description=f"{' | '.join(TERMINALS)}, or {{if, then, else?, "
                          "reason?}, or {compensate: {tool, args}, then, reason?}")
    constraints: list[str] = Field(default_factory=list)
    approved_action: ApprovedAction | None = None


class CheckpointPlan(_Strict):
    """A checkpoint plan, as reviewers submit it (validated step by step in `schema.py`)."""

    steps: list[Step]


def plan_tool_schema(available_tools: list[str]) -> dict[str, Any]:
    """JSON schema of the `plan` argument, from `CheckpointPlan`: inline, no $ref/oneOf, and
    an approved action's tool is one of `available_tools` when any are given."""
    schema = tool_json_schema(CheckpointPlan)
    action = schema["properties"]["steps"]["items"]["properties"]["approved_action"]
    if available_tools:
        action["properties"]["tool"]["enum"] = list(available_tools)
    return schema


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
