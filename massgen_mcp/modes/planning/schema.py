"""Plans: the schema and its validation.

A plan is a `summary` plus a list of `tasks`. Each task belongs to a *chunk* (a phase or
milestone). Chunk order is the order in which chunks first appear in `tasks`; a task may
depend only on tasks in its own chunk or an earlier one, so chunks can be done one after
another. Storage lives in `plan_store`.

In plan mode agents submit plans through `new_answer` (see `plan_format.PlanAnswerFormat`);
an invalid plan is rejected with every problem listed at once, so a model can fix it in one try.
How a plan reads as text is in `plan_format`.
"""

from __future__ import annotations

import difflib
import heapq
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from massgen_mcp.coordination.answers import AnswerRejected, tool_json_schema
from massgen_mcp.errors import InputError
from massgen_mcp.modes.planning.depth import DEPTHS as DEPTHS  # re-exported
from massgen_mcp.modes.planning.depth import Depth as Depth

Priority = Literal["high", "medium", "low"]
TaskType = Literal["deterministic", "exploratory"]

#: Target task count per depth; `None` means "fit the scope of the goal".
DEPTH_TARGETS: dict[str, tuple[int, int] | None] = {
    "shallow": (5, 10),
    "medium": (20, 50),
    "deep": (100, 200),
    "dynamic": None,
}
#: Bounds for `dynamic` plans, which have no target.
DYNAMIC_RANGE = (1, 250)
#: Most problems listed in one rejection; a plan broken everywhere needs a rethink, not a list.
MAX_PROBLEMS = 40

_TASK_FIELDS = (
    "id", "chunk", "description", "depends_on", "priority", "task_type",
    "success_criteria", "verification",
)


def accepted_task_range(depth: str) -> tuple[int, int]:
    """Task counts accepted for `depth`: half the target minimum (rounded up) to 1.5x the
    target maximum, so only plans *far* outside the target are rejected; `dynamic` takes
    1-250. Raises `InputError` for an unknown depth."""
    target = _target(depth)
    if target is None:
        return DYNAMIC_RANGE
    low, high = target
    return (low + 1) // 2, high * 3 // 2


def _target(depth: str) -> tuple[int, int] | None:
    if depth not in DEPTH_TARGETS:
        raise InputError(f"depth {depth!r} is not valid: use one of {', '.join(DEPTH_TARGETS)}")
    return DEPTH_TARGETS[depth]


# ---------------------------------------------------------------------------- schema

NonEmpty = Annotated[str, Field(min_length=1)]


class PlanTask(BaseModel):
    """One task of a plan."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, coerce_numbers_to_str=True)

    id: str = Field(
        min_length=1, max_length=64,
        description="Unique short id without spaces, e.g. 'db-schema' or 'T3'.",
    )
    chunk: str = Field(
        min_length=1, max_length=120,
        description="The phase or milestone this task belongs to. Chunks are done in the order "
        "they first appear in `tasks`.",
    )
    description: str = Field(
        min_length=1,
        description="What to do, concretely enough for an engineer or coding agent to start.",
    )
    depends_on: list[NonEmpty] = Field(
        default_factory=list,
        description="Ids of the tasks that must be finished first, all in this chunk or an "
        "earlier one. [] if none.",
    )
    priority: Priority = Field(
        description="high: on the critical path or risky; medium: needed; low: nice to have.",
    )
    task_type: TaskType = Field(
        description="deterministic: the steps are known; exploratory: needs investigation, a "
        "prototype or a decision first.",
    )
    success_criteria: list[NonEmpty] = Field(
        min_length=1, description="Checkable statements that are true once the task is done.",
    )
    verification: str = Field(
        min_length=1,
        description="How to check the task is done: a command, a test, a measurement, a review.",
    )

    @field_validator("id")
    @classmethod
    def _no_spaces(cls, value: str) -> str:
        if any(c.isspace() for c in value):
            raise ValueError("must not contain spaces; use a short id like 'db-schema' or 'T3'")
        return value

    @field_validator("depends_on")
    @classmethod
    def _dedupe(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))


class Plan(BaseModel):
    """A plan: a short summary and its tasks (chunk order = order of first appearance)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    summary: str = Field(
        min_length=1, max_length=1000,
        description="1-3 sentences: the approach and the main risk.",
    )
    tasks: list[PlanTask] = Field(description="The tasks, grouped by chunk, chunks in order.")

    def chunks(self) -> list[str]:
        """Chunk names in order of first appearance."""
        return list(dict.fromkeys(t.chunk for t in self.tasks))

    def ordered(self) -> list[tuple[str, list[PlanTask]]]:
        """Tasks grouped by chunk in chunk order; within a chunk in dependency order, ties
        kept in the order given (a stable topological sort)."""
        groups: dict[str, list[tuple[int, PlanTask]]] = {c: [] for c in self.chunks()}
        for i, t in enumerate(self.tasks):
            groups[t.chunk].append((i, t))
        return [(c, _topological(members)) for c, members in groups.items()]


