"""The vote tally: most votes wins, a tie goes to config order (MassGen's rule)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from massgen_mcp.coordination.agent import AgentState as Agent


def pick_winner(votes: dict[str, str], candidates: list[str]) -> tuple[str | None, Counter[str]]:
    """Most votes wins; a tie goes to the candidate earliest in `candidates` (config order).

    `votes` maps voter -> voted-for agent id; `candidates` are the agent ids with an answer,
    in config order. With no votes, the first candidate wins.
    """
    tally: Counter[str] = Counter(v for v in votes.values() if v in candidates)
    if not candidates:
        return None, tally
    best = max(candidates, key=lambda c: (tally[c], -candidates.index(c)))
    return best, tally


def candidates(agents: list[Agent]) -> list[str]:
    """Agent ids with an answer, in config order (the order ties are broken in)."""
    return [a.spec.id for a in agents if a.answers]


def current_votes(agents: list[Agent]) -> dict[str, str]:
    """Current votes: voter id -> voted-for agent id."""
    by_anon = {a.anon: a.spec.id for a in agents}
    return {a.spec.id: by_anon[a.vote.voted_for] for a in agents if a.vote and a.vote.voted_for}
