"""`RunResult`: what a consensus run returns, the vote tally that picks the winner, and the
assembly of a result from the agents' state.

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

from collections import Counter
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from massgen_mcp.config.providers import short_model
from massgen_mcp.coordination.agreement import (
    Agreement,
    Dissent,
    agreement_of,
    dissent_of,
    missing_votes,
)
from massgen_mcp.coordination.families import independence
from massgen_mcp.coordination.reviewers import Reviews

if TYPE_CHECKING:
    from massgen_mcp.coordination.agent import AgentState as Agent
    from massgen_mcp.coordination.answers import ParsedAnswer

RunStatus = Literal[
    "running", "completed", "degraded", "no_consensus", "timeout", "budget_exceeded", "failed",
    "cancelled", "interrupted"
]
#: While a run is live, answers in its snapshot (status.json, get_run) are clipped to this.
LIVE_ANSWER_CHARS = 4000
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


# ---------------------------------------------------------------------------- assembly


def candidates(agents: list[Agent]) -> list[str]:
    """Agent ids with an answer, in config order (the order ties are broken in)."""
    return [a.spec.id for a in agents if a.answers]


def current_votes(agents: list[Agent]) -> dict[str, str]:
    """Current votes: voter id -> voted-for agent id."""
    by_anon = {a.anon: a.spec.id for a in agents}
    return {a.spec.id: by_anon[a.vote.voted_for] for a in agents if a.vote and a.vote.voted_for}


def _usage_info(a: Agent) -> UsageInfo:
    u = a.usage
    cost = a.cost_usd
    return UsageInfo(input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                     total_tokens=u.total_tokens, provider_calls=u.calls,
                     cancelled_calls=u.cancelled_calls,
                     estimated_input_tokens=u.estimated_input_tokens,
                     cost_usd=round(cost, 6) if cost is not None else None,
                     native_tool_calls=dict(a.native_calls))


def agent_status(a: Agent) -> AgentState:
    if not a.live:
        return "failed"
    if a.vote is not None:
        return "voted"
    if a.scope is not None:
        return "working"
    return "answered" if a.answers else "waiting"


def status_error(status: RunStatus, agents: list[Agent], time_limit: float, *,
                 has_answer: bool, detail: str | None) -> str | None:
    """The result's `error`: why the run failed or stopped early, naming dropped agents."""
    dropped = "; ".join(f"{a.spec.id}: {a.error}" for a in agents if not a.live)
    if status == "failed":
        best = " (the best answer so far is returned)" if has_answer else ""
        return f"every agent failed{best}: {dropped}"
    if status == "degraded":
        return f"the live agents agreed, but some agents were dropped: {dropped}"
    if status == "no_consensus":
        return detail
    if status == "timeout":
        return f"the run hit its {time_limit:g}s time limit; this is the best answer so far"
    if status == "budget_exceeded":
        return f"{detail or 'the run used up its budget'}; this is the best answer so far"
    return None


def build_result(
    agents: list[Agent],
    *,
    run_id: str,
    status: RunStatus,
    task: str,
    final: ParsedAnswer | None,
    winner: Agent | None,
    restarts: int,
    error: str | None,
    elapsed: float,
    started_at: str,
    team: str,
    log_dir: str,
    presented: bool = False,
    shuffle_seed: int | None = None,
    early_stop_cancelled_turns: int = 0,
    not_voted: dict[str, str] | None = None,
    reviews: Reviews | None = None,
) -> RunResult:
    """The result (or live snapshot) of a run from its agents' state. With status
    `no_consensus`, `winner` is the leading answer: it is measured, not returned as won."""
    names = candidates(agents)
    votes = current_votes(agents)
    leader_id, tally = pick_winner(votes, names)
    if winner is not None and winner.answers:
        leader_id = winner.spec.id
    agreement = agreement_of(leader_id, {c: tally[c] for c in names},
                             missing_votes(agents, not_voted or {}, status))
    leader = next((a for a in agents if a.spec.id == leader_id), None)
    families, independent = independence(agents, leader)
    agreement.independent_share = None if agreement.kind == "none" else independent
    no_consensus = status == "no_consensus"
    by_anon = {a.anon: a for a in agents}
    totals = Totals(restarts=restarts, votes=len(votes),
                    answers=sum(len(a.answers) for a in agents),
                    early_stop_cancelled_turns=early_stop_cancelled_turns)
    infos = []
    costs = []
    for a in agents:
        info = _usage_info(a)
        totals.input_tokens += info.input_tokens
        totals.output_tokens += info.output_tokens
        totals.provider_calls += info.provider_calls
        totals.cancelled_calls += info.cancelled_calls
        totals.estimated_input_tokens += info.estimated_input_tokens
        costs.append(info.cost_usd)
        infos.append(AgentInfo(
            agent_id=a.spec.id, anonymous_id=a.anon, provider=a.spec.provider.name,
            model=a.backend.model, status=agent_status(a), answers=len(a.answers),
            usage=info, error=a.error,
            notes=[*a.notes, *(a.toolbox.notes if a.toolbox else [])],
            stance=a.spec.stance, key=a.spec.key_source,
            endpoint=a.spec.endpoint))
    totals.total_tokens = totals.input_tokens + totals.output_tokens
    if all(c is not None for c in costs):
        totals.cost_usd = round(sum(c for c in costs if c is not None), 6)
    live = status == "running"

    def clip(text: str) -> str:
        if not live or len(text) <= LIVE_ANSWER_CHARS:
            return text
        return text[:LIVE_ANSWER_CHARS] + f"... ({len(text)} characters; all of it at the end)"

    shown_winner = None if no_consensus else winner
    return RunResult(
        run_id=run_id, status=status, task=task[:500],
        final_answer=final.text if final and not no_consensus else None,
        final_data=final.data if final and not no_consensus else None,
        best_so_far=final is not None and status not in ("completed", "degraded",
                                                         "no_consensus"),
        winning_answer=(clip(shown_winner.answers[-1].text)
                        if shown_winner is not None and shown_winner.answers else None),
        presented=presented and not no_consensus,
        winner=WinnerInfo(agent_id=shown_winner.spec.id, model=shown_winner.backend.model,
                          label=shown_winner.label or "", votes=tally[shown_winner.spec.id],
                          families=families)
        if shown_winner is not None and shown_winner.answers else None,
        agreement=agreement,
        dissent=dissent_of(agents, leader_id),
        tally={c: tally[c] for c in names},
        votes=[VoteInfo(voter=a.spec.id, voted_for=by_anon[a.vote.voted_for].spec.id,
                        voted_for_label=a.vote_label, reason=a.vote.reason)
               for a in agents if a.vote and a.vote.voted_for],
        answers=[AnswerInfo(label=a.label or "", agent_id=a.spec.id, model=a.backend.model,
                            text=clip(a.answers[-1].text), data=a.answers[-1].data,
                            sources=a.answer_sources)
                 for a in agents if a.answers],
        agents=infos, totals=totals, elapsed_seconds=elapsed, started_at=started_at,
        team=team, error=error, log_dir=log_dir, shuffle_seed=shuffle_seed, reviews=reviews,
    )
