"""How strongly the team agreed: the winner's share of the votes, its kind, and the dissent.

`agreement` is computed from the votes that stand at the end of a run (one per voter):

- `unanimous`: every vote went to the winner;
- `majority`:  the winner has more than half of the votes;
- `plurality`: the winner has the most votes, but not more than half;
- `split`:     the winner is tied with another answer (config order broke the tie);
- `none`:      nobody voted (the run stopped before any vote).

`share` is the winner's votes over the votes cast (0 when none were); after an early stop,
the cancelled votes count as votes it did not get. An agent voting for
its own answer counts like any other voter: with every agent doing so the result is a
`split`, never a win. `dissent` lists every answer that did not win, with its votes, its
voters and their reasons (empty when the vote was unanimous).

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


class Agreement(BaseModel):
    """How strongly the team agreed on the winner."""

    kind: AgreementKind = Field(description="unanimous, majority (over half), plurality (most "
                                            "votes), split (a tie) or none (no votes).")
    share: float = Field(description="The winner's share of the votes cast, 0 to 1.")
    votes: int = Field(default=0, description="Votes cast.")
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
                 uncast: int = 0) -> Agreement:
    """The agreement on `winner` given the votes per candidate. `uncast`: votes an early
    stop cancelled; they count as votes the winner did not get (a share never claims more
    than was cast)."""
    cast = sum(tally.values())
    total = cast + uncast
    if winner is None or cast == 0:
        return Agreement(kind="none", share=0.0, votes=cast)
    mine = tally.get(winner, 0)
    share = round(mine / total, 4)
    kind: AgreementKind
    if mine == total:
        kind = "unanimous"
    elif any(n == mine for c, n in tally.items() if c != winner):
        kind = "split"
    elif mine * 2 > total:
        kind = "majority"
    else:
        kind = "plurality"
    return Agreement(kind=kind, share=share, votes=cast)


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
