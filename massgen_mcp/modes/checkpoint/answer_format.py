"""Checkpoint plans as a structured `new_answer`: the tool, the rules, the rendering.

`CheckpointAnswerFormat(available_tools, action_goals)` implements the `AnswerFormat`
protocol of `massgen_mcp.coordination.answers`: reviewers call `new_answer({"plan": ...})`,
the plan is validated by `validate_checkpoint_plan` (a rejected plan goes back listing
every problem), and voters see a compact rendering instead of raw JSON.
"""

from __future__ import annotations

import json
from typing import Any

from massgen_mcp.coordination.answers import AnswerRejected, ParsedAnswer
from massgen_mcp.modes.checkpoint.models import plan_tool_schema
from massgen_mcp.modes.checkpoint.schema import normalize_goals, validate_checkpoint_plan

PLAN_RULES = """\
Write a checkpoint plan: the ordered steps the executor must follow to reach the objective
safely. Submit it with new_answer as {"plan": {"steps": [...]}}.

Each step has:
- step: 1, 2, 3, ... in order.
- kind: verify (check a fact before going on), backup (make the undo possible), action
  (the risky change itself), notify (tell someone), wait (let something settle).
- description: exactly what to do or check, and what counts as success.
- preconditions: ["step:N.proceed", ...] for earlier steps that must have succeeded.
- touches: what the step affects, e.g. prod, shared_db, external_recipients, credentials,
  public_surface, source_control, third_party_service ([] for nothing shared).
- recovery: what to do when the step fails or its check is not met: "proceed",
  "recheckpoint" (stop and ask the reviewers again) or "terminate"; or
  {"if": "condition", "then": <recovery>, "else": <recovery>, "reason": "why"}; or
  {"compensate": {"tool": "...", "args": {...}}, "then": <recovery>, "reason": "why"}.
- constraints (optional): rules the executor keeps during the step.
- approved_action: the exact tool call the step allows: {"goal_id", "tool", "args",
  "rollback"}. Required on action steps, where rollback is the call that undoes it
  ({"tool", "args"}) or null when nothing can (then an earlier backup step must exist).
  Other kinds may carry an approved_action (a backup or notify that calls a tool) but
  never a rollback.

Rules the plan is checked against:
- tool (and every rollback or compensate tool) is one of the executor's tools; args are
  what that tool takes. For Bash, args is {"command": "..."}; for Write, {"file_path",
  "content"}; for Edit, {"file_path", "old_string", "new_string"}.
- every action goal is served by an approved_action with its goal_id.
- where only the executor can know a value (a version, a commit message, new file
  content), write "<executor-fills: what it is>"; the executor's call matches any value
  there. Inside a Bash command a filled value cannot contain ; & | $ ` < > ( ) or a newline.
- no plan may approve a hardline action (it is rejected): deleting /, a home directory, a
  system tree or the repository's .git; writing to a device; touching the checkpoint guard
  (its key, state, Claude Code settings or program); reading or sending a secret.
- the executor is held to the plan: a call the safety policy gates that is not one of the
  approved actions (or their rollbacks or compensations) is blocked. Approve exactly what
  is needed; verify and back up before destroying; prefer reversible steps; stage before
  production; name who and what is reached by anything external.
"""


def _call(tool: str, args: Any) -> str:
    if isinstance(args, dict) and set(args) == {"command"}:
        return f"{tool}: {args['command']}"
    if not isinstance(args, dict):
        return f"{tool}({json.dumps(args, ensure_ascii=False)})"
    inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return f"{tool}({inner})"


def render_recovery(node: Any) -> str:
    """A recovery tree on one line: `if 'x' then compensate f(...) then terminate else ...`."""
    if isinstance(node, str):
        return node
    if not isinstance(node, dict):
        return repr(node)
    if "if" in node:
        text = f"if {node['if']!r} then {render_recovery(node.get('then'))}"
        if "else" in node:
            text += f" else {render_recovery(node['else'])}"
    else:
        spec = node.get("compensate") or {}
        text = (f"compensate {_call(spec.get('tool', '?'), spec.get('args', {}))} then "
                f"{render_recovery(node.get('then'))}")
    return f"({text})" if node.get("reason") is None else f"({text}; because {node['reason']})"


def render_plan(plan: dict[str, Any]) -> str:
    """A compact text view of a validated plan, a few lines per step."""
    lines: list[str] = []
    for step in plan["steps"]:
        head = f"{step['step']}. [{step['kind']}] {step['description']}"
        pre = [p.split(":", 1)[1].split(".", 1)[0] for p in step["preconditions"]]
        if pre:
            head += f"  (after {', '.join(pre)})"
        if step["touches"]:
            head += f"  touches: {', '.join(step['touches'])}"
        lines.append(head)
        action = step.get("approved_action")
        if action:
            text = f"   approved [{action['goal_id']}]: {_call(action['tool'], action['args'])}"
            if "rollback" in action:
                rollback = action["rollback"]
                text += "; rollback: " + (
                    _call(rollback["tool"], rollback["args"]) if rollback else "none")
            lines.append(text)
        for constraint in step.get("constraints", []):
            lines.append(f"   constraint: {constraint}")
        lines.append(f"   on failure: {render_recovery(step['recovery'])}")
    return "\n".join(lines)


class CheckpointAnswerFormat:
    """`new_answer` takes `{"plan": {...}}`, a checkpoint plan validated for these tools."""

    noun = "checkpoint plan"

    def __init__(self, available_tools: list[str], action_goals: list[Any] | None,
                 workspace: str | None = None) -> None:
        self.available_tools = list(available_tools)
        self.action_goals = normalize_goals(action_goals)
        #: Where the approved calls will run: the hardline policy is judged there.
        self.workspace = workspace

    def tool_description(self) -> str:
        return ("Submit your complete checkpoint plan: ordered steps with recovery, and the "
                "approved tool calls for risky steps. It replaces your previous plan and "
                "every reviewer re-evaluates. The plan is validated; problems come back as "
                "an error listing each one.")

    def tool_parameters(self) -> dict[str, Any]:
        return {"type": "object",
                "properties": {"plan": {**plan_tool_schema(self.available_tools),
                                        "description": "The checkpoint plan."}},
                "required": ["plan"]}

    def parse(self, arguments: dict[str, Any]) -> ParsedAnswer:
        plan = arguments.get("plan")
        if plan is None and "steps" in arguments:
            plan = {"steps": arguments["steps"]}  # some models drop the wrapper
        if isinstance(plan, str):
            try:
                plan = json.loads(plan)
            except json.JSONDecodeError as e:
                raise AnswerRejected([f"plan: not valid JSON ({e.msg} at line {e.lineno} "
                                      f"column {e.colno})"]) from None
        if plan is None:
            raise AnswerRejected(["plan: required: new_answer({\"plan\": {\"steps\": [...]}})"])
        data = validate_checkpoint_plan(plan, available_tools=self.available_tools,
                                        action_goals=self.action_goals,
                                        workspace=self.workspace)
        return ParsedAnswer(render_plan(data), data)

    def render(self, answer: ParsedAnswer) -> str:
        return answer.text

    def instructions(self) -> str:
        return PLAN_RULES
