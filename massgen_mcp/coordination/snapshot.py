"""A `RunResult` from the agents' state: the live snapshot (status.json, get_run) and the
final result are built the same way, so a run never reads differently live and after."""

from __future__ import annotations

from typing import TYPE_CHECKING

from massgen_mcp.coordination.agreement import agreement_of, dissent_of, missing_votes
from massgen_mcp.coordination.families import independence
from massgen_mcp.coordination.result import (
    AgentInfo,
    AgentState,
    AnswerInfo,
    RunResult,
    RunStatus,
    Totals,
    UsageInfo,
    VoteInfo,
    WinnerInfo,
)
from massgen_mcp.coordination.tally import candidates, current_votes, pick_winner

if TYPE_CHECKING:
    from massgen_mcp.coordination.agent import AgentState as Agent
    from massgen_mcp.coordination.answers import ParsedAnswer
    from massgen_mcp.coordination.reviewers import Reviews

#: While a run is live, answers in its snapshot (status.json, get_run) are clipped to this.
LIVE_ANSWER_CHARS = 4000


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
