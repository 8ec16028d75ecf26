"""The workflow tools every agent turn must end with (`new_answer` / `vote`), and their checks.

A turn's tool calls are classified here; the orchestrator only sees a `Decision`
(an accepted answer or vote) or a list of problems to send back to the agent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from massgen_mcp.coordination.answers import AnswerFormat, AnswerRejected, ParsedAnswer
from massgen_mcp.coordination.echo import EchoSources, echo_problem
from massgen_mcp.messages import NEW_ANSWER, VOTE, WORKFLOW_TOOLS, ToolCall, ToolSpec

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
    note: str = ""  # what was repaired to read this call, for the run record


#: The start of the problem sent back for an answer that repeats the agent's previous one.
REPEATED = "this answer repeats your previous one unchanged"
#: The start of the problem sent back for an echo of the protocol (echo.py).
ECHOED = "this is not an answer"


_WORDS = re.compile(r"\w+")


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of the word sets of two texts (0 = disjoint, 1 = same words)."""
    wa, wb = set(_WORDS.findall(a.lower())), set(_WORDS.findall(b.lower()))
    if not wa and not wb:
        return 1.0
    return len(wa & wb) / len(wa | wb)


def normalized(text: str) -> str:
    """Text with case and whitespace normalised: two answers equal under this are the same."""
    return " ".join(text.lower().split())


def read_label(raw: Any) -> str | None:
    """The anonymous agent id a model meant: `agent1`, `Agent 1`, `agent1.2`, `agent_1`, `1`
    and `1.2` all mean `agent1`."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        raw = str(raw)
    if not isinstance(raw, str):
        return None
    text = raw.strip().lower()
    match = re.search(r"agent[\s_#-]*(\d+)", text) or re.fullmatch(r"#?(\d+)(?:\.\d+)?", text)
    return f"agent{int(match.group(1))}" if match else None


def _distinct(calls: list[ToolCall]) -> list[ToolCall]:
    """The calls without exact repeats (some models send the same call twice in one reply)."""
    seen, out = set(), []
    for c in calls:
        key = (c.name, json.dumps(c.arguments, sort_keys=True, default=str), c.arguments_error)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def decide(
    calls: list[ToolCall],
    *,
    fmt: AnswerFormat,
    may_answer: bool,
    may_vote: bool,
    vote_targets: list[str],
    previous_answer: str | None,
    novelty: str,
    echo: EchoSources | None = None,
) -> Decision | list[str]:
    """Check the workflow calls of one model reply: a Decision, or the problems to report.

    An answer that repeats the previous one (`normalized`) is never new, whatever the
    novelty setting: its problem starts with `REPEATED`. An answer that only echoes the
    protocol (`echo`: the tool schema, the instructions, a label, a vote's reason) is no
    answer: its problem starts with `ECHOED`. A vote's reason is never checked.
    """
    sent = [c for c in calls if c.name in WORKFLOW_TOOLS]
    workflow = _distinct(sent)
    if len(workflow) != 1:
        names = ", ".join(c.name for c in workflow)
        return [f"call exactly one of new_answer or vote per turn (you called: {names})"]
    call = workflow[0]
    notes = [n for n in (call.repaired and f"{call.name} arguments: {call.repaired}",
                         len(sent) > 1 and f"{call.name} was sent {len(sent)} times in one "
                                           "reply; read once") if n]
    if call.arguments_error:
        return [f"the arguments of {call.name} are not valid JSON: {call.arguments_error}"]
    if call.name == VOTE:
        return _check_vote(call, may_vote, vote_targets, notes)
    if not may_answer:
        return ["you may not submit another answer (your answer limit is reached, or you are "
                "too far ahead of the others): call vote for the best existing answer"]
    try:
        answer = fmt.parse(call.arguments)
    except AnswerRejected as e:
        return [f"your {fmt.noun} was not accepted: {p}" for p in e.problems]
    echoed = echo_problem(answer.text, echo) if echo is not None else None
    if echoed:
        return [f"{ECHOED}: {echoed}. Call new_answer with your own complete {fmt.noun} to the "
                f"task itself, or vote for the best existing {fmt.noun}"]
    if previous_answer is not None and normalized(answer.text) == normalized(previous_answer):
        return [f"{REPEATED}, so it is not a new {fmt.noun}: if you stand by it, vote for it; "
                f"otherwise vote for the best existing {fmt.noun}"]
    threshold = NOVELTY_THRESHOLDS.get(novelty)
    if threshold is not None and previous_answer is not None:
        overlap = word_overlap(answer.text, previous_answer)
        if overlap > threshold:
            return [f"this {fmt.noun} is too similar to your previous one (word overlap "
                    f"{overlap:.2f} > {threshold:.2f}); submit a substantially different "
                    f"{fmt.noun}, or vote for the best existing one"]
    return Decision("answer", answer=answer, note="; ".join(notes))


def _check_vote(call: ToolCall, may_vote: bool, targets: list[str],
                notes: list[str]) -> Decision | list[str]:
    if not may_vote or not targets:
        return ["there are no answers to vote for yet: call new_answer with your answer"]
    args = call.arguments
    raw = args.get("agent_id", args.get("agent", args.get("id")))
    reason = args.get("reason", args.get("reasoning", args.get("explanation")))
    problems = []
    target = read_label(raw)
    if target not in targets:
        problems.append(f"agent_id {raw!r} is not an agent with an answer; "
                        f"valid choices: {', '.join(targets)}")
    elif raw != target:
        notes.append(f"read vote target {raw!r} as {target}")
    if not isinstance(reason, str) or not reason.strip():
        if target in targets and not problems:
            # a vote without a reason still says which answer is best
            notes.append("the vote had no reason")
            reason = "(no reason given)"
        else:
            problems.append("give a non-empty 'reason' for your vote")
    if problems:
        return problems
    assert target is not None and isinstance(reason, str)
    return Decision("vote", voted_for=target, reason=reason.strip(), note="; ".join(notes))