def _topological(members: list[tuple[int, PlanTask]]) -> list[PlanTask]:
    index = {t.id: i for i, t in members}
    waiting = {i: {d for d in t.depends_on if d in index and d != t.id} for i, t in members}
    by_index = dict(members)
    ready = [i for i, deps in waiting.items() if not deps]
    heapq.heapify(ready)
    out: list[PlanTask] = []
    while ready:
        i = heapq.heappop(ready)
        out.append(by_index[i])
        done = by_index[i].id
        for j, deps in waiting.items():
            if done in deps:
                deps.discard(done)
                if not deps:
                    heapq.heappush(ready, j)
    # A validated plan has no cycles; anything left (unvalidated input) keeps its order.
    placed = {id(t) for t in out}
    return out + [t for _, t in members if id(t) not in placed]


def plan_json_schema() -> dict[str, Any]:
    """The JSON schema of `Plan` for tool parameters (see `tool_json_schema`)."""
    schema = tool_json_schema(Plan)
    task = schema["properties"]["tasks"]["items"]
    # Ask for every field (lenient parsing still accepts a missing depends_on).
    task["required"] = list(task["properties"])
    return schema


# ---------------------------------------------------------------------------- validation


def validate_plan(data: Any, depth: str) -> Plan:
    """Check a submitted plan against the schema, its dependency graph and the depth target.

    Raises `AnswerRejected` listing every problem (schema errors with their field path,
    duplicate ids, unknown or self dependencies, cycles, dependencies on a later chunk, task
    count far outside the target) and `InputError` for an unknown depth.
    """
    low, high = accepted_task_range(depth)
    if not isinstance(data, Mapping):
        raise AnswerRejected([
            f"plan: must be a JSON object with 'summary' and 'tasks', not {_json_type(data)}"
        ])
    problems: list[str] = []
    plan: Plan | None = None
    try:
        plan = Plan.model_validate(data)
    except ValidationError as e:
        problems += _schema_problems(e)
    tasks = data.get("tasks")
    if isinstance(tasks, list):
        problems += _graph_problems(tasks)
        n = len(tasks)
        if not low <= n <= high:
            problems.append(_count_problem(n, depth, low, high))
    if problems:
        if len(problems) > MAX_PROBLEMS:
            more = len(problems) - MAX_PROBLEMS
            problems = [*problems[:MAX_PROBLEMS], f"... and {more} more problems"]
        raise AnswerRejected(problems)
    assert plan is not None
    return plan


def _count_problem(n: int, depth: str, low: int, high: int) -> str:
    target = DEPTH_TARGETS[depth]
    if target is None:
        return f"tasks: the plan has {n} tasks; a plan needs {low}-{high} tasks"
    return (
        f"tasks: the plan has {n} tasks, far outside the {depth} target of "
        f"{target[0]}-{target[1]} tasks (accepted: {low}-{high}); "
        + ("split tasks or cover more of the goal" if n < low else "merge related tasks")
    )


