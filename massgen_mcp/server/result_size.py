"""Tool results that fit the client.

A run's full record (every answer, every agent's usage, the events) easily passes what a
client keeps inline: Claude Code 2.1.332 saves a tool result of more than 50,000 characters
to a file (`<persisted-output>`) unless the tool allows more in its `tools/list` entry
(`_meta["anthropic/maxResultSizeChars"]`, at most 500,000), and cuts what passes
`MAX_MCP_OUTPUT_TOKENS` (25,000 tokens, counted as characters / 4). Its model reads the
*structured* content (as JSON) and not the text. So by default a run's result is compact
(`CompactRun`): the decision, the final answer in full (shortened, with a link, only past
`FINAL_ANSWER_CHARS`), the votes with their reasons, totals and one line per agent; the
text is a short human summary that repeats no answer. The rest stays one call away:
`get_run(run_id, detail=...)` and the run's resources.

The Python SDK client reads a streamable-HTTP response as SSE events of at most 1 MiB; a
detailed result is therefore kept under `MAX_RESULT_BYTES` too (`fit_result`).
"""

from __future__ import annotations

import json
import os
from typing import Any, Literal

from mcp.types import CallToolResult, ResourceLink, TextContent
from pydantic import BaseModel, Field

from massgen_mcp.config.providers import short_model
from massgen_mcp.coordination.result import (
    AgentInfo,
    AnswerInfo,
    RunResult,
    WinnerInfo,
    votes_cast,
)
from massgen_mcp.server.apps import APP_URI

# The text and the structured copy travel in one JSON-RPC message, with escaping on top.
MAX_RESULT_BYTES = 700_000
#: What a compact result (text + structured JSON) stays under: ~20,000 tokens.
COMPACT_BYTES = 80_000
#: The final answer is sent whole up to this many characters.
FINAL_ANSWER_CHARS = 60_000
#: Claude Code keeps a tool's result inline up to this many characters (its default is
#: 50,000); set on the run tools' `tools/list` entries.
CLAUDE_CODE_INLINE_CHARS = 100_000
REASON_CHARS = 1_500
_MIN_CLIP = 200

Detail = Literal["summary", "answers", "agents", "events", "all"]


class CompactVote(BaseModel):
    voter: str = Field(description="Agent id of the voter.")
    voted_for: str = Field(description="Agent id whose answer got the vote.")
    reason: str


class CompactTotals(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    provider_calls: int = 0
    cost_usd: float | None = Field(
        default=None, description="Estimated cost in US dollars; null when a model's price "
                                  "is unknown.")
    answers: int = 0
    votes: int = 0
    restarts: int = 0
    early_stop_cancelled_turns: int = Field(
        default=0, description="Vote turns still running when the final answer was out "
                               "(cancelled: no outstanding vote could change the winner).")


class CompactRun(BaseModel):
    """A run's decision: what a client gets by default. Every answer, each agent's usage and
    the events are in `get_run(run_id, detail=...)` and the resource `resource`."""

    run_id: str
    status: str = Field(description="running, completed, degraded, timeout, budget_exceeded, "
                                    "failed, cancelled or interrupted.")
    task: str = Field(description="The task, truncated to 300 characters.")
    final_answer: str | None = Field(
        default=None, description="The answer the team converged on, in full unless "
                                  "final_answer_truncated (then the whole text is at "
                                  "`answer_resource`).")
    final_answer_chars: int = Field(default=0, description="Length of the whole final answer.")
    final_answer_truncated: bool = False
    best_so_far: bool = Field(
        default=False, description="True when final_answer is not one the team agreed on "
                                   "(the run stopped early or failed).")
    final_data: dict[str, Any] | None = Field(
        default=None, description="The structured final answer (plan and checkpoint modes).")
    winner: WinnerInfo | None = None
    agreement: dict[str, Any] | None = Field(
        default=None, description="How strongly the team agreed: {kind, share, votes, not_voted, "
                                  "missing_votes}, over the votes cast.")
    dissent: list[Any] = Field(default_factory=list,
                               description="Who did not vote for the winner, and why.")
    tally: dict[str, int] = Field(default_factory=dict, description="Votes per agent id.")
    votes: list[CompactVote] = Field(default_factory=list)
    agents: list[str] = Field(default_factory=list,
                              description="One line per agent: id, model, status, answers, "
                                          "tokens, cost, error.")
    totals: CompactTotals = Field(default_factory=CompactTotals)
    elapsed_seconds: float = 0.0
    started_at: str = ""
    team: str = ""
    error: str | None = Field(default=None, description="Why the run failed or stopped early.")
    notes: list[str] = Field(default_factory=list)
    workspace: dict[str, Any] | None = Field(
        default=None, description="The winning coding agent's workspace: path and changed "
                                  "files (the diff: get_run detail='all').")
    resource: str = Field(default="", description="The run's full record (MCP resource).")
    answer_resource: str = Field(default="", description="The whole final answer (MCP "
                                                         "resource, text/markdown).")
    app_resource: str = Field(default="", description="The run viewer as an MCP App "
                                                      "(ui:// resource), live while it runs.")
    log_dir: str = ""
    reviews: dict[str, Any] | None = Field(
        default=None, description="Big teams (k reviewers): {per_agent, seed, reads: agent "
                                  "-> the agents whose answers it read}; null: all-to-all.")
    follow_up_of: str | None = Field(
        default=None, description="The run this run follows up (its task, final answer and "
                                  "dissent were given to the team).")
    more: str = Field(default="", description="How to get every answer, usage and event.")
    # Only with get_run(detail=...):
    answers: list[AnswerInfo] | None = Field(
        default=None, description="Every agent's latest answer (detail answers/all).")
    agent_details: list[AgentInfo] | None = Field(
        default=None, description="Each agent's usage, notes and error (detail agents/all).")
    events: list[dict[str, Any]] | None = Field(
        default=None, description="The run's coordination events (detail events/all).")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]} […{len(text) - limit:,} more]"


