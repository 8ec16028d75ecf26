"""What the run page shows, read through the run records (`RunRecords`: the files, or Redis):
its meta, its status or result, its events.

The events give the story (every answer version, restarts, every vote with its reason, who
is working now); status.json or result.json give the numbers (usage, tally, winner, final
answer). A run live in another process is read the same way: its record is kept current.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from massgen_mcp.coordination.result import RunResult
from massgen_mcp.errors import RunNotFoundError
from massgen_mcp.runs.progress import describe_event
from massgen_mcp.runs.store import RunRecords, RunStore, check_run_id

#: What an agent is doing, from its latest event; the first ones count as "working now".
BUSY = {"thinking": "thinking", "tool": "using a tool", "restarting": "looking again",
        "presenting": "presenting the final answer"}


@dataclass
class Version:
    label: str
    t: float
    text: str | None  # None: recorded before answer texts were kept in the events


@dataclass
class Vote:
    voter: str
    voted_for: str
    label: str
    reason: str
    t: float
    current: bool = True  # False once a newer answer arrived (votes are then cast again)


@dataclass
class Restart:
    t: float
    cause: str
    cause_label: str


@dataclass
class AgentView:
    agent_id: str
    anonymous_id: str = ""
    provider: str = ""
    model: str = ""
    status: str = "waiting"
    activity: str = ""  # a BUSY key while working
    usage: dict[str, Any] = field(default_factory=dict)
    cost: float | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    versions: list[Version] = field(default_factory=list)
    votes: list[Vote] = field(default_factory=list)
    restarts: list[Restart] = field(default_factory=list)

    @property
    def working(self) -> bool:
        return self.activity in BUSY


@dataclass
class Moment:
    """One line of the timeline."""

    seq: int
    t: float
    ts: float
    kind: str
    agent: str
    text: str


@dataclass
class RunView:
    run_id: str
    status: str
    mode: str
    task: str  # what the team was asked (for plans and checkpoints, a prompt built from title)
    team: str
    started_at: str
    elapsed: float
    agents: list[AgentView]
    tally: dict[str, int]
    winner: dict[str, Any] | None
    agreement: dict[str, Any] | None
    dissent: list[dict[str, Any]]
    final_answer: str | None
    final_data: dict[str, Any] | None
    totals: dict[str, Any]
    cost: float | None
    error: str | None
    timeline: list[Moment]
    last_seq: int
    title: str = ""  # the user's own words: the task, a plan's goal, a checkpoint's objective
    follow_up_of: str | None = None  # the run this one follows up (modes/consensus/follow_up)
    followed_by: list[str] = field(default_factory=list)  # runs that follow this one up

    @property
    def heading(self) -> str:
        return self.title or self.task

    @property
    def live(self) -> bool:
        return self.status == "running"

    def agent(self, agent_id: str) -> AgentView | None:
        return next((a for a in self.agents if a.agent_id == agent_id), None)


def load_run_view(records: RunRecords | Path, run_id: str,
                  snapshot: RunResult | None = None) -> RunView:
    """The view of one run, read through the run records (a state directory: its files).
    `snapshot` is the live state when the run runs in this process."""
    store = RunStore(records) if isinstance(records, Path) else records
    if not store.exists(check_run_id(run_id)):
        raise RunNotFoundError(f"no run '{run_id}' in {store.location}; /runs lists the "
                               "recent ones")
    try:
        meta = store.meta(run_id)
    except RunNotFoundError:
        meta = {}
    result = snapshot or store.load(run_id)
    data = result.model_dump(mode="json")
    try:
        events = store.events(run_id)
    except RunNotFoundError:
        events = []
    agents = _agents(meta, events, data)
    timeline = _replay(events, agents)
    live = result.status == "running"
    for a in agents.values():
        if not live:
            a.activity = ""
        elif a.status == "failed":
            a.activity = "failed"
    _fill_missing_texts(agents, data)
    elapsed = float(data.get("elapsed_seconds") or 0.0)
    if live and timeline:
        elapsed = max(elapsed, time.time() - timeline[0].ts)
    return RunView(
        run_id=run_id, status=result.status, mode=str(meta.get("mode") or "consensus"),
        task=str(meta.get("task") or data.get("task") or ""), team=str(data.get("team") or
                                                                        meta.get("team") or ""),
        started_at=str(data.get("started_at") or ""), elapsed=elapsed,
        agents=list(agents.values()), tally=dict(data.get("tally") or {}),
        winner=data.get("winner"), agreement=data.get("agreement"),
        dissent=list(data.get("dissent") or []), final_answer=data.get("final_answer"),
        final_data=data.get("final_data"), totals=dict(data.get("totals") or {}),
        cost=find_cost(data.get("totals")) or find_cost(data), error=data.get("error"),
        timeline=timeline, last_seq=max((m.seq for m in timeline), default=0),
        title=str(meta.get("title") or ""), follow_up_of=data.get("follow_up_of"),
        followed_by=[] if live else followers(store, run_id, meta))


#: How many of the newest runs are searched for follow-ups of a run.
FOLLOWER_SCAN = 200


def followers(store: RunRecords, run_id: str, meta: dict[str, Any]) -> list[str]:
    """The recent runs that follow `run_id` up, by the same owner (a run's page never names
    another user's run)."""
    out = []
    for other in store.ids(FOLLOWER_SCAN):
        try:
            theirs = store.meta(other) if other != run_id else {}
        except (RunNotFoundError, ValueError, OSError):
            continue
        if theirs.get("follow_up_of") == run_id and theirs.get("owner") == meta.get("owner"):
            out.append(other)
    return out


def find_cost(obj: Any) -> float | None:
    """A money figure if the record has one (`cost_usd`, `estimated_cost_usd`, ...)."""
    if not isinstance(obj, dict):
        return None
    for key, value in obj.items():
        if "cost" in key and isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return find_cost(obj.get("usage")) if isinstance(obj.get("usage"), dict) else None


def _agents(meta: dict[str, Any], events: list[dict[str, Any]],
            data: dict[str, Any]) -> dict[str, AgentView]:
    """Every agent in config order, with what the result knows about it."""
    agents: dict[str, AgentView] = {}
    for a in meta.get("agents") or []:
        if isinstance(a, dict) and a.get("id"):
            agents[str(a["id"])] = AgentView(str(a["id"]), provider=str(a.get("provider", "")),
                                             model=str(a.get("model", "")))
    started = next((e for e in events if e.get("kind") == "run_started"), {})
    for a in started.get("agents") or []:
        view = agents.setdefault(str(a.get("agent")), AgentView(str(a.get("agent"))))
        view.anonymous_id = str(a.get("anonymous_id") or "")
        view.model = str(a.get("model") or view.model)
        view.provider = str(a.get("provider") or view.provider)
    for a in data.get("agents") or []:
        view = agents.setdefault(a["agent_id"], AgentView(a["agent_id"]))
        view.anonymous_id = a.get("anonymous_id") or view.anonymous_id
        view.provider, view.model = a.get("provider") or view.provider, a.get("model") or view.model
        view.status, view.error = a.get("status") or view.status, a.get("error")
        view.usage, view.notes = dict(a.get("usage") or {}), list(a.get("notes") or [])
        view.cost = find_cost(a)
    return agents


def _replay(events: list[dict[str, Any]], agents: dict[str, AgentView]) -> list[Moment]:
    """Walk the events in order: answer versions, votes, restarts, activity, timeline."""
    timeline: list[Moment] = []
    t0 = next((float(e["ts"]) for e in events if isinstance(e.get("ts"), int | float)), 0.0)
    latest_label: dict[str, str] = {}

    def agent(aid: Any) -> AgentView:
        return agents.setdefault(str(aid), AgentView(str(aid)))

    for e in events:
        kind = str(e.get("kind", ""))
        ts = float(e["ts"]) if isinstance(e.get("ts"), int | float) else t0
        t = float(e["t"]) if isinstance(e.get("t"), int | float) else ts - t0
        who = str(e.get("agent") or "")
        text = _describe(e)
        if kind == "turn_started":
            agent(who).activity = "thinking"
        elif kind == "tool_call":
            agent(who).activity = "tool"
        elif kind == "answer":
            for a in agents.values():
                for v in a.votes:
                    v.current = False
            label = str(e.get("label") or "")
            latest_label[who] = label
            body = e.get("text")
            agent(who).versions.append(Version(label, t, body if isinstance(body, str) else None))
            agent(who).activity = "answered"
        elif kind == "restart":
            cause = str(e.get("cause") or "")
            for aid in e.get("agents") or []:
                agent(aid).restarts.append(Restart(t, cause, latest_label.get(cause, "")))
                agent(aid).activity = "restarting"
        elif kind == "vote":
            agent(who).votes.append(Vote(who, str(e.get("voted_for") or ""),
                                         str(e.get("label") or ""), str(e.get("reason") or ""),
                                         t))
            agent(who).activity = "voted"
        elif kind == "vote_ignored":
            agent(who).activity = "restarting"
        elif kind == "agent_failed":
            agent(who).activity = "failed"
        elif kind == "presentation_started":
            agent(who).activity = "presenting"
        elif kind == "presentation_done":
            agent(who).activity = "presented"
        timeline.append(Moment(int(e.get("seq") or 0), t, ts, kind, who, text))
    return timeline


# The timeline's own wording for the events that the progress line leaves out or words for
# a log; the rest read as they do in progress notifications.
_TIMELINE_TEXT: dict[str, Callable[[dict[str, Any]], str]] = {
    "turn_started": lambda e: (f"{e.get('agent')} started a turn (sees "
                               f"{', '.join(e.get('sees') or []) or 'no answers yet'})"),
    "reminder": lambda e: f"{e.get('agent')} was reminded to answer or vote",
    "vote": lambda e: f"{e.get('agent')} voted for {e.get('voted_for')} ({e.get('label')})",
    "answer": lambda e: f"{e.get('agent')} submitted {e.get('label')}",
}


def _describe(e: dict[str, Any]) -> str:
    text = _TIMELINE_TEXT.get(str(e.get("kind")))
    if text is not None:
        return text(e)
    return describe_event({k: v for k, v in e.items() if k not in ("text", "data")})


def _fill_missing_texts(agents: dict[str, AgentView], data: dict[str, Any]) -> None:
    """Older records keep only each agent's latest answer: put it on its last version."""
    for answer in data.get("answers") or []:
        view = agents.get(answer.get("agent_id"))
        if view is None:
            continue
        if not view.versions:
            view.versions.append(Version(answer.get("label") or "", 0.0, None))
        last = view.versions[-1]
        if last.text is None:
            last.text = answer.get("text")
