"""The structured outcomes: a plan's task graph (chunks, then dependency levels) and a
checkpoint's approved steps. Both read `final_data` tolerantly: a field that is missing or
of the wrong type is shown as missing, never raised on."""

from __future__ import annotations

import json
from html import escape
from typing import Any


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def plan_levels(tasks: list[dict[str, Any]]) -> dict[str, int]:
    """Each task's level: 0 without dependencies, else one more than its deepest dependency.
    Unknown dependencies are ignored and cycles are cut (plans are validated, records may
    not be)."""
    by_id = {str(t.get("id")): t for t in tasks}
    level: dict[str, int] = {}

    def depth(tid: str, seen: frozenset[str]) -> int:
        if tid in level:
            return level[tid]
        deps = [str(d) for d in by_id[tid].get("depends_on") or [] if str(d) in by_id
                and str(d) not in seen]
        level[tid] = 1 + max((depth(d, seen | {d}) for d in deps), default=-1)
        return level[tid]

    for tid in by_id:
        depth(tid, frozenset({tid}))
    return level


def _inner(data: dict[str, Any]) -> dict[str, Any]:
    inner = data.get("plan")
    return inner if isinstance(inner, dict) else data


def plan_graph(data: dict[str, Any]) -> str:
    plan = _inner(data)
    tasks = [t for t in plan.get("tasks") or [] if isinstance(t, dict) and t.get("id")]
    if not tasks:
        return '<p class="muted">The plan has no tasks.</p>'
    levels = plan_levels(tasks)
    chunks: dict[str, list[dict[str, Any]]] = {}
    for t in tasks:
        chunks.setdefault(str(t.get("chunk") or "tasks"), []).append(t)
    out = []
    if plan.get("summary"):
        out.append(f'<p>{_e(plan["summary"])}</p>')
    out.append(f'<p class="muted">{len(tasks)} tasks in {len(chunks)} chunks; a task starts '
               "once the tasks it depends on are done (one row per dependency level).</p>")
    out.append('<div class="levels">')
    for name, members in chunks.items():
        rows: dict[int, list[str]] = {}
        for t in members:
            rows.setdefault(levels[str(t["id"])], []).append(_task(t))
        body = "".join(f'<div class="level"><div class="level-n">level {n + 1}</div>'
                       f'{"".join(cards)}</div>' for n, cards in sorted(rows.items()))
        out.append(f'<div class="chunk"><h3>{_e(name)}</h3>{body}</div>')
    out.append("</div>")
    return "".join(out)


def _task(t: dict[str, Any]) -> str:
    prio = str(t.get("priority") or "")
    after = ", ".join(str(d) for d in t.get("depends_on") or [])
    criteria = t.get("success_criteria") or []
    done = ("".join(f"<li>{_e(c)}</li>" for c in criteria) if isinstance(criteria, list) else "")
    return (f'<div class="task" data-task="{_e(t["id"])}"><span class="tid">{_e(t["id"])}</span> '
            f'<span class="prio-{_e(prio)}">{_e(prio)}</span> <span class="muted">'
            f'{_e(t.get("task_type") or "")}</span><div>{_e(t.get("description") or "")}</div>'
            + (f'<div class="after">after {_e(after)}</div>' if after else "")
            + (f'<details><summary>done when</summary><ul>{done}</ul>'
               f'<div class="after">check: {_e(t.get("verification") or "")}</div></details>'
               if done else "") + "</div>")


def checkpoint_steps(data: dict[str, Any]) -> str:
    plan = _inner(data)
    steps = [s for s in plan.get("steps") or [] if isinstance(s, dict)]
    if not steps:
        return '<p class="muted">The checkpoint plan has no steps.</p>'
    items = []
    for s in steps:
        action = s.get("approved_action") if isinstance(s.get("approved_action"), dict) else None
        call = ""
        if action:
            call = (f'<code class="call">[{_e(action.get("goal_id", ""))}] '
                    f'{_e(_call(action.get("tool"), action.get("args")))}</code>')
            rollback = action.get("rollback")
            if isinstance(rollback, dict):
                call += (f'<code class="call">rollback: '
                         f'{_e(_call(rollback.get("tool"), rollback.get("args")))}</code>')
        touches = ", ".join(str(x) for x in s.get("touches") or [])
        items.append(f'<li data-step="{_e(s.get("step", ""))}"><span class="pill">'
                     f'{_e(s.get("kind", ""))}</span> {_e(s.get("description", ""))}'
                     + (f' <span class="muted">touches {_e(touches)}</span>' if touches else "")
                     + f"{call}</li>")
    return f'<ol class="steps">{"".join(items)}</ol>'


def _call(tool: Any, args: Any) -> str:
    if isinstance(args, dict) and set(args) == {"command"}:
        return f"{tool}: {args['command']}"
    return f"{tool} {json.dumps(args, ensure_ascii=False)}"