def _agent_line(a: AgentInfo) -> str:
    u = a.usage
    cost = f", ${u.cost_usd:.4f}" if u.cost_usd is not None else ""
    line = (f"{a.agent_id} ({a.provider}/{short_model(a.model)}): {a.status}, {a.answers} answer"
            f"{'' if a.answers == 1 else 's'}, {u.total_tokens:,} tokens{cost}")
    if a.stance:
        line += f"; stance: {_clip(a.stance, 200)}"
    if a.key and " from " in a.key:  # only the project's .env sets the key: say so
        line += f"; key: {a.key}"
    return f"{line}; error: {_clip(a.error, 300)}" if a.error else line


def compact(result: RunResult, detail: Detail = "summary",
            events: list[dict[str, Any]] | None = None) -> CompactRun:
    """The compact view of `result` (with the parts `detail` asks for)."""
    uri = f"massgen://runs/{result.run_id}"
    answer = result.final_answer
    shown = answer if answer is None or len(answer) <= FINAL_ANSWER_CHARS \
        else _clip(answer, FINAL_ANSWER_CHARS) + f" (the whole answer: {uri}/answer)"
    ws = result.workspace
    out = CompactRun(
        run_id=result.run_id, status=result.status, task=_clip(result.task, 300),
        final_answer=shown, final_answer_chars=len(answer or ""),
        final_answer_truncated=shown != answer, best_so_far=result.best_so_far,
        final_data=result.final_data, winner=result.winner,
        agreement=_plain(getattr(result, "agreement", None)),
        dissent=_plain(getattr(result, "dissent", None)) or [],
        tally=result.tally,
        votes=[CompactVote(voter=v.voter, voted_for=v.voted_for,
                           reason=_clip(v.reason, REASON_CHARS)) for v in result.votes],
        agents=[_agent_line(a) for a in result.agents],
        totals=CompactTotals.model_validate(
            result.totals.model_dump(include=set(CompactTotals.model_fields))),
        elapsed_seconds=result.elapsed_seconds, started_at=result.started_at,
        team=result.team, error=result.error, notes=[_clip(n, 500) for n in result.notes],
        workspace={"agent_id": ws.agent_id, "path": ws.path,
                   "changed": [f"{c.change} {c.path}" for c in ws.changed],
                   "applied": ws.applied, "skipped": ws.skipped} if ws else None,
        resource=uri, answer_resource=f"{uri}/answer", log_dir=result.log_dir,
        app_resource=APP_URI, reviews=_plain(getattr(result, "reviews", None)),
        follow_up_of=getattr(result, "follow_up_of", None),
        more=f"get_run(run_id, detail='answers'|'agents'|'events'|'all'), or the resources "
             f"{uri}, {uri}/events")
    if detail in ("answers", "all"):
        out.answers = result.answers
    if detail in ("agents", "all"):
        out.agent_details = result.agents
        if ws is not None:
            out.workspace = ws.model_dump(mode="json")
    if detail in ("events", "all"):
        out.events = events or []
    return out


