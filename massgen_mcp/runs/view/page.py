"""The HTML of the run pages: one run (live or finished), the list of runs, errors.

Everything from a run record goes through `esc()` or the safe Markdown renderer; the only
script is the vendored `live.js`, included while a run is live.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from massgen_mcp.config.providers import short_model
from massgen_mcp.coordination.result import votes_cast
from massgen_mcp.runs.view.assets import asset, esc
from massgen_mcp.runs.view.diff import diff_html
from massgen_mcp.runs.view.graph import checkpoint_steps, plan_graph
from massgen_mcp.runs.view.markdown import render_markdown
from massgen_mcp.runs.view.model import BUSY, AgentView, RunView

_KEY_EVENTS = {"answer", "vote", "restart", "consensus", "agent_failed", "run_finished",
               "timeout", "budget_exceeded", "presentation_started", "presentation_done"}
_QUIET_EVENTS = {"turn_started", "reminder", "tool_call"}


@dataclass
class RunRow:
    """One line of the runs list."""

    run_id: str
    status: str
    mode: str
    task: str
    winner: str
    votes: str
    elapsed: float
    cost: float | None
    started_at: str


def document(title: str, body: str, *, nonce: str | None, script: bool = False,
             standalone: bool = False) -> str:
    """A whole page. Served pages carry a nonce for their one style and script; a standalone
    report has no script at all and a CSP meta tag that forbids any."""
    n = f' nonce="{esc(nonce)}"' if nonce else ""
    csp = ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
           'style-src \'unsafe-inline\'; img-src data:">' if standalone else "")
    js = f"<script{n}>{asset('live.js')}</script>" if script and not standalone else ""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">{csp}'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<meta name="referrer" content="no-referrer">'
            f"<title>{esc(title)}</title><style{n}>{asset('style.css')}</style></head>"
            f'<body><div class="wrap">{body}</div>{js}</body></html>')


def run_page(view: RunView, *, base: str = "/runs", nonce: str | None = None,
             standalone: bool = False) -> str:
    crumbs = "" if standalone else (f'<nav class="crumbs"><a href="{esc(base)}">Runs</a> / '
                                    f'<span class="mono">{esc(view.run_id)}</span></nav>')
    crumbs += _chain(view, base, standalone)
    url = f"{base}/{view.run_id}"
    main = (f'<main id="run" data-run-url="{esc(url)}" data-seq="{view.last_seq}" '
            f'data-state="{"live" if view.live else "done"}">'
            f"{run_main(view, snapshot=standalone)}</main>")
    footer = (f"<footer>massgen-mcp run report \u00b7 {esc(view.run_id)} \u00b7 written "
              f"{esc(time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()))}</footer>"
              if standalone else "")
    title = f"{_short(view.heading, 70)} \u2014 massgen {_noun(view.mode)}"
    return document(title, crumbs + main + footer, nonce=nonce, script=view.live,
                    standalone=standalone)


def _chain(view: RunView, base: str, standalone: bool) -> str:
    """Links to the run this one follows up and to the runs that follow it up (a report,
    one file, names them with the command that writes theirs)."""
    def link(run_id: str) -> str:
        if standalone:
            return (f'<span class="mono">{esc(run_id)}</span> (massgen-mcp report '
                    f"{esc(run_id)})")
        return f'<a class="mono" href="{esc(base)}/{esc(run_id)}">{esc(run_id)}</a>'

    parts = []
    if view.follow_up_of:
        parts.append(f'<div class="muted" id="follow-up-of">Follows up run '
                     f"{link(view.follow_up_of)}</div>")
    if view.followed_by:
        parts.append('<div class="muted" id="followed-by">Followed up by '
                     + ", ".join(link(r) for r in view.followed_by) + "</div>")
    return "".join(parts)


def run_main(view: RunView, *, snapshot: bool = False) -> str:
    """The part of the run page that live updates replace. `snapshot`: a report of a run
    that was still running when it was written."""
    parts = [_header(view, snapshot)]
    if view.error:
        parts.append(f'<div class="panel error" role="alert">{esc(view.error)}</div>')
    parts.append(_outcome(view))
    if view.final_answer and view.mode == "plan" and view.final_data:
        parts.append('<h2>Winning plan</h2><section class="panel" id="plan">'
                     f'{plan_graph(view.final_data)}</section>')
    if view.final_answer and view.mode == "checkpoint" and view.final_data:
        parts.append('<h2>Approved steps</h2><section class="panel" id="steps">'
                     f'{checkpoint_steps(view.final_data)}</section>')
    if view.final_answer:
        heading = ("Final answer" if view.status in ("completed", "degraded")
                   else "Best answer so far")
        body = render_markdown(view.final_answer)
        if view.mode in ("plan", "checkpoint") and view.final_data:  # shown structured above
            body = (f'<details id="final-text"><summary>The {view.mode} as text</summary>'
                    f"{body}</details>")
        parts.append(f'<h2>{heading}</h2><section class="panel answer md" id="final-answer">'
                     f"{body}</section>")
    parts.append('<h2>Agents</h2><section class="agents" id="agents">'
                 + "".join(_agent(view, a) for a in view.agents) + "</section>")
    parts.append(_timeline(view))
    return "".join(parts)


def _header(view: RunView, snapshot: bool) -> str:
    status = ('<span class="pill running" id="status">still running when this report was '
              "written</span>" if view.live and snapshot else
              '<span class="chip live" data-live><span class="dot"></span><b>live</b></span>'
              if view.live else f'<span class="pill {esc(view.status)}" id="status">'
              f"{esc(view.status.replace('_', ' '))}</span>")
    tokens = view.totals.get("total_tokens") or 0
    calls = view.totals.get("provider_calls") or 0
    chips = [status, _chip("mode", view.mode), _chip("team", view.team) if view.team else "",
             _chip("elapsed", _seconds(view.elapsed)),
             _chip("tokens", f"{tokens:,}"), _chip("calls", calls),
             _chip("cost", _money(view.cost)) if view.cost is not None else "",
             _chip("started", view.started_at.replace("T", " ")) if view.started_at else ""]
    asked = (f'<details id="prompt"><summary>What the team was asked</summary>'
             f'<pre class="prompt">{esc(view.task)}</pre></details>'
             if view.title and view.title != view.task else "")
    return (f'<h1 id="task">{esc(_short(view.heading, 600))}</h1>'
            f'<div class="chips">{"".join(chips)}</div>{asked}')


def _noun(mode: str) -> str:
    return {"plan": "plan", "checkpoint": "checkpoint"}.get(mode, "run")


def _chip(name: str, value: object) -> str:
    return f'<span class="chip">{esc(name)} <b>{esc(value)}</b></span>'


def _outcome(view: RunView) -> str:
    total = sum(view.tally.values())  # over the votes cast (agreement says who did not vote)
    if view.winner:
        w = view.winner
        who = (f'<div class="muted">Winner</div><div class="winner-name" id="winner">'
               f'{esc(w.get("agent_id"))}</div><div class="winner-sub">'
               f'{esc(short_model(str(w.get("model") or "")))}'
               f' \u00b7 {esc(w.get("label"))} \u00b7 '
               f'{votes_cast(int(w.get("votes", 0)), total) if total else "no votes cast"}</div>'
               + _agreement(view))
    elif view.live:
        busy = [a.agent_id for a in view.agents if a.working]
        who = ('<div class="muted">Working now</div><div class="winner-name busy" id="working">'
               + (esc(", ".join(busy)) if busy else "\u2014") + "</div>")
    elif view.status == "no_consensus":
        who = ('<div class="muted">Winner</div><div class="winner-name" id="winner">'
               'no consensus</div>' + _agreement(view))
    else:
        who = '<div class="muted">Winner</div><div class="winner-name">none</div>'
    bars = []
    for agent_id, n in view.tally.items():
        win = view.winner is not None and view.winner.get("agent_id") == agent_id
        width = round(10 * n / total) if total else 0
        bars.append(f'<div class="bar{" win" if win else ""}"><span class="name">'
                    f'{esc(agent_id)}</span><span class="track"><span class="fill w{width}">'
                    f'</span></span><span class="n">{n}</span></div>')
    tally = ("".join(bars) if bars else '<div class="muted">No answers yet.</div>')
    return (f'<h2>Outcome</h2><section class="panel outcome" id="outcome"><div>{who}</div>'
            f'<div><div class="muted">Votes</div><div class="tally" id="tally">{tally}</div>'
            "</div></section>")


def _agreement(view: RunView) -> str:
    """How strongly the team agreed, and who dissented (with their reasons)."""
    if not view.agreement:
        return ""
    kind, share = view.agreement.get("kind", ""), float(view.agreement.get("share") or 0)
    independent = view.agreement.get("independent_share")
    families = (view.winner or {}).get("families")
    # families.py: how independent the majority was (each model family's votes once)
    extra = (f' \u00b7 <span id="independence">independent share {float(independent):.0%}'
             + (f" ({families} model famil{'y' if families == 1 else 'ies'})"
                if families else "") + "</span>") if independent is not None else ""
    out = [f'<div class="winner-sub" id="agreement">{esc(kind)} \u00b7 {share:.0%} of the '
           f"votes{extra}</div>"]
    for d in view.dissent:
        reasons = "; ".join(f'{v.get("voter")}: {v.get("reason")}' for v in d.get("voters", []))
        out.append(f'<div class="muted dissent">dissent: {esc(d.get("agent_id"))} '
                   f'({d.get("votes", 0)}) \u2014 {esc(_short(reasons, 300))}</div>')
    for m in view.agreement.get("missing_votes") or []:  # live agents that cast no vote
        out.append(f'<div class="muted missing-vote">no vote: {esc(m.get("agent_id"))} '
                   f'\u2014 {esc(_short(str(m.get("reason") or ""), 200))}</div>')
    return "".join(out)


def _agent(view: RunView, a: AgentView) -> str:
    winner = bool(view.winner and view.winner.get("agent_id") == a.agent_id)
    status = "working" if a.working else a.status
    u = a.usage
    usage = (f'{u.get("input_tokens", 0):,} in \u00b7 {u.get("output_tokens", 0):,} out \u00b7 '
             f'{u.get("provider_calls", 0)} calls' if u else "no usage yet")
    if u.get("cancelled_calls"):
        usage += f' ({u["cancelled_calls"]} cancelled)'
    if a.cost is not None:
        usage += f" \u00b7 {_money(a.cost)}"
    now = (f'<div class="now busy"><span class="dot"></span>{esc(BUSY[a.activity])}</div>'
           if a.working else "")
    head = (f'<header><div class="who"><span class="id">{esc(a.agent_id)}</span>'
            + ('<span class="badge-win">winner</span>' if winner else
               f'<span class="pill {esc(status)}">{esc(status)}</span>')
            + f'</div><div class="model">{esc(a.provider)}/{esc(a.model)}'
            + (f' \u00b7 seen as {esc(a.anonymous_id)}' if a.anonymous_id else "")
            + f'</div><div class="usage">{usage}</div>{now}</header>')
    items: list[tuple[float, int, str]] = []
    for n, version in enumerate(a.versions):
        items.append((version.t, 0, _version(a, n)))
    for r in a.restarts:
        items.append((r.t, 1, f'<li class="restart"><span class="when">{_seconds(r.t)}</span>'
                              f'<span class="what">Restarted</span> \u2014 {esc(r.cause)} '
                              f'submitted <span class="label">{esc(r.cause_label)}</span>, '
                              "so it looked again</li>"))
    for v in a.votes:
        items.append((v.t, 2, f'<li class="vote{"" if v.current else " old"}"><span '
                              f'class="when">{_seconds(v.t)}</span><span class="what">Voted for '
                              f'{esc(v.voted_for)}</span> <span class="label">{esc(v.label)}'
                              f'</span><p class="reason">{esc(v.reason)}</p></li>'))
    if a.error:
        items.append((float("inf"), 3, f'<li class="failed"><span class="what">Dropped'
                                       f"</span> \u2014 {esc(a.error)}</li>"))
    items.sort(key=lambda x: (x[0], x[1]))
    story = "".join(i[2] for i in items) or '<li class="muted">Nothing yet.</li>'
    notes = ("".join(f"<div>{esc(n)}</div>" for n in a.notes))
    return (f'<article class="agent{" winner" if winner else ""}" data-agent="{esc(a.agent_id)}"'
            f'>{head}<ol class="story">{story}</ol>'
            + (f'<div class="notes">{notes}</div>' if notes else "") + "</article>")


def _version(a: AgentView, n: int) -> str:
    v = a.versions[n]
    slug = f"{a.agent_id}-{n + 1}".replace(" ", "_")
    body = (render_markdown(v.text) if v.text is not None
            else '<p class="muted">(the text of this version was not recorded)</p>')
    changed = ""
    prev = a.versions[n - 1].text if n else None
    if prev is not None and v.text is not None:
        d = diff_html(prev, v.text)
        changed = (f'<details id="diff-{esc(slug)}"><summary>What changed: {esc(d.summary)}'
                   f'</summary><div class="diff">{d.html}</div></details>')
    open_ = " open" if n == len(a.versions) - 1 else ""
    return (f'<li class="version"><span class="when">{_seconds(v.t)}</span><span class="what">'
            f'Answer {n + 1}</span> <span class="label">{esc(v.label)}</span>{changed}'
            f'<details id="answer-{esc(slug)}"{open_}><summary>Text</summary>'
            f'<div class="body md">{body}</div></details></li>')


def _timeline(view: RunView) -> str:
    rows = []
    for m in view.timeline:
        cls = "key" if m.kind in _KEY_EVENTS else "quiet" if m.kind in _QUIET_EVENTS else ""
        clock = time.strftime("%H:%M:%S", time.gmtime(m.ts)) if m.ts else ""
        rows.append(f'<tr class="{cls}"><td class="tnum">{clock}</td><td class="tnum">'
                    f'{_seconds(m.t)}</td><td class="kind">{esc(m.kind)}</td>'
                    f"<td>{esc(m.text)}</td></tr>")
    body = "".join(rows) or '<tr><td class="muted">No events yet.</td></tr>'
    return (f'<h2>Timeline <span class="muted">(UTC)</span></h2><section class="panel">'
            f'<table class="timeline" id="timeline">{body}</table></section>')


def runs_page(rows: list[RunRow], *, base: str = "/runs", nonce: str | None = None) -> str:
    lines = []
    for r in rows:
        status = ('<span class="chip live"><span class="dot"></span><b>live</b></span>'
                  if r.status == "running" else
                  f'<span class="pill {esc(r.status)}">{esc(r.status.replace("_", " "))}</span>')
        winner = f"{esc(r.winner)} <span class='muted'>{esc(r.votes)}</span>" if r.winner else ""
        lines.append(
            f'<tr><td class="task-cell"><a href="{esc(base)}/{esc(r.run_id)}">'
            f'{esc(_short(r.task, 140))}</a><div class="rid">{esc(r.run_id)} \u00b7 '
            f'{esc(r.mode)}</div></td><td>{status}</td><td>{winner}</td>'
            f'<td class="num">{_seconds(r.elapsed)}</td>'
            f'<td class="num">{_money(r.cost)}</td>'
            f'<td class="num">{esc(r.started_at.replace("T", " "))}</td></tr>')
    table = ('<table class="runs" id="runs"><thead><tr><th>Task</th><th>Status</th>'
             '<th>Winner</th><th class="num">Elapsed</th><th class="num">Cost</th>'
             '<th class="num">Started</th></tr></thead><tbody>' + "".join(lines)
             + "</tbody></table>") if lines else (
        '<p class="muted">No runs yet. Start one with <code>massgen-mcp run "..."</code> or a '
        "tool call; it appears here.</p>")
    return document("massgen runs", f'<h1>Runs</h1><section class="panel">{table}</section>',
                    nonce=nonce)


def _seconds(s: float) -> str:
    if s >= 3600:
        return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"
    if s >= 60:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    return f"{s:.1f}s"


def _money(v: float | None) -> str:
    return "\u2014" if v is None else f"${v:.4f}" if v < 1 else f"${v:.2f}"


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "\u2026"
