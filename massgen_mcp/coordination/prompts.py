"""The messages agents see. Real agent ids and model names never appear during coordination."""

from __future__ import annotations

from dataclasses import dataclass

from massgen_mcp.messages import Message, ToolSpec, system, user

_SENSITIVITY = {
    "lenient": "Vote for an existing answer when it answers the task well; submit a new answer "
               "only if you can clearly improve on every existing one.",
    "balanced": "Vote only for an answer that is correct, complete and well reasoned; submit a "
                "new answer if every existing one has a real flaw you can fix.",
    "strict": "Be demanding: vote only for an answer you would sign off without changes; "
              "otherwise submit a new, better answer that fixes what is missing or wrong.",
}


#: What each named stance asks of an agent; any other stance text is the instruction itself.
STANCES = {
    "for": "Your stance: argue FOR. Look for the strongest case in favour of the proposal or "
           "the most promising answer, and build on it; still say plainly what is wrong.",
    "against": "Your stance: argue AGAINST. Look for flaws, risks, counter-examples and "
               "better alternatives; vote for an answer only if it survives your critique.",
    "neutral": "Your stance: neutral. Weigh the arguments on both sides evenly.",
}


def stance_text(stance: str | None) -> str:
    """The instruction for a stance ("" for none)."""
    if not stance or not stance.strip():
        return ""
    key = stance.strip().lower()
    return STANCES.get(key, f"Your stance: {stance.strip()}")


@dataclass(frozen=True, slots=True)
class ShownAnswer:
    label: str  # agent2.3
    text: str  # rendered by the answer format


def coordination_system(own_system: str | None, noun: str, sensitivity: str,
                        stance: str | None = None, reads: int | None = None) -> Message:
    parts = [own_system.strip()] if own_system else []
    # k reviewers (reviewers.py): it sees its own and `reads` others, not the whole team
    seen = "all agents" if reads is None else f"{reads} other agents and your own"
    parts.append(
        f"You are one of several expert agents working on the same task in parallel. You can see "
        f"the current {noun}s of {seen}, anonymized (agent1, agent2, ...; a label like "
        f"agent2.3 is agent2's third {noun}). Each turn, end by calling exactly ONE tool:\n"
        f"- new_answer: submit a complete {noun} that is better than every existing one "
        f"(yours included). Everyone then looks again.\n"
        f"- vote: choose the best existing {noun}, with a reason.\n"
        f"{_SENSITIVITY.get(sensitivity, _SENSITIVITY['lenient'])} Judge the {noun}s on their "
        f"merits, not on who wrote them. Do not call both tools, and do not reply without a "
        f"tool call."
    )
    if stance_text(stance):
        parts.append(stance_text(stance))
    return system("\n\n".join(parts))


def task_block(task: str, context: str | None, instructions: str) -> str:
    text = f"<ORIGINAL MESSAGE>\n{task.strip()}\n</ORIGINAL MESSAGE>"
    if context and context.strip():
        text += f"\n\n<CONTEXT>\n{context.strip()}\n</CONTEXT>"
    if instructions:
        text += f"\n\n{instructions.strip()}"
    return text


def answers_block(shown: list[ShownAnswer], noun: str) -> str:
    if not shown:
        return (f"<CURRENT ANSWERS>\n(no {noun}s yet: you are among the first; call new_answer "
                f"with your {noun})\n</CURRENT ANSWERS>")
    body = "\n\n".join(f"<{a.label}>\n{a.text}\n<end of {a.label}>" for a in shown)
    return f"<CURRENT ANSWERS from the agents>\n{body}\n</CURRENT ANSWERS>"


def turn_messages(
    *,
    own_system: str | None,
    task: str,
    context: str | None,
    instructions: str,
    shown: list[ShownAnswer],
    own_label: str | None,
    noun: str,
    sensitivity: str,
    vote_only: bool,
    stance: str | None = None,
    reads: int | None = None,
) -> list[Message]:
    """One coordination turn: the task and the current answers (in `shown`'s order)."""
    text = (task_block(task, context, instructions) + "\n\n" + answers_block(shown, noun)
            + "\n\n" + turn_ending(own_label, noun, vote_only))
    return [coordination_system(own_system, noun, sensitivity, stance, reads), user(text)]


def turn_ending(own_label: str | None, noun: str, vote_only: bool) -> str:
    """The closing line of a coordination turn."""
    ending = []
    if own_label:
        ending.append(f"Your own latest {noun} is {own_label}.")
    if vote_only:
        ending.append(f"You may not submit more {noun}s now: call vote for the best one.")
    else:
        ending.append("Call new_answer or vote.")
    return " ".join(ending)


#: The reasons the run writes itself for votes it reads from other replies (turns.py).
STANDS_BY = "no change: it stands by its answer (a text reply without a tool call)"
RESUBMITTED = "re-submitted its answer unchanged"


def protocol_texts(system_text: str, tools: list[ToolSpec], noun: str, instructions: str,
                   own_label: str | None, vote_only: bool) -> list[str]:
    """Every text of the protocol an agent sees in a coordination turn, except the task
    and the answers: what an answer must not merely repeat (echo.py)."""
    return [system_text, instructions, turn_ending(own_label, noun, vote_only),
            answers_block([], noun), reminder(tools), REMINDER, STANDS_BY, RESUBMITTED]


REMINDER = ("You did not call a tool. You must end this turn by calling exactly one tool: "
            "new_answer (with your complete answer) or vote (for the best existing answer).")


def reminder(tools: list[ToolSpec]) -> str:
    """The reminder after a reply without a tool call. It also shows the JSON-in-text form,
    for models (or local servers) that have no tool calling: that form is read as the call."""
    names = " or ".join(t.name for t in tools)
    example = ('{"tool": "new_answer", "arguments": {"content": "<your complete answer>"}}'
               if any(t.name == "new_answer" for t in tools)
               else '{"tool": "vote", "arguments": {"agent_id": "agent1", "reason": "<why>"}}')
    return (f"{REMINDER} If you cannot call tools, reply with only a JSON object naming "
            f"{names}, for example: {example}")


def presentation_messages(
    *,
    own_system: str | None,
    task: str,
    context: str | None,
    instructions: str,
    all_answers: list[tuple[str, str]],  # (real agent id, rendered answer)
    own_id: str,
    votes_received: list[tuple[str, str]],  # (voter id, reason)
    noun: str,
) -> list[Message]:
    """The winner's final turn: present the best final answer, with only `new_answer`."""
    answers = "\n\n".join(f"<{aid}{' (yours)' if aid == own_id else ''}>\n{text}\n<end of {aid}>"
                          for aid, text in all_answers)
    reasons = "\n".join(f"- {voter}: {reason}" for voter, reason in votes_received) or "- (none)"
    sys = (own_system.strip() + "\n\n" if own_system else "") + (
        f"The team voted and your {noun} was selected as the best. Now present the final "
        f"{noun} to the user.")
    text = (
        task_block(task, context, instructions)
        + f"\n\n<ALL ANSWERS>\n{answers}\n</ALL ANSWERS>\n\n<VOTES FOR YOU>\n{reasons}\n"
        f"</VOTES FOR YOU>\n\nPresent the best final {noun} to the original message: keep "
        f"what made yours win, fold in the real strengths of the others, fix anything the "
        f"votes or other answers show is wrong. Call new_answer with the complete final "
        f"{noun}; it is returned to the user as is."
    )
    return [system(sys), user(text)]
