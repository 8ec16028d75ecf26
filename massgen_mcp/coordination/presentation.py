"""The final presentation: the winner presents the team's answer, checked against its stored one.

A model may "present" something that is not an answer: nothing, the protocol's own text, the
tool schema's description ("Your complete answer."), an echo of the votes ("the best, e.g.
agent2"), the same sentence over and over, a fragment of what won, or a text that drops the
winner's key content (faithful.py: its key terms, numbers and code lines). Each of those
falls back to the stored winning answer, with a note saying why: the user gets what the team
voted for, never less. The result carries the stored winning answer either way.
"""

from __future__ import annotations

from massgen_mcp.coordination import prompts
from massgen_mcp.coordination.agent import AgentState
from massgen_mcp.coordination.answers import AnswerFormat, AnswerRejected, ParsedAnswer
from massgen_mcp.coordination.budget import Budget
from massgen_mcp.coordination.converse import converse
from massgen_mcp.coordination.echo import schema_texts
from massgen_mcp.coordination.faithful import (
    KEEP_SHARE,
    MAX_REPETITION,
    echoes,
    kept_share,
    repetition,
)
from massgen_mcp.coordination.reviewers import reads
from massgen_mcp.coordination.workflow import (
    NEW_ANSWER,
    WORKFLOW_TOOLS,
    Decision,
    new_answer_tool,
    normalized,
)
from massgen_mcp.errors import BackendError
from massgen_mcp.messages import Step, ToolCall

#: A presentation shorter than this fraction of a stored answer of at least `_SHRINK_MIN`
#: characters is a fragment, not a presentation.
SHRINK_RATIO = 0.25
_SHRINK_MIN = 100
_PROTOCOL_MARKS = ("<ORIGINAL MESSAGE>", "<CURRENT ANSWERS", "<ALL ANSWERS>", "<VOTES FOR YOU>",
                   '"agent_id"', '"tool":', "call new_answer", "Present the best final")


def _schema_texts(fmt: AnswerFormat) -> set[str]:
    texts = schema_texts([new_answer_tool(fmt)])
    return {normalized(t).strip(" .") for t in texts if t}


def presentation_problem(presented: ParsedAnswer, stored: ParsedAnswer,
                         fmt: AnswerFormat, reasons: list[str] | None = None) -> str | None:
    """Why `presented` may not replace the stored winning answer, or None when it may.
    `reasons` are the reasons of the votes the winner got (a presentation echoing one is
    not an answer)."""
    text = presented.text.strip()
    if not text:
        return "it is empty"
    if normalized(text).strip(" .") in _schema_texts(fmt):
        return "it is the tool's own description text, not an answer"
    if any(mark.lower() in text.lower() for mark in _PROTOCOL_MARKS):
        return "it is coordination protocol text, not an answer"
    echo = echoes(text, stored.text, reasons or [])
    if echo:
        return echo
    repeated = repetition(text)
    if repeated > MAX_REPETITION and repeated > repetition(stored.text):
        return f"it repeats itself ({repeated:.0%} of its sentences are repeats)"
    if len(stored.text) >= _SHRINK_MIN and len(text) < SHRINK_RATIO * len(stored.text):
        return (f"it is a fragment of the winning {fmt.noun} ({len(text)} characters against "
                f"{len(stored.text)})")
    share, lost = kept_share(text, stored.text)
    if share < KEEP_SHARE:
        return (f"it drops the winning {fmt.noun}'s key content (keeps {share:.0%} of its key "
                f"terms; lost: {', '.join(lost[:8])[:200]})")
    return None


async def present(
    w: AgentState,
    agents: list[AgentState],
    *,
    task: str,
    context: str | None,
    fmt: AnswerFormat,
    budget: Budget,
) -> tuple[ParsedAnswer, bool]:
    """The final answer and whether it is the winner's presentation (else its stored answer)."""
    stored = w.answers[-1]
    messages = prompts.presentation_messages(
        own_system=w.spec.system_message, task=task, context=context,
        instructions=fmt.instructions(),
        # k reviewers: the answers it read (and its own), so the prompt does not grow with N
        all_answers=[(a.spec.id, fmt.render(a.answers[-1])) for a in agents
                     if a.answers and reads(w, a)],
        own_id=w.spec.id,
        votes_received=[(a.spec.id, a.vote.reason) for a in agents
                        if a.vote and a.vote.voted_for == w.anon],
        noun=fmt.noun)

    def check(calls: list[ToolCall]) -> Decision | list[str]:
        mine = [c for c in calls if c.name in WORKFLOW_TOOLS]
        if not mine or any(c.name != NEW_ANSWER for c in mine):
            return ["call new_answer exactly once with the complete final answer"]
        try:
            return Decision("answer", answer=fmt.parse(mine[-1].arguments))
        except AnswerRejected as e:
            return list(e.problems)

    try:
        outcome = await converse(w, messages, [new_answer_tool(fmt)], check, budget,
                                 Step("present", fmt.noun, w.label))
    except BackendError as e:
        outcome = str(e)
    if not isinstance(outcome, Decision) or outcome.answer is None:
        w.note(f"final presentation failed ({outcome}); the stored answer stands")
        return stored, False
    reasons = [a.vote.reason for a in agents if a.vote and a.vote.voted_for == w.anon]
    problem = presentation_problem(outcome.answer, stored, fmt, reasons)
    if problem:
        w.note(f"final presentation not used ({problem}); the stored answer stands")
        return stored, False
    return outcome.answer, True

