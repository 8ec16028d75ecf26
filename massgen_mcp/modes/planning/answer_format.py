"""How a plan reads (Markdown for people, one line per task for voting agents), and the
`AnswerFormat` that makes agents submit plans through `new_answer`."""

from __future__ import annotations

import json
from typing import Any

from massgen_mcp.coordination.answers import AnswerRejected, ParsedAnswer
from massgen_mcp.modes.planning.schema import (
    DEPTH_TARGETS,
    Plan,
    accepted_task_range,
    plan_json_schema,
    validate_plan,
)


def plan_markdown(plan: Plan, goal: str = "") -> str:
    """The plan as Markdown: chunks in order, tasks in dependency order within a chunk."""
    ordered = plan.ordered()
    lines = [f"# Plan: {_one_line(goal)}" if goal.strip() else "# Plan", "", plan.summary, ""]
    lines.append(f"{_n(len(plan.tasks), 'task')} in {_n(len(ordered), 'chunk')}. Do the chunks "
                 f"in order; within a chunk, tasks are listed in dependency order.")
    for n, (chunk, tasks) in enumerate(ordered, 1):
        lines += ["", f"## {n}. {chunk}"]
        for t in tasks:
            deps = ", ".join(f"`{d}`" for d in t.depends_on) or "none"
            lines += [
                "", f"### `{t.id}`", "", t.description, "",
                f"- **Priority:** {t.priority} · **Type:** {t.task_type} · **Depends on:** {deps}",
                "- **Success criteria:**",
                *(f"  - {_one_line(c)}" for c in t.success_criteria),
                f"- **Verification:** {_one_line(t.verification)}",
            ]
    return "\n".join(lines) + "\n"


def plan_compact(plan: Plan) -> str:
    """One line per task, for agents comparing plans: `[chunk] id (priority, type) what ← deps`."""
    lines = [f"Summary: {_one_line(plan.summary)}",
             f"{_n(len(plan.tasks), 'task')} in {_n(len(plan.chunks()), 'chunk')}:"]
    for chunk, tasks in plan.ordered():
        for t in tasks:
            deps = f" ← {', '.join(t.depends_on)}" if t.depends_on else ""
            lines.append(f"[{chunk}] {t.id} ({t.priority}, {t.task_type}) "
                         f"{_one_line(t.description)}{deps}")
    return "\n".join(lines)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _one_line(text: str) -> str:
    return " ".join(text.split())


# ---------------------------------------------------------------------------- answer format


class PlanAnswerFormat:
    """`AnswerFormat` for plan mode: `new_answer` takes `{"plan": <Plan>}`."""

    noun = "plan"

    def __init__(self, depth: str = "dynamic", *, goal: str = "") -> None:
        accepted_task_range(depth)  # fail early on an unknown depth
        self.depth = depth
        self.goal = goal

    def tool_description(self) -> str:
        return (
            "Submit your complete plan as structured data in `plan` (a JSON object, not text). "
            "It replaces your previous plan and every agent re-evaluates. An invalid plan is "
            "rejected with a list of all its problems; fix them all and submit again."
        )

    def tool_parameters(self) -> dict[str, Any]:
        schema = plan_json_schema()
        schema["description"] = f"Your complete plan ({self._size_phrase()})."
        return {"type": "object", "properties": {"plan": schema}, "required": ["plan"]}

    def parse(self, arguments: dict[str, Any]) -> ParsedAnswer:
        data = arguments.get("plan")
        if data is None and "tasks" in arguments:
            data = arguments  # the plan's fields given directly, without the wrapper
        if data is None:
            raise AnswerRejected(["plan: this argument is required: {\"plan\": {\"summary\": "
                                  "..., \"tasks\": [...]}}"])
        if isinstance(data, str):
            # Some models send the object as a JSON string.
            try:
                data = json.loads(data)
            except ValueError as e:
                raise AnswerRejected([f"plan: a string was given that is not valid JSON ({e}); "
                                      f"send the plan as a JSON object"]) from None
        plan = validate_plan(data, self.depth)
        return ParsedAnswer(plan_markdown(plan, self.goal), plan.model_dump(mode="json"))

    def render(self, answer: ParsedAnswer) -> str:
        if answer.data is None:
            return answer.text
        return plan_compact(Plan.model_validate(answer.data))

    def instructions(self) -> str:
        return f"""\
Answer with a plan, submitted as structured data in the `plan` argument of new_answer.
Size: {self._size_phrase()}.
A good plan:
- breaks the goal into tasks one engineer or coding agent can finish and check in one \
sitting; each description says concretely what to do;
- groups tasks into chunks (phases or milestones) listed in the order they are done: chunk \
order is the order in which chunks first appear in `tasks`, and a task may depend only on \
tasks in its own or an earlier chunk;
- gives every task a unique short id and lists in depends_on exactly the tasks that must be \
done first (no cycles, no unknown ids);
- sets priority (high: critical path or risky; medium; low: nice to have) and task_type \
(deterministic: the steps are known; exploratory: needs investigation, a prototype or a \
decision first; put these early, since later tasks rest on their outcome);
- gives checkable success_criteria and a concrete verification (a command, a test, a \
measurement, a review);
- has a 1-3 sentence summary: the approach and the main risk.
When comparing plans, judge coverage of the goal, order and dependencies, task size and how \
verifiable the tasks are."""

    def _size_phrase(self) -> str:
        target = DEPTH_TARGETS[self.depth]
        low, high = accepted_task_range(self.depth)
        if target is None:
            return (f"as many tasks as the goal needs, from {low} to {high}: a few for a small "
                    f"change, more for a large one")
        return (f"{self.depth} depth: aim for {target[0]}-{target[1]} tasks; plans with fewer "
                f"than {low} or more than {high} are rejected")


def plan_task_text(goal: str, constraints: str | None = None) -> str:
    """The task the team is given for `goal` (plus constraints the plan must respect)."""
    text = f"Make an implementation plan for this goal:\n\n{goal.strip()}"
    if constraints and constraints.strip():
        text += f"\n\nConstraints the plan must respect:\n{constraints.strip()}"
    return text
