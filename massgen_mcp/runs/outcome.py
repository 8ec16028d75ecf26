"""How a finished run reads to a person: the CLI's stderr and the MCP tool's text.

A run that stopped (time limit, budget, cancel) before any agent answered has no "best
answer so far"; its wording says so instead of promising one.
"""

from __future__ import annotations

from massgen_mcp.coordination.result import RunResult

STOPPED = ("timeout", "budget_exceeded", "cancelled", "interrupted")


def _limit(result: RunResult) -> str:
    if result.status == "timeout":
        return f"the run reached its time limit after {result.elapsed_seconds:.0f} s"
    if result.status == "budget_exceeded":
        return "the run used up its token budget (max_total_tokens)"
    if result.status == "cancelled":
        return "the run was cancelled"
    return "the process running it stopped"


def honest_error(result: RunResult) -> str | None:
    """`result.error`, corrected for a stopped run that has no answer at all."""
    if result.status in STOPPED and not result.final_answer and not result.answers:
        working = [a.agent_id for a in result.agents if a.status in ("working", "waiting")]
        who = f" ({', '.join(working)} still working)" if working else ""
        return f"no answer: {_limit(result)} before any agent answered{who}"
    return result.error


def settle_wording(result: RunResult) -> RunResult:
    """The result with `honest_error` in place (what clients and the CLI are shown)."""
    result.error = honest_error(result)
    return result


def is_error(result: RunResult) -> bool:
    """A failed run, or a time limit / budget stop with no answer: the caller got nothing
    to use. A stop that returns the best answer so far is not an error, nor is a run that
    was cancelled (someone asked for that)."""
    if result.status == "failed":
        return True
    return result.status in ("timeout", "budget_exceeded") and not result.final_answer


def result_text(result: RunResult) -> str:
    """The tool's text: the answer with who won, or a plain statement that there is none."""
    if result.status in ("running", "no_consensus") or result.final_answer:
        return result.summary_text()  # no consensus: the candidates and their votes
    lines = [f"No answer (status {result.status}; run {result.run_id})."]
    if result.error:
        lines.append(result.error[0].upper() + result.error[1:])
    return "\n".join(lines)
