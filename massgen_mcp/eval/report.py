"""The eval report: one self-contained HTML file in the run viewer's style, no scripts,
with an accuracy-versus-cost chart and the selection gap (inline SVG)."""

from __future__ import annotations

from typing import Any

from massgen_mcp.runs.view.page import document, esc

_W, _H, _PAD = 560, 300, 48
_COLOURS = {"team": "#2563eb", "oracle": "#16a34a", "best-solo": "#d97706",
            "self-consistency": "#9333ea"}


def render_report(figures: dict[str, Any]) -> str:
    arms = figures["arms"]
    title = f"eval {figures['suite']}: {figures['items_scored']} items"
    body = [f"<h1>{esc(title)}</h1>",
            f"<p>Team: {esc(', '.join(figures['team']))}.</p>"]
    if figures.get("stopped"):
        body.append(f"<p><strong>Stopped early:</strong> {esc(figures['stopped'])}</p>")
    body.append(_table(arms))
    body.append("<h2>Accuracy against cost</h2>" + _scatter(arms))
    if figures.get("selection_gap") is not None:
        body.append("<h2>Selection gap</h2>" + _gap(arms, figures["selection_gap"]))
    body.append("<h2>Items</h2>" + _items(figures["items"]))
    body.append("<p><small>best-solo is the best member on these very items, chosen after "
                "the fact. Intervals are 95% Wilson intervals.</small></p>")
    return document(title, "".join(body), nonce=None, standalone=True)


def _table(arms: dict[str, Any]) -> str:
    rows = ["<table><tr><th>arm</th><th>accuracy</th><th>95% CI</th><th>cost (USD)</th>"
            "<th>calls</th><th>tokens</th><th>p50 s</th><th>p95 s</th></tr>"]
    for name, a in arms.items():
        acc = "-" if a["accuracy"] is None else f"{a['accuracy']:.1%}"
        cost = "unknown" if a["cost_usd"] is None else f"{a['cost_usd']:.4f}"
        extra = f" ({a['member']})" if "member" in a else ""
        extra += f", k={a['k']}" if "k" in a else ""
        rows.append(f"<tr><td>{esc(name + extra)}</td><td>{acc}</td>"
                    f"<td>{a['ci95'][0]:.0%}-{a['ci95'][1]:.0%}</td><td>{cost}</td>"
                    f"<td>{a['calls']}</td><td>{a['tokens']}</td>"
                    f"<td>{esc(a['latency_p50_s'])}</td><td>{esc(a['latency_p95_s'])}</td></tr>")
    return "".join(rows) + "</table>"


def _scatter(arms: dict[str, Any]) -> str:
    points = [(n, a) for n, a in arms.items() if a["accuracy"] is not None]
    costs = [a["cost_usd"] or 0.0 for _, a in points]
    top = max(costs, default=0.0) or 1.0
    parts = [f'<svg viewBox="0 0 {_W} {_H}" width="{_W}" height="{_H}" role="img" '
             'aria-label="accuracy against cost">',
             f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - 10}" y2="{_H - _PAD}" '
             'stroke="#888"/>',
             f'<line x1="{_PAD}" y1="10" x2="{_PAD}" y2="{_H - _PAD}" stroke="#888"/>',
             f'<text x="{_W / 2}" y="{_H - 10}" text-anchor="middle" font-size="12">'
             f"cost per eval (USD, max {top:.4f})</text>",
             f'<text x="12" y="{_H / 2}" font-size="12" transform="rotate(-90 12 {_H / 2})" '
             'text-anchor="middle">accuracy</text>']

    def x(cost: float) -> float:
        return _PAD + (_W - _PAD - 20) * cost / top

    def y(acc: float) -> float:
        return _H - _PAD - (_H - _PAD - 20) * acc

    for name, a in points:
        colour = _COLOURS.get(name, "#64748b")
        cx, cy = x(a["cost_usd"] or 0.0), y(a["accuracy"])
        lo, hi = y(a["ci95"][0]), y(a["ci95"][1])
        parts.append(f'<line x1="{cx:.1f}" y1="{lo:.1f}" x2="{cx:.1f}" y2="{hi:.1f}" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="{colour}"/>')
        parts.append(f'<text x="{cx + 8:.1f}" y="{cy + 4:.1f}" font-size="11">{esc(name)} '
                     f"{a['accuracy']:.0%}</text>")
    return "".join(parts) + "</svg>"


def _gap(arms: dict[str, Any], gap: float) -> str:
    names = [n for n in ("best-solo", "self-consistency", "team", "oracle") if n in arms]
    bar_w = (_W - 2 * _PAD) / max(1, len(names))
    parts = [f'<svg viewBox="0 0 {_W} 220" width="{_W}" height="220" role="img" '
             'aria-label="selection gap">']
    for i, name in enumerate(names):
        acc = arms[name]["accuracy"] or 0.0
        h = 160 * acc
        x0 = _PAD + i * bar_w + 8
        parts.append(f'<rect x="{x0:.1f}" y="{180 - h:.1f}" width="{bar_w - 16:.1f}" '
                     f'height="{h:.1f}" fill="{_COLOURS.get(name, "#64748b")}"/>')
        parts.append(f'<text x="{x0 + (bar_w - 16) / 2:.1f}" y="198" font-size="11" '
                     f'text-anchor="middle">{esc(name)} {acc:.0%}</text>')
    parts.append(f'<text x="{_PAD}" y="14" font-size="12">oracle - team = {gap:+.1%}: '
                 "how often the team had a right answer and did not pick it</text>")
    return "".join(parts) + "</svg>"


def _items(items: list[dict[str, Any]]) -> str:
    if not items:
        return "<p>No item was scored.</p>"
    arm_names = sorted({a for it in items for a in it["arms"]})
    rows = ["<table><tr><th>item</th>" + "".join(f"<th>{esc(a)}</th>" for a in arm_names)
            + "</tr>"]
    for it in items:
        cells = []
        for a in arm_names:
            o = it["arms"].get(a)
            mark = "" if o is None else ("right" if o["right"] else "wrong")
            tip = "" if o is None else esc(o.get("answer", "")[:300])
            cells.append(f'<td title="{tip}">{mark}</td>')
        rows.append(f"<tr><td>{esc(it['id'])}</td>{''.join(cells)}</tr>")
    return "".join(rows) + "</table>"
