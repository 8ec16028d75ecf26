"""Follow-ups: a run that continues an earlier one.

`run_consensus(task, follow_up_of=RUN_ID)` (and `massgen-mcp run --follow-up RUN_ID|latest`)
gives the team what the earlier run decided, ahead of the caller's own context:

    <PREVIOUS RUN r-...>
    the earlier task, the team's final answer (or, without one, its candidates),
    how strongly it agreed, and the dissent with its reasons
    </PREVIOUS RUN>

and records the chain: the new run's result and status carry `follow_up_of`, and the run
pages and reports link the two. The earlier run is looked up exactly as `get_run` looks a
run up, so a run the caller cannot see is refused like an unknown run; a run still running
cannot be followed up yet (its decision is not known).
"""

from __future__ import annotations

from collections.abc import Callable

from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import InputError, RunNotFoundError

#: How much of the earlier final answer (and of each dissenting answer) the team is shown.
ANSWER_CHARS = 20_000
DISSENT_CHARS = 1_500
REASON_CHARS = 500


def previous_run(ref: str, get_run: Callable[[str], RunResult],
                 latest: Callable[[], list[RunResult]]) -> RunResult:
    """The run `ref` names (a run id, or `latest`: the newest finished run), read through
    `get_run` (the caller's own view of the runs)."""
    ref = ref.strip()
    if ref == "latest":
        done = [r for r in latest() if r.status != "running"]
        if not done:
            raise RunNotFoundError("there is no finished run to follow up yet")
        return done[0]
    result = get_run(ref)
    if result.status == "running":
        raise InputError(f"run {ref} is still running: follow it up once it has finished "
                         "(get_run says when)")
    return result


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more " \
                                                          "characters]"


def follow_up_context(previous: RunResult) -> str:
    """What the team is told of the run it follows up."""
    lines = [f"<PREVIOUS RUN {previous.run_id}>",
             "This task follows up an earlier run of the team. What it was asked and what it "
             "decided:", "", "Earlier task:", previous.task.strip(), ""]
    agree = previous.agreement
    if previous.final_answer and not previous.best_so_far:
        votes = (f"{previous.winner.votes} of {agree.votes} votes, " if previous.winner
                 else "")
        lines += [f"The team's final answer ({votes}{agree.kind}):",
                  _clip(previous.final_answer.strip(), ANSWER_CHARS)]
    elif previous.final_answer:
        lines += [f"The team did not agree (status {previous.status}); its best answer so "
                  "far:", _clip(previous.final_answer.strip(), ANSWER_CHARS)]
    else:
        lines.append(f"The team reached no final answer (status {previous.status}).")
        for agent_id, n, text in previous.candidates():
            lines.append(f"- candidate of {agent_id} ({n} vote{'s' if n != 1 else ''}): "
                         f"{_clip(text.strip(), DISSENT_CHARS)}")
    if previous.dissent:
        lines += ["", "Dissent (answers that did not win, and why some agents preferred "
                      "them):"]
        for d in previous.dissent:
            reasons = "; ".join(_clip(v.reason, REASON_CHARS) for v in d.voters)
            lines.append(f"- {d.votes} vote{'s' if d.votes != 1 else ''} for: "
                         f"{_clip(d.text.strip(), DISSENT_CHARS)} (reasons: {reasons})")
    lines.append(f"</PREVIOUS RUN {previous.run_id}>")
    return "\n".join(lines)


def with_follow_up(context: str | None, previous: RunResult) -> str:
    """The earlier run's decision, then the caller's own context."""
    block = follow_up_context(previous)
    return f"{block}\n\n{context.strip()}" if context and context.strip() else block
