"""`RunResult`: what a consensus run returns (and what a live run's snapshot says), and its
short text. It is assembled from the agents' state in snapshot.py; tally.py picks the winner.

Statuses are truthful: `completed` means every agent is live and the vote is decided (all
voted, or the outstanding votes could not change the winner: early stop); `degraded` means the
live agents agreed but some were dropped or cut off (`error` names them and why);
`no_consensus` means the vote decided nothing: the winner's share was below `min_agreement`,
or (by default, in a team of three or more) it had a single vote, a split (no final
answer; the candidates and their votes are listed); `failed` means no agent is left. A
`final_answer` the team did not agree on (timeout, budget, cancel, failed) carries
`best_so_far: true`. Every result carries `agreement` and `dissent` (agreement.py) and the
stored winning answer (`winning_answer`), whatever the presentation made of it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from massgen_mcp.config.providers import short_model
from massgen_mcp.coordination.agreement import Agreement, Dissent
from massgen_mcp.coordination.reviewers import Reviews

RunStatus = Literal[
    "running", "completed", "degraded", "no_consensus", "timeout", "budget_exceeded", "failed",
    "cancelled", "interrupted"
]
AgentState = Literal["working", "answered", "voted", "failed", "waiting"]


class UsageInfo(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    provider_calls: int = Field(default=0, description="Provider calls, cancelled ones included.")
    cancelled_calls: int = Field(
        default=0, description="Calls cancelled by a newer answer or by the end of the run "
                               "(the provider still computed them).")
    estimated_input_tokens: int = Field(
        default=0, description="Part of input_tokens that is an estimate (about 4 characters "
                               "a token), for calls the provider reported no usage for.")
    cost_usd: float | None = Field(
        default=None, description="Estimated cost in US dollars from the price table; null "
                                  "when a model's price is unknown.")
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
    families: int = Field(default=0, description="Model families among its voters.")


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
    stance: str | None = Field(
        default=None, description="The stance this agent was asked to take (for, against, "
                                  "neutral, or a custom instruction).")
    key: str | None = Field(
        default=None, description="Where this agent's API key came from: the environment "
                                  "variable's name, 'team file', or null for none.")
    endpoint: str | None = Field(default=None, description="The endpoint it called.")


class Totals(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    provider_calls: int = 0
    cancelled_calls: int = 0
    estimated_input_tokens: int = 0
    cost_usd: float | None = Field(
        default=None, description="Estimated cost of the run in US dollars; null when any "
                                  "agent's model price is unknown.")
    answers: int = 0
    votes: int = 0
    restarts: int = 0
    early_stop_cancelled_turns: int = Field(
        default=0, description="Vote turns still running when the final answer was out "
                               "(cancelled; the outcome was already decided: early stop).")


class FileChange(BaseModel):
    path: str = Field(description="Relative to the workspace.")
    change: Literal["added", "modified", "deleted"]


class WorkspaceResult(BaseModel):
    """The winning coding agent's workspace: what it changed against the seed, and what was
    written back to the user's context paths (runs/workspace.py)."""

    agent_id: str
    path: str = Field(description="The winner's workspace directory (kept with the run).")
    changed: list[FileChange] = Field(default_factory=list)
    diff: str = Field(default="", description="Unified diff of text files against the seed.")
    diff_truncated: bool = False
    applied: list[str] = Field(
        default_factory=list, description="Files written back to a context path.")
    skipped: list[str] = Field(
        default_factory=list, description="Changes not written back, each with the reason.")


