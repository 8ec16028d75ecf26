"""`massgen-mcp eval SUITE`: the team against its members, best member and self-consistency."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from massgen_mcp.eval.run import Progress

EXIT_OK, EXIT_USAGE, EXIT_STOPPED = 0, 2, 3


def add_eval_parser(sub: Any) -> None:
    p = sub.add_parser(
        "eval", help="measure the team against each member, the best member and "
                     "self-consistency at the same budget",
        description="Run an eval suite (arith, humaneval, or a JSONL file of "
                    '{"id", "prompt", "accept"} lines) on every arm and print accuracy with a '
                    "95% interval, cost, tokens, calls and latency per arm, the oracle and the "
                    "selection gap. Exit 0 done, 2 bad usage or config, 3 stopped by "
                    "--max-cost-usd (figures cover the items scored).")
    p.add_argument("suite", help="arith, humaneval (pip install 'massgen-mcp[eval]') or a "
                                 ".jsonl path")
    p.add_argument("--models", default=None, help="comma-separated provider/model list")
    p.add_argument("--team", default=None, help="bundled team name or team YAML path")
    p.add_argument("--arms", default=None,
                   help="comma-separated arms: solo, solo:<agent_id>, best-solo, "
                        "self-consistency, team, oracle (default: all)")
    p.add_argument("--limit", type=int, default=None, help="items to run (arith default 50)")
    p.add_argument("--seed", type=int, default=0, help="arith generator seed (default 0)")
    p.add_argument("--levels", default=None,
                   help="arith difficulty levels to draw from, e.g. 1,2 (default 1-5)")
    p.add_argument("--max-cost-usd", type=float, default=None,
                   help="stop before the next item would pass this estimated cost")
    p.add_argument("--concurrency", type=int, default=2, help="items at once (default 2)")
    p.add_argument("--checker", default=None,
                   help="a command that judges each answer (on its stdin; exit 0 = right), "
                        "run in the OS sandbox, for JSONL suites")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--report", default=None, metavar="FILE",
                   help="write a self-contained HTML report")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--record", default=None, metavar="DIR",
                       help="store every provider exchange in DIR (a new directory)")
    group.add_argument("--replay", default=None, metavar="DIR",
                       help="answer from a recording: no keys, no network")
    p.add_argument("--fresh", action="store_true",
                   help="start over instead of resuming the items already scored")
    p.add_argument("--state-dir", default=None, help="where eval records are kept")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")


def eval_main(args: argparse.Namespace) -> int:
    from pathlib import Path

    import anyio

    from massgen_mcp.errors import MassgenError
    from massgen_mcp.eval import EvalOptions, run_eval

    bar = None if args.quiet else _Bar()
    try:
        options = EvalOptions(
            args.suite, models=args.models, team=args.team,
            arms=[a.strip() for a in args.arms.split(",") if a.strip()] if args.arms else None,
            limit=args.limit, max_cost_usd=args.max_cost_usd, concurrency=args.concurrency,
            record=Path(args.record) if args.record else None,
            replay=Path(args.replay) if args.replay else None, seed=args.seed,
            checker=args.checker, state_dir=Path(args.state_dir) if args.state_dir else None,
            fresh=args.fresh, levels=_levels(args.levels))
        figures = anyio.run(lambda: run_eval(options, bar))
    except MassgenError as e:
        if bar:
            bar.close()
        print(f"massgen-mcp eval: {e}", file=sys.stderr)
        return EXIT_USAGE
    if bar:
        bar.close()
    if args.report:
        from massgen_mcp.eval.report import render_report
        from massgen_mcp.paths import write_atomic

        write_atomic(Path(args.report), render_report(figures))
    if args.json:
        import json

        print(json.dumps(figures, indent=2, sort_keys=True))
    else:
        print(table(figures))
    if figures.get("stopped"):
        print(f"massgen-mcp eval: stopped early ({figures['stopped']})", file=sys.stderr)
        return EXIT_STOPPED
    return EXIT_OK


def _levels(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        from massgen_mcp.errors import InputError

        raise InputError(f"--levels takes numbers like 1,2, not {text!r}") from None


def table(figures: dict[str, Any]) -> str:
    """The terminal table: one line per arm."""
    head = f"{'arm':<22} {'accuracy':>8} {'95% CI':>13} {'cost $':>9} {'calls':>6} " \
           f"{'tokens':>8} {'p50 s':>6} {'p95 s':>6}"
    lines = [f"{figures['suite']}: {figures['items_scored']} of {figures['items_total']} items; "
             f"team {', '.join(figures['team'])}", head, "-" * len(head)]
    for name, a in figures["arms"].items():
        label = name
        if name == "best-solo":
            label = f"best-solo ({a['member']})*"
        elif name == "self-consistency":
            label = f"self-cons. k={a['k']} ({a['member']})"
        acc = "-" if a["accuracy"] is None else f"{a['accuracy']:.1%}"
        ci = f"{a['ci95'][0]:.0%}-{a['ci95'][1]:.0%}"
        cost = "?" if a["cost_usd"] is None else f"{a['cost_usd']:.4f}"
        p50 = "-" if a["latency_p50_s"] is None else f"{a['latency_p50_s']:.1f}"
        p95 = "-" if a["latency_p95_s"] is None else f"{a['latency_p95_s']:.1f}"
        if len(label) > 22:  # cut in the middle: the ends tell arms apart (-2, -3)
            label = f"{label[:13]}…{label[-8:]}"
        lines.append(f"{label:<22} {acc:>8} {ci:>13} {cost:>9} {a['calls']:>6} "
                     f"{a['tokens']:>8} {p50:>6} {p95:>6}")
    if figures.get("selection_gap") is not None:
        lines.append(f"selection gap (oracle - team): {figures['selection_gap']:+.1%}")
    if "best-solo" in figures["arms"]:
        lines.append("* chosen after the fact (the best member on these very items)")
    return "\n".join(lines)


class _Bar:
    """A one-line progress bar on stderr (a plain line per item when stderr is no tty)."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()

    def __call__(self, state: Progress, what: str) -> None:
        width = 30
        filled = int(width * state.done / state.total) if state.total else width
        right = state.right.get("team")
        tail = f" team right {right}/{state.done}" if right is not None else ""
        line = f"[{'#' * filled}{'.' * (width - filled)}] {state.done}/{state.total} {what}{tail}"
        if self.tty:
            print(f"\r{line[:100]:<100}", end="", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.tty:
            print(file=sys.stderr)
