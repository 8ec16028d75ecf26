"""Early stop: the vote is decided once the votes still outstanding cannot change the outcome.

MassGen waits for every agent's vote. Once the winner is certain (no other answer could even
tie it, were every outstanding vote to go to that answer; and it already holds a majority
of the live team) and its share stays at or above `min_agreement` whatever the outstanding
votes do, the winner starts presenting at once instead of waiting. The outstanding vote
turns keep running beside the presentation: a vote that arrives before the final answer is
out is recorded and counted in the agreement and the dissent (a unanimous team is reported
as one); only the turns still running when the final answer is out are cancelled, counted
(`totals.early_stop_cancelled_turns`, and as cancelled calls) and reported as missing votes
with the reason. It applies only when every live agent has answered, so no first answer is
ever cut short; a new answer that arrives after the decision is not considered
(`early_stop: false` restores MassGen's wait for every vote).

`verdict` is the end of the vote: the winner, and why it is no decision when it is not
(`min_agreement`, or the default rule that a split is not a decision).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from massgen_mcp.config.orchestration import OrchestratorConfig
from massgen_mcp.coordination.agent import AgentState
from massgen_mcp.coordination.agreement import agreement_of, decided, split_problem
from massgen_mcp.coordination.tally import candidates, current_votes, pick_winner
from massgen_mcp.coordination.workflow import Decision

#: Why a vote turn still running when the final answer was out cast no vote.
CUT_AT_FINAL = "its vote turn was still running when the final answer was out (cancelled)"
NO_NEW_TURN = "the vote was decided before it started another turn"


def settled_vote(cfg: OrchestratorConfig,
                 agents: list[AgentState]) -> tuple[str, list[AgentState]] | None:
    """(winner, the agents whose votes are outstanding) when the vote is decided early."""
    live = [b for b in agents if b.live]
    if not cfg.early_stop or not live or not all(b.answers for b in live):
        return None
    voted = [b for b in live if b.vote is not None and not b.restart_pending]
    outstanding = [b for b in live if b not in voted]
    if not outstanding:
        return None
    names = candidates(agents)
    tally = dict.fromkeys(names, 0)
    by_anon = {b.anon: b.spec.id for b in agents}
    for b in voted:
        target = by_anon.get(b.vote.voted_for or "") if b.vote else None
        if target in tally:
            tally[target] += 1
    winner = decided(tally, names, len(outstanding), cfg.min_agreement)
    # ... and only once the winner holds a majority of the whole live team already
    if winner is None or tally[winner] * 2 <= len(live):
        return None
    return winner, outstanding


def late_reason(outcome: Decision | str, restart_pending: bool, final_out: bool) -> str | None:
    """Why a turn that ended after the vote was decided casts no vote (None: its vote
    counts)."""
    if final_out:
        return CUT_AT_FINAL
    if isinstance(outcome, str):
        return f"its vote turn failed after the vote was decided ({outcome[:160]})"
    if outcome.kind == "answer":
        return "it submitted a new answer after the vote was decided (not considered)"
    if restart_pending:
        return "its vote was for answers older than the latest one (ignored)"
    return None


def cut_at_final(agents: list[AgentState], why_not_voted: dict[str, str]) -> list[str]:
    """The agents whose vote turns are still running now that the final answer is out:
    noted, and their reason recorded (the caller cancels the turns)."""
    running = [b for b in agents if b.live and b.vote is None and b.scope is not None]
    for b in running:
        why_not_voted[b.spec.id] = CUT_AT_FINAL
        b.note(f"cast no vote: {CUT_AT_FINAL}")
    return [b.spec.id for b in running]


@dataclass(frozen=True, slots=True)
class Verdict:
    winner: AgentState | None
    tally: Counter[str]
    problem: str | None  # why the winner is no decision (the run ends no_consensus)


def verdict(cfg: OrchestratorConfig, agents: list[AgentState]) -> Verdict:
    """The winner of the votes that stand, and whether it is a decision."""
    winner_id, tally = pick_winner(current_votes(agents), candidates(agents))
    if winner_id is None:
        return Verdict(None, tally, None)
    w = next(a for a in agents if a.spec.id == winner_id)
    mine, cast = tally[winner_id], sum(tally.values())
    share = agreement_of(winner_id, tally).share
    need = cfg.min_agreement
    why = (f"below min_agreement {need:g}" if need is not None and share < need else
           split_problem(len(agents), sum(1 for a in agents if a.live), mine, need,
                         cfg.min_winner_votes))
    problem = (f"no consensus: the leading answer ({winner_id}) has {mine} of {cast} votes "
               f"({share:.0%}); {why}") if why else None
    return Verdict(w, tally, problem)