def _schema_problems(err: ValidationError) -> list[str]:
    problems = []
    for e in err.errors(include_url=False):
        path = "plan"
        for part in e["loc"]:
            path += f"[{part}]" if isinstance(part, int) else f".{part}"
        path = path.removeprefix("plan.")
        kind, ctx, given = e["type"], e.get("ctx", {}), e.get("input")
        if kind == "missing":
            msg = "this field is required"
        elif kind == "extra_forbidden":
            allowed = _TASK_FIELDS if len(e["loc"]) > 1 else ("summary", "tasks")
            close = difflib.get_close_matches(str(e["loc"][-1]), allowed, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            msg = f"unknown field; {hint}allowed fields: {', '.join(allowed)}"
        elif kind == "literal_error":
            msg = f"must be {ctx['expected'].replace(chr(39), '')}, not {given!r}"
        elif kind == "string_too_short":
            msg = "must not be empty"
        elif kind == "too_short":
            msg = "must list at least one item"
        elif kind in ("string_type", "list_type", "model_type", "dict_type"):
            expected = {"string_type": "a string", "list_type": "a list"}.get(kind, "an object")
            msg = f"must be {expected}, not {_json_type(given)}"
        else:
            msg = e["msg"].removeprefix("Value error, ").replace("Input should be", "should be")
        problems.append(f"{path}: {msg}")
    return list(dict.fromkeys(problems))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


def _norm_id(value: Any) -> str | None:
    """An id as the schema would read it (stripped, numbers as text), or None if unusable."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _graph_problems(tasks: list[Any]) -> list[str]:
    """Id, dependency, chunk-order and cycle problems, read from the raw tasks so they are
    reported together with schema errors."""
    nodes: list[tuple[int, str | None, str | None, list[str]]] = []
    for i, t in enumerate(tasks):
        if not isinstance(t, Mapping):
            nodes.append((i, None, None, []))
            continue
        raw_deps = t.get("depends_on")
        deps = [d for d in map(_norm_id, raw_deps) if d] if isinstance(raw_deps, list) else []
        deps = list(dict.fromkeys(deps))
        nodes.append((i, _norm_id(t.get("id")), _norm_id(t.get("chunk")), deps))

    problems: list[str] = []
    first: dict[str, int] = {}
    for i, tid, _, _ in nodes:
        if tid is None:
            continue
        if tid in first:
            problems.append(f"tasks[{i}]: id {tid!r} is already used by tasks[{first[tid]}]; "
                            f"give every task a unique id")
        else:
            first[tid] = i
    chunk_rank = {c: r for r, c in enumerate(dict.fromkeys(c for _, _, c, _ in nodes if c))}
    for i, tid, chunk, deps in nodes:
        who = f"tasks[{i}] {tid!r}" if tid else f"tasks[{i}]"
        for dep in deps:
            if dep == tid:
                problems.append(f"{who} depends on itself; remove {dep!r} from its depends_on")
            elif dep not in first:
                close = difflib.get_close_matches(dep, list(first), n=1)
                hint = f"did you mean {close[0]!r}?" if close else "no task has that id"
                problems.append(f"{who} depends on unknown task {dep!r} ({hint})")
            else:
                dep_chunk = nodes[first[dep]][2]
                if chunk and dep_chunk and chunk_rank[dep_chunk] > chunk_rank[chunk]:
                    problems.append(
                        f"{who} in chunk {chunk!r} depends on {dep!r} in the later chunk "
                        f"{dep_chunk!r}; a task may depend only on tasks in its own or an "
                        f"earlier chunk (chunks run in order of first appearance): move one "
                        f"of the two tasks or reorder the chunks"
                    )
    edges = {
        tid: [d for d in deps if d in first and d != tid]
        for i, tid, _, deps in nodes
        if tid is not None and first[tid] == i
    }
    for cycle in _cycles(edges):
        problems.append(f"dependency cycle: {' -> '.join(cycle)} (x -> y means x depends on y); "
                        f"remove one of these dependencies")
    return problems


def _cycles(edges: dict[str, list[str]]) -> list[list[str]]:
    """One cycle per tangle, as [a, b, ..., a]. Iterative: plans can be long chains."""
    # Peel off everything that does not sit on or behind a cycle (Kahn's algorithm).
    pending = {n: len(set(ds)) for n, ds in edges.items()}
    dependents: dict[str, list[str]] = {n: [] for n in edges}
    for n, ds in edges.items():
        for d in set(ds):
            dependents[d].append(n)
    free = [n for n, k in pending.items() if k == 0]
    while free:
        n = free.pop()
        for m in dependents[n]:
            pending[m] -= 1
            if pending[m] == 0:
                free.append(m)
    stuck = {n for n, k in pending.items() if k > 0}
    # Every stuck task depends on another stuck task, so walking those edges must loop.
    cycles, seen = [], set()
    for start in edges:
        if start not in stuck or start in seen:
            continue
        path: list[str] = []
        pos: dict[str, int] = {}
        node = start
        while node not in pos and node not in seen:
            pos[node] = len(path)
            path.append(node)
            node = next(d for d in edges[node] if d in stuck)
        if node in pos:
            cycles.append([*path[pos[node]:], node])
        seen.update(path)
    return cycles