def _plain(value: Any) -> Any:
    """A pydantic value (the decision's agreement, dissent) as JSON-ready data."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def summary(view: CompactRun) -> str:
    """The text content: the final answer's first lines (what a person reading the tool's
    text wants first), then a short summary; the whole answer is in the structured content
    and the answer resource, never repeated here."""
    if view.status == "running":
        return (f"Run {view.run_id} is running ({view.totals.answers} answers, "
                f"{view.totals.votes} votes so far). Follow it with get_run.")
    if not view.final_answer:
        lines = [f"No answer (status {view.status}; run {view.run_id})."]
        if view.error:
            lines.append(view.error[0].upper() + view.error[1:])
        return "\n".join(lines)
    cost = f"; ${view.totals.cost_usd:.4f}" if view.totals.cost_usd is not None else ""
    stats = (f"status {view.status}; {view.elapsed_seconds:.1f}s; "
             f"{view.totals.total_tokens:,} tokens{cost}; run {view.run_id}")
    lines = [answer_head(view.final_answer), ""]
    if view.winner:
        total = sum(view.tally.values())  # over the votes cast; who did not vote follows
        agree = view.agreement or {}
        kind = f" ({agree['kind']})" if agree.get("kind") else ""
        if agree.get("not_voted"):
            kind = kind[:-1] + f"; {agree['not_voted']} did not vote)" if kind else ""
        if agree.get("independent_share") is not None and view.winner.families:
            kind += (f"; independent share {agree['independent_share']:.0%} from "
                     f"{view.winner.families} model famil"
                     f"{'y' if view.winner.families == 1 else 'ies'}")
        how = (f"with {votes_cast(view.winner.votes, total)}{kind}" if total
               else "no votes were cast")
        lines.append(f"Winner: {view.winner.agent_id} ({short_model(view.winner.model)}), "
                     f"{how}; {stats}")
    else:
        lines.append(f"No winner; {stats}")
    if view.best_so_far:
        lines.append("The final answer is the best so far: the team did not agree on it.")
    lines.append(f"Final answer: {view.final_answer_chars:,} characters, in the structured "
                 f"result (final_answer) and at {view.answer_resource}.")
    winner = view.winner.agent_id if view.winner else None
    against = [v for v in view.votes if v.voted_for != winner]
    if against:
        lines.append("Dissent: " + "; ".join(f"{v.voter} voted {v.voted_for}"
                                              for v in against))
    if view.error:
        lines.append(f"Note: {view.error}")
    return "\n".join(lines)


#: How much of the final answer the text content opens with.
ANSWER_HEAD_LINES, ANSWER_HEAD_CHARS = 8, 600


def answer_head(answer: str) -> str:
    """The answer's first lines (at most ANSWER_HEAD_LINES and ANSWER_HEAD_CHARS), with a
    marker when there is more."""
    lines = answer.strip().splitlines()
    head = "\n".join(lines[:ANSWER_HEAD_LINES])
    if len(head) > ANSWER_HEAD_CHARS:
        head = head[:ANSWER_HEAD_CHARS].rstrip()
    more = len(answer.strip()) - len(head)
    return head + (f"\n[… {more:,} more characters: the whole answer is final_answer]"
                   if more > 0 else "")


def compact_result(view: CompactRun, head: list[str], tail: list[str]) -> CallToolResult:
    """The `CallToolResult` of a compact view: `head` and `tail` lines around its summary.
    A view still over `COMPACT_BYTES` (a huge final_data, say) is shortened like any other
    result."""
    text = "\n".join([*head, summary(view), *tail])
    data = view.model_dump(mode="json", exclude_none=True)
    budget = COMPACT_BYTES if view.answers is None and view.events is None \
        and view.agent_details is None else MAX_RESULT_BYTES
    out = fit_result(text, data, view.resource, f"{view.log_dir}/result.json", budget)
    if view.final_answer and len(out.content) == 1:
        out.content.append(ResourceLink(type="resource_link", uri=view.answer_resource,
                                        name="final answer", mime_type="text/markdown"))
    return out


def _size(text: str, structured: Any) -> int:
    return len(text.encode()) + len(json.dumps(structured, ensure_ascii=False).encode())


def _clip_all(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]} […{len(value) - limit:,} more characters: see the resource]"
    if isinstance(value, dict):
        return {k: _clip_all(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip_all(v, limit) for v in value]
    return value


def fit_result(text: str, structured: dict[str, Any], uri: str, where: str,
               budget: int = MAX_RESULT_BYTES) -> CallToolResult:
    """A `CallToolResult` of `text` and `structured`, shortened to fit `budget` when needed,
    with a link to `uri` (the full result) and `where` (its file) when it was shortened."""
    if _size(text, structured) <= budget:
        return CallToolResult(content=[TextContent(type="text", text=text)],
                              structured_content=structured)
    limit = budget
    clipped_text, clipped = text, structured
    while limit > _MIN_CLIP and _size(clipped_text, clipped) > budget // 2:
        limit //= 2
        clipped_text, clipped = _clip_all(text, limit), _clip_all(structured, limit)
    # The file only when it is there: a run recorded in Redis (--store) or on another
    # replica has none on this machine.
    file = f" and the file {where}" if where and os.path.isfile(where) else ""
    note = (f"\n\n[This result was shortened to fit what MCP clients accept; the full result "
            f"is the resource {uri}{file}.]")
    return CallToolResult(
        content=[TextContent(type="text", text=clipped_text + note),
                 ResourceLink(type="resource_link", uri=uri, name="full result",
                              mime_type="application/json")],
        structured_content=clipped)
