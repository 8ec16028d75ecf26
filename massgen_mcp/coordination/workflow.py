"""The workflow tools every agent turn must end with (`new_answer` / `vote`), and their checks.

A turn's tool calls are classified here; the orchestrator only sees a `Decision`
(an accepted answer or vote) or a list of problems to send back to the agent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from massgen_mcp.coordination.answers import AnswerFormat, AnswerRejected, ParsedAnswer
from massgen_mcp.messages import ToolCall, ToolSpec

NEW_ANSWER = "new_answer"
VOTE = "vote"
WORKFLOW_TOOLS = frozenset({NEW_ANSWER, VOTE})

NOVELTY_THRESHOLDS = {"lenient": None, "balanced": 0.70, "strict": 0.50}


def new_answer_tool(fmt: AnswerFormat) -> ToolSpec:
    return ToolSpec(NEW_ANSWER, fmt.tool_description(), fmt.tool_parameters())


def vote_tool(valid_ids: list[str]) -> ToolSpec:
    return ToolSpec(
        VOTE,
        "Vote for the best existing answer. Use it when an answer already solves the task "
        "well and you cannot substantially improve it. Ends your turn.",
        {
            "type": "object",
            "properties": {
                "agent_id": {
                    "type": "string",
                    "enum": valid_ids,
                    "description": "The agent whose answer is best, e.g. agent1.",
                },
                "reason": {"type": "string", "description": "Why this answer is the best."},
            },
            "required": ["agent_id", "reason"],
        },
    )


@dataclass(frozen=True, slots=True)
class Decision:
    kind: Literal["answer", "vote"]
    answer: ParsedAnswer | None = None
    voted_for: str | None = None  # anonymous agent id, e.g. "agent2"
    reason: str = ""


_WORDS = re.compile(r"\w+")


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the word sets of two texts (0 = disjoint, 1 = same words)."""
    wa, wb = set(_WORDS.findall(a.lower())), set(_WORDS.findall(b.lower()))
    if not wa and not wb:
        return 1.0
    return len(wa & wb) / len(wa | wb)


def decide(
    calls: list[ToolCall],
    *,
    fmt: AnswerFormat,
    may_answer: bool,
    may_vote: bool,
    vote_targets: list[str],
    previous_answer: str | None,
    novelty: str,
) -> Decision | list[str]:
    """Check the workflow calls of one model reply: a Decision, or the problems to report."""
    workflow = [c for c in calls if c.name in WORKFLOW_TOOLS]
    if len(workflow) != 1:
        names = ", ".join(c.name for c in workflow)
        return [f"call exactly one of new_answer or vote per turn (you called: {names})"]
    call = workflow[0]
    if call.arguments_error:
        return [f"the arguments of {call.name} are not valid JSON: {call.arguments_error}"]
    if call.name == VOTE:
        return _check_vote(call, may_vote, vote_targets)
    if not may_answer:
        return ["you may not submit another answer (your answer limit is reached, or you are "
                "too far ahead of the others): call vote for the best existing answer"]
    try:
        answer = fmt.parse(call.arguments)
    except AnswerRejected as e:
        return [f"your {fmt.noun} was not accepted: {p}" for p in e.problems]
    threshold = NOVELTY_THRESHOLDS.get(novelty)
    if threshold is not None and previous_answer is not None:
        overlap = word_overlap(answer.text, previous_answer)
        if overlap > threshold:
            return [f"this {fmt.noun} is too similar to your previous one (word overlap "
                    f"{overlap:.2f} > {threshold:.2f}); submit a substantially different "
                    f"{fmt.noun}, or vote for the best existing one"]
    return Decision("answer", answer=answer)


def _check_vote(call: ToolCall, may_vote: bool, targets: list[str]) -> Decision | list[str]:
    if not may_vote or not targets:
        return ["there are no answers to vote for yet: call new_answer with your answer"]
    raw = call.arguments.get("agent_id")
    reason = call.arguments.get("reason")
    problems = []
    target = raw.strip().split(".")[0] if isinstance(raw, str) else None
    if target not in targets:
        problems.append(f"agent_id {raw!r} is not an agent with an answer; "
                        f"valid choices: {', '.join(targets)}")
    if not isinstance(reason, str) or not reason.strip():
        problems.append("give a non-empty 'reason' for your vote")
    if problems:
        return problems
    assert target is not None and isinstance(reason, str)
    return Decision("vote", voted_for=target, reason=reason.strip())
