"""k reviewers for big teams: who reads whose answers.

All-to-all review (MassGen's) shows every agent every answer, so one agent's prompt grows
with the team and the run's prompt text with N²: 6.4K characters at 3 agents, 43.9K at 16
(issue 31). Above `all_to_all_max_agents` (5) each agent reads `reviewers_per_agent` (k, 4)
other answers instead, chosen by a seeded rotation:

    the agents are put on a ring in a seeded random order; each reads the k agents after it.

So every answer is read by exactly k agents (the k before it on the ring), no agent reads
itself, and the assignment is fixed for the run (recorded in the result with its seed, so it
can be rebuilt). An agent votes among the answers it read and its own; a vote for another
answer is refused like an unknown label. A new answer restarts only the agents that read it
(the others' view did not change), and an agent waits only for the first answers it will
read. The winner presents with the answers it read and the votes it got, so no prompt grows
with N.
"""

from __future__ import annotations

import hashlib
import random

from pydantic import BaseModel, Field

from massgen_mcp.config.orchestration import OrchestratorConfig
from massgen_mcp.coordination.agent import AgentState


class Reviews(BaseModel):
    """Who read whose answers in a team reviewed by k reviewers."""

    per_agent: int = Field(description="How many other answers each agent read (k).")
    seed: int = Field(description="Seed of the rotation that chose them.")
    reads: dict[str, list[str]] = Field(
        description="Agent id -> the agent ids whose answers it was shown and could vote "
                    "for (besides its own).")


def reviewers_per_agent(cfg: OrchestratorConfig, team_size: int) -> int | None:
    """k for a team of this size; None: all-to-all (small team, or k covers everyone)."""
    k = cfg.reviewers_per_agent
    if team_size <= cfg.all_to_all_max_agents or k >= team_size - 1:
        return None
    return k


def review_seed(task: str, agent_ids: list[str], configured: int | None) -> int:
    """The rotation's seed: the configured shuffle seed, else one from the task and team (the
    same run reads the same answers, so a recorded run replays request for request)."""
    if configured is not None:
        return configured
    digest = hashlib.sha256("\0".join(["reviews", task, *agent_ids]).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def assign(agent_ids: list[str], k: int, seed: int) -> dict[str, list[str]]:
    """Agent -> the k agents it reads, by the seeded rotation (each is read by exactly k)."""
    ring = sorted(agent_ids)
    random.Random(f"reviews:{seed}").shuffle(ring)
    n = len(ring)
    if not 0 < k < n:
        raise ValueError(f"k must be between 1 and {n - 1} for a team of {n}")
    return {ring[i]: [ring[(i + j) % n] for j in range(1, k + 1)] for i in range(n)}


def set_up_reviews(cfg: OrchestratorConfig, task: str, agents: list[AgentState]) -> Reviews | None:
    """Give each agent what it reads (`AgentState.reads`, anonymous ids) when the team is
    big enough for k reviewers; the assignment for the result, or None (all-to-all)."""
    k = reviewers_per_agent(cfg, len(agents))
    if k is None:
        return None
    ids = [a.spec.id for a in agents]
    seed = review_seed(task, ids, cfg.shuffle_seed)
    reads = assign(ids, k, seed)
    anon = {a.spec.id: a.anon for a in agents}
    for a in agents:
        a.reads = frozenset(anon[b] for b in reads[a.spec.id])
    return Reviews(per_agent=k, seed=seed, reads=reads)


def reads(a: AgentState, b: AgentState) -> bool:
    """Does `a` see `b`'s answer (its own included)?"""
    return a is b or a.reads is None or b.anon in a.reads