class RunResult(BaseModel):
    """The outcome of a consensus run (also the live status of a running one)."""

    run_id: str
    status: RunStatus
    task: str = Field(description="The task, truncated to 500 characters.")
    final_answer: str | None = Field(
        default=None, description="The answer the team converged on (presented by the winner), "
                                  "or the best answer so far when best_so_far is true."
    )
    best_so_far: bool = Field(
        default=False, description="True when final_answer is not one the team agreed on: the "
                                   "run stopped early or failed, and this is its best answer.")
    final_data: dict[str, Any] | None = Field(
        default=None, description="The structured final answer (plan and checkpoint modes).")
    winning_answer: str | None = Field(
        default=None, description="The winner's stored answer, exactly as the team voted for "
                                  "it (final_answer is the winner's presentation of it).")
    presented: bool = Field(
        default=False, description="True when final_answer is the winner's presentation; "
                                   "false when it is the stored winning answer (see notes).")
    winner: WinnerInfo | None = None
    agreement: Agreement = Field(
        default_factory=lambda: Agreement(kind="none", share=0.0),
        description="How strongly the team agreed: kind (unanimous, majority, plurality, "
                    "split, none) and the winner's share of the votes.")
    dissent: list[Dissent] = Field(
        default_factory=list, description="Each answer that did not win, with its votes, "
                                          "voters and their reasons (empty when unanimous).")
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
    shuffle_seed: int | None = Field(
        default=None, description="Seed of the per-voter, per-round order in which answers "
                                  "were shown (position-bias control); null when not shuffled.")
    workspace: WorkspaceResult | None = Field(
        default=None, description="The winner's workspace, when the winner is a coding agent.")
    follow_up_of: str | None = Field(default=None, description="The run this one follows up.")
    reviews: Reviews | None = Field(
        default=None, description="Big teams (k reviewers): who read whose answers; null "
                                  "when every agent read every answer.")

    def summary_text(self) -> str:
        """The short readable rendering: the final answer, then who won with how many votes,
        how strongly the team agreed, and who dissented."""
        if self.status == "running":
            return f"Run {self.run_id} is still running ({self.totals.answers} answers, " \
                   f"{self.totals.votes} votes so far). Call get_run to follow it."
        if self.status == "no_consensus":
            lines = ["No consensus: the team did not agree enough to give one answer.", ""]
            lines += [f"- {c} ({n} vote{'s' if n != 1 else ''}): {_first_line(t)}"
                      for c, n, t in self.candidates()]
            lines += ["", f"— Status {self.status}; {self.elapsed_seconds:.1f}s; "
                          f"run {self.run_id}"]
            if self.error:
                lines.append(f"— {self.error}")
            return "\n".join(lines)
        head = self.final_answer or "(no answer)"
        if self.final_answer and self.best_so_far:
            head = "(best answer so far; the team did not agree on it)\n" + head
        lines = [head, ""]
        if self.winner:
            # over the votes cast; who did not vote is said next to it
            total = sum(self.tally.values())
            how = (f"with {votes_cast(self.winner.votes, total)} ({self.agreement.kind})"
                   if total else "no votes were cast")
            lines.append(f"— Winner: {self.winner.agent_id} ({short_model(self.winner.model)}),"
                         f" {how}; status {self.status}; {self.elapsed_seconds:.1f}s; "
                         f"run {self.run_id}")
            lines += [f"— No vote from {m.agent_id}: {m.reason}"
                      for m in self.agreement.missing_votes]
        else:
            lines.append(f"— Status {self.status}; run {self.run_id}")
        for d in self.dissent:
            if d.votes:
                who = ", ".join(v.voter for v in d.voters)
                lines.append(f"— Dissent: {d.agent_id} ({d.votes} vote"
                             f"{'s' if d.votes != 1 else ''}: {who})")
        if self.error:
            lines.append(f"— {self.error}")
        return "\n".join(lines)

    def vote_total(self) -> int:
        """The votes cast (every vote that arrived counts; the live agents that cast none are
        `agreement.missing_votes`)."""
        return sum(self.tally.values())

    def candidates(self) -> list[tuple[str, int, str]]:
        """(agent id, votes, answer text) for every answer, most votes first."""
        texts = {a.agent_id: a.text for a in self.answers}
        order = sorted(self.tally, key=lambda c: -self.tally[c])
        return [(c, self.tally[c], texts.get(c, "")) for c in order]


def votes_cast(votes: int, total: int) -> str:
    """The one wording of a winner's votes (CLI, viewer, report, tool text): "2 of 3"."""
    return f"{votes} of {total} vote{'s' if total != 1 else ''} cast"


def _first_line(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 3] + "..."
