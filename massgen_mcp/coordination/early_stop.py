"""Early stop: end the vote once the votes still outstanding cannot change the outcome.

MassGen waits for every agent's vote. Once the winner is certain (no other answer could even
tie it, were every outstanding vote to go to that answer; and it already holds a majority
of the live team) and its share stays
at or above `min_agreement` whatever the outstanding votes do, those vote turns only cost
calls: they are cancelled and counted (`totals.early_stop_cancelled_turns`). It applies
only when every live agent has answered, so no first answer is ever cut short; an
outstanding agent might still have submitted a better answer, which is the price of the
saving (`early_stop: false` restores MassGen's wait).
"""

from __future__ import annotations

from massgen_mcp.config.team import OrchestratorConfig
from massgen_mcp.coordination.agent import AgentState
from massgen_mcp.coordination.agreement import decided
from massgen_mcp.coordination.result import candidates


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
