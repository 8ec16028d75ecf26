"""`RunResult`: what a consensus run returns, and the vote tally that picks the winner."""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, Field

RunStatus = Literal[
    "running", "completed", "timeout", "budget_exceeded", "failed", "cancelled", "interrupted"
]
AgentState = Literal["working", "answered", "voted", "failed", "waiting"]


class UsageInfo(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    provider_calls: int = 0
    native_tool_calls: dict[str, int] = Field(
        default_factory=dict, description="Provider-side tool calls (web_search, "
        "code_interpreter, ...), billed per call by the provider.")


class AnswerInfo(BaseModel):
    """An agent's latest answer. `label` is the anonymous name other agents saw (agent2.3)."""

    label: str
    agent_id: str
    model: str
    text: str
    data: dict[str, Any] | None = Field(
        default=None, description="The structured answer (plan and checkpoint modes), if any.")
    sources: list[dict[str, str]] = Field(
        default_factory=list, description="Web sources ({url, title}) the provider's own "
        "search cited while the agent wrote this answer.")


class VoteInfo(BaseModel):
    voter: str = Field(description="Agent id of the voter.")
    voted_for: str = Field(description="Agent id whose answer got the vote.")
    voted_for_label: str = Field(description="The answer label the voter saw, e.g. agent2.1.")
    reason: str


class WinnerInfo(BaseModel):
    agent_id: str
    model: str
    label: str
    votes: int


class AgentInfo(BaseModel):
    agent_id: str
    anonymous_id: str
    provider: str
    model: str
    status: AgentState
    answers: int = Field(description="How many answers this agent submitted.")
    usage: UsageInfo = Field(default_factory=UsageInfo)
    error: str | None = None
    notes: list[str] = Field(default_factory=list)


class Totals(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    provider_calls: int = 0
    answers: int = 0
    votes: int = 0
    restarts: int = 0


class RunResult(BaseModel):
    """The outcome of a consensus run (also the live status of a running one)."""

    run_id: str
    status: RunStatus
    task: str = Field(description="The task, truncated to 500 characters.")
    final_answer: str | None = Field(
        default=None, description="The answer the team converged on (presented by the winner)."
    )
    final_data: dict[str, Any] | None = Field(
        default=None, description="The structured final answer (plan and checkpoint modes).")
    winner: WinnerInfo | None = None
    tally: dict[str, int] = Field(
        default_factory=dict, description="Votes per agent id, for agents with answers."
    )
    votes: list[VoteInfo] = Field(default_factory=list)
    answers: list[AnswerInfo] = Field(default_factory=list)
    agents: list[AgentInfo] = Field(default_factory=list)
    totals: Totals = Field(default_factory=Totals)
    elapsed_seconds: float = 0.0
    started_at: str = ""
    team: str = ""
    error: str | None = Field(default=None, description="Why the run failed or stopped early.")
    notes: list[str] = Field(
        default_factory=list, description="Warnings about the team: keys of its file that "
        "were accepted but not honoured, and what the team loses.")
    log_dir: str = ""

    def summary_text(self) -> str:
        """The short readable rendering: the final answer, then who won with how many votes."""
        if self.status == "running":
            return f"Run {self.run_id} is still running ({self.totals.answers} answers, " \
                   f"{self.totals.votes} votes so far). Call get_run to follow it."
        head = self.final_answer or "(no answer)"
        lines = [head, ""]
        if self.winner:
            total = sum(self.tally.values())
            lines.append(f"— Winner: {self.winner.agent_id} ({self.winner.model}) with "
                         f"{self.winner.votes}/{total} votes; status {self.status}; "
                         f"{self.elapsed_seconds:.1f}s; run {self.run_id}")
        else:
            lines.append(f"— Status {self.status}; run {self.run_id}")
        if self.error:
            lines.append(f"— {self.error}")
        return "\n".join(lines)


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
