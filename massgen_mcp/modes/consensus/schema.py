"""What every mode's result reports of the vote: the winner, the tally and the votes."""

from __future__ import annotations

from pydantic import BaseModel, Field

from massgen_mcp.coordination.result import RunResult


class Consensus(BaseModel):
    run_id: str
    status: str
    winner: str | None = None
    tally: dict[str, int] = Field(default_factory=dict)
    votes: list[dict[str, str]] = Field(default_factory=list)
    elapsed_seconds: float = 0.0
    error: str | None = None


def consensus_of(result: RunResult) -> Consensus:
    return Consensus(run_id=result.run_id, status=result.status,
                     winner=result.winner.agent_id if result.winner else None,
                     tally=result.tally, votes=[v.model_dump() for v in result.votes],
                     elapsed_seconds=result.elapsed_seconds, error=result.error)
