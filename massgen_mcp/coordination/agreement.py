"""How strongly the team agreed: the winner's share of the votes, its kind, and the dissent.

`agreement` is computed from the votes that stand at the end of a run (one per voter):

- `unanimous`: every vote went to the winner;
- `majority`:  the winner has more than half of the votes;
- `plurality`: the winner has the most votes, but not more than half;
- `split`:     the winner is tied with another answer (config order broke the tie);
- `none`:      nobody voted (the run stopped before any vote).

`share` is the winner's votes over the votes cast (0 when none were). A live agent that did
not vote (its vote was still on its way when the final answer was out, the run stopped
first, ...) is not counted as a vote either way: `not_voted` says how many there were and
`missing_votes` who and why. An agent voting for
its own answer counts like any other voter: with every agent doing so the result is a
`split`, never a win. `dissent` lists every answer that did not win, with its votes, its
voters and their reasons (empty when the vote was unanimous).

`split_problem` is the default decision rule: in a team of three or more, a winner needs at
least two votes (unless `min_agreement` is set, which then decides alone).

`decided` is the early-stop test: can the votes still outstanding change the winner, or
push its share below `min_agreement`?
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from massgen_mcp.coordination.agent import AgentState

AgreementKind = Literal["unanimous", "majority", "plurality", "split", "none"]


class MissingVote(BaseModel):
    agent_id: str
    reason: str


class Agreement(BaseModel):
    """How strongly the team agreed on the winner."""

    kind: AgreementKind = Field(description="unanimous, majority (over half), plurality (most "
                                            "votes), split (a tie) or none (no votes).")
    share: float = Field(description="The winner's share of the votes cast, 0 to 1.")
    votes: int = Field(default=0, description="Votes cast.")
    not_voted: int = Field(default=0, description="Live agents that cast no vote.")
    missing_votes: list[MissingVote] = Field(
        default_factory=list, description="Each live agent that cast no vote, and why.")
    independent_share: float | None = Field(
        default=None, description="The winner's share when each model family's votes count "
                                  "once (families.py); null with no votes.")


class DissentVote(BaseModel):
    voter: str = Field(description="Agent id of the voter.")
    reason: str


class Dissent(BaseModel):
    """An answer that did not win, and who preferred it."""

    agent_id: str
    label: str = Field(description="The answer label the voters saw, e.g. agent2.1.")
    votes: int
    voters: list[DissentVote] = Field(default_factory=list)
    text: str = Field(default="", description="The start of that answer (300 characters).")


DISSENT_TEXT_CHARS = 300


def agreement_of(winner: str | None, tally: Counter[str] | dict[str, int],
                 missing: Sequence[MissingVote] = ()) -> Agreement:
    """The agreement on `winner` given the votes per candidate (over the votes cast);
    `missing`: the live agents that cast no vote, with why."""
    cast = sum(tally.values())
    mine = tally.get(winner, 0) if winner is not None else 0
    kind: AgreementKind
    if winner is None or cast == 0:
        kind = "none"
    elif mine == cast:
        kind = "unanimous"
    elif any(n == mine for c, n in tally.items() if c != winner):
        kind = "split"
    elif mine * 2 > cast:
        kind = "majority"
    else:
        kind = "plurality"
    return Agreement(kind=kind, share=round(mine / cast, 4) if kind != "none" else 0.0,
                     votes=cast, not_voted=len(missing), missing_votes=list(missing))


#: In a team of at least this many agents, a winner needs at least `SPLIT_MIN_VOTES` votes
#: by default: one vote (its author's own, typically) is not a team decision.
SPLIT_TEAM_SIZE = 3
SPLIT_MIN_VOTES = 2


def split_problem(team_size: int, live: int, votes: int, min_agreement: float | None,
                  min_winner_votes: int | None = None) -> str | None:
    """Why a winner with `votes` votes is no decision under the default rule, or None.
    `min_agreement` set: it alone decides (checked by the caller). `min_winner_votes`
    replaces the default need (1: any winner). The need never exceeds the live voters, so
    a lone surviving agent still ends `degraded`, not `no_consensus`."""
    if min_agreement is not None:
        return None
    need = min_winner_votes if min_winner_votes is not None else (
        SPLIT_MIN_VOTES if team_size >= SPLIT_TEAM_SIZE else 1)
    need = min(need, max(live, 1))
    if votes >= need:
        return None
    return (f"a winner needs at least {need} votes in a team of {team_size} (a split is "
            "not a decision; min_agreement or min_winner_votes changes the rule)")


def decided(tally: Counter[str] | dict[str, int], candidates: Sequence[str], outstanding: int,
            min_agreement: float | None) -> str | None:
    """The winner, when `outstanding` more votes cannot change it nor bring its share below
    `min_agreement`; else None. Only a lead no other answer can even tie counts: a win on
    the config-order tie-break is never decided early."""
    if not candidates or sum(tally.values()) == 0:
        return None
    best = max(candidates, key=lambda c: (tally.get(c, 0), -candidates.index(c)))
    mine = tally.get(best, 0)
    if any(tally.get(c, 0) + outstanding >= mine for c in candidates if c != best):
        return None
    if min_agreement is not None:
        worst = mine / (sum(tally.values()) + outstanding)
        if worst < min_agreement:
            return None
    return best


def missing_votes(agents: list[AgentState], reasons: dict[str, str],
                  status: str) -> list[MissingVote]:
    """Each live agent without a standing vote, with why: the reason the run recorded
    (`reasons`, by agent id), else one read from the run's status."""
    fallback = ("has not voted yet" if status == "running" else
                f"the run stopped ({status}) before it voted"
                if status in ("timeout", "budget_exceeded", "cancelled", "interrupted") else
                "did not vote before the vote was decided")
    return [MissingVote(agent_id=a.spec.id, reason=reasons.get(a.spec.id, fallback))
            for a in agents if a.live and a.vote is None]


def dissent_of(agents: list[AgentState], winner: str | None) -> list[Dissent]:
    """Every answer but the winner's that got votes, with its voters (config order). An
    answer nobody voted for is not dissent: even its author preferred another."""
    by_anon = {a.anon: a for a in agents}
    out = []
    for c in agents:
        if not c.answers or c.spec.id == winner:
            continue
        voters = [DissentVote(voter=a.spec.id, reason=a.vote.reason) for a in agents
                  if a.vote and a.vote.voted_for and by_anon[a.vote.voted_for] is c]
        if voters:
            out.append(Dissent(agent_id=c.spec.id, label=c.label or "", votes=len(voters),
                               voters=voters,
                               text=c.answers[-1].text[:DISSENT_TEXT_CHARS]))
    return out
