"""Benchmark: what a coding-agent CLI adds per turn, and a CLI team's wall time (not a test).

    python bench/cli_agents.py [--turns 5] [--latency 0.2] [--clis claude,codex,gemini]
                               [--team claude,claude,claude] [--json]

Needs the pinned CLIs (``bash .ci/npm-setup.sh``). The scripted provider runs in a thread of
this process: the CLIs run in their own processes, so the provider's share of this process's
CPU is small against a CLI turn (~1 s), unlike bench/overhead.py where it runs separately.

Per-turn rows (one agent, `Backend.turn()` called directly, the model replying at once):
- api turn: an Anthropic API agent's turn (one provider call), the baseline.
- cli turn: one CLI turn, first (new session) and resumed (``--resume`` / ``exec resume``):
  process start, MCP connect of the workflow server, the model's tool call, the CLI's
  follow-up request after the call (the "Received" reply), exit. Two provider calls.
- to 1st request: from the start of `turn()` to the CLI's first model request: process start,
  the workflow MCP server's start and connect (the CLIs wait for it).
- overhead: cli turn - api turn (what a CLI turn costs beyond an API turn; goal < 1.5 s).

Team rows: a 3-agent CLI team (answer, vote, the winner presents) with every model reply
delayed by L; ideal = 3 rounds x 2 calls x L (a CLI turn makes two model calls), so
(wall - ideal) / 3 is the per-round overhead on the critical path; "result after" is when the
run's result was final (callers are woken then; closing the CLIs comes after). The same engine
runs the team twice: "cold" (each member's first turn starts its CLI), then, `--pause` seconds
later, "warm" (each member takes the standby its last run left, runs/standby.py; Codex and
Gemini CLI standbys are also waited for until they answered `initialize`, which three at once
may take longer than the pause on a loaded machine). "warming requests" counts the model
requests made between the two runs (must be 0).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from agents import answer_then_vote  # noqa: E402
from cli_agents import (  # noqa: E402
    claude_backend,
    cli_agent,
    cli_env,
    codex_backend,
    gemini_backend,
)
from scripted_provider import Delay, ScriptedProvider, ScriptRequest, answer  # noqa: E402

from massgen_mcp.backends import BackendContext, create_backend  # noqa: E402
from massgen_mcp.config.env import Environment  # noqa: E402
from massgen_mcp.config.load import team_from_data  # noqa: E402
from massgen_mcp.coordination import prompts  # noqa: E402
from massgen_mcp.coordination.answers import TextAnswer  # noqa: E402
from massgen_mcp.coordination.workflow import new_answer_tool  # noqa: E402
from massgen_mcp.runs.engine import Engine  # noqa: E402
from massgen_mcp.runs.pool import BackendPool  # noqa: E402
from massgen_mcp.runs.standby import STANDBY_SIZE  # noqa: E402

BUILDERS = {"claude": claude_backend, "codex": codex_backend, "gemini": gemini_backend}


def _messages(i: int) -> list[Any]:
    return prompts.turn_messages(own_system=None, task=f"Question {i}?", context=None,
                                 instructions="", shown=[], own_label=None, noun="answer",
                                 sensitivity="lenient", vote_only=False)


async def _turns(provider: ScriptedProvider, backend_data: dict[str, Any], model: str,
                 turns: int, cli: bool) -> dict[str, Any]:
    first_request: list[float] = []
    script = answer("x")

    def record(req: ScriptRequest) -> Any:
        first_request.append(time.monotonic())
        return script

    provider.script(model, cli_agent(record) if cli else record)
    team = team_from_data({"agents": [{"id": "a", "backend": backend_data}]}, "bench.yaml",
                          Environment({}))
    run_dir = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    backend = create_backend(team.agents[0],
                             BackendContext(env=Environment(cli_env()), run_dir=run_dir))
    tools = [new_answer_tool(TextAnswer())]
    walls, to_first = [], []
    try:
        for i in range(turns + 1):  # the first of an API backend warms up its SDK
            first_request.clear()
            t0 = time.monotonic()
            turn = await backend.turn(_messages(i), tools)
            walls.append(time.monotonic() - t0)
            to_first.append(first_request[0] - t0 if first_request else float("nan"))
            assert turn.tool_calls and turn.tool_calls[0].name == "new_answer", turn
    finally:
        await backend.aclose()
    return {"first": walls[0], "resumed": statistics.median(walls[1:]),
            "to_first_request": statistics.median(to_first[1:]),
            "to_first_request_new": to_first[0]}


async def _team(provider: ScriptedProvider, clis: list[str], latency: float,
                pause: float) -> dict[str, Any]:
    agents = []
    for i, name in enumerate(clis):
        model = f"team-{i}"
        cli = cli_agent(answer_then_vote(f"answer {i}", "agent1"))
        provider.script(model, lambda req, cli=cli: Delay(latency, cli(req)))
        agents.append({"id": f"{chr(97 + i)}-{name}", "backend": BUILDERS[name](provider, model)})
    team = team_from_data({"agents": agents, "orchestrator": {
        "orchestrator_timeout_seconds": 300}}, "bench.yaml", Environment({}))
    state = Path(tempfile.mkdtemp(prefix="bench-cli-team-"))
    engine = Engine(state, Environment(cli_env()), pool=BackendPool(standby_size=STANDBY_SIZE))
    ideal = 3 * 2 * latency
    out: dict[str, Any] = {"team": ",".join(clis), "latency": latency, "ideal": ideal,
                           "pause": pause}
    try:
        for which in ("cold", "warm"):
            if which == "warm":
                before = len(provider.requests)
                await anyio.sleep(pause)  # the next run comes a while after the last one
                out["warming_requests"] = len(provider.requests) - before
                standbys = engine.pool.standbys.backends()
                out["standbys"] = len(standbys)
                t1 = time.monotonic()  # Codex, Gemini CLI: until `initialize` was answered
                for b in standbys:
                    if hasattr(b, "started"):
                        await b.started()
                out["ready_after_pause"] = time.monotonic() - t1
            finished: list[float] = []
            t0 = time.monotonic()
            result = await engine.prepare(team, "Which queue?", listener=lambda e, f=finished: (
                f.append(time.monotonic()) if e.get("kind") == "run_finished" else None)).start()
            wall = time.monotonic() - t0
            assert result.status == "completed", (result.error,
                                                  [a.error for a in result.agents])
            if which == "warm":  # how many members' first turns ran on their standby
                out["took_standby"] = sum(bool(getattr(b, "started_warm", False))
                                          for b in standbys)
            out[which] = {"wall": wall, "to_result": finished[0] - t0,
                          "overhead_per_round": (wall - ideal) / 3,
                          "provider_calls": result.totals.provider_calls}
    finally:
        await engine.pool.aclose()
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"load": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
                           "turns": {}, "team": None}
    with ScriptedProvider() as provider:
        api = await _turns(provider, provider.backend("anthropic", "api", max_retries=0),
                           "api", args.turns, cli=False)
        out["turns"]["api"] = api
        for name in filter(None, args.clis.split(",")):
            row = await _turns(provider, BUILDERS[name](provider, f"cli-{name}"),
                               f"cli-{name}", args.turns, cli=True)
            row["overhead"] = row["resumed"] - api["resumed"]
            out["turns"][name] = row
        if args.team:
            provider.reset()
            out["team"] = await _team(provider, args.team.split(","), args.latency,
                                      args.pause)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--clis", default="claude,codex,gemini")
    ap.add_argument("--team", default="claude,claude,claude")
    ap.add_argument("--pause", type=float, default=30.0,
                    help="seconds between the cold and the warm team run")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = anyio.run(main_async, args)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"load average {out['load']}; medians of {args.turns} turns (first turn separate)")
    print(f"{'agent':<8} {'first':>7} {'turn':>7} {'to 1st req':>11} {'overhead':>9}")
    for name, r in out["turns"].items():
        print(f"{name:<8} {r['first']:>6.2f}s {r['resumed']:>6.2f}s "
              f"{r['to_first_request']:>10.2f}s "
              f"{(str(round(r['overhead'], 2)) + 's') if 'overhead' in r else '-':>9}")
    if out["team"]:
        t = out["team"]
        print(f"\nteam {t['team']} at L={t['latency']}s, ideal {t['ideal']:.2f}s; "
              f"{t['standbys']} standbys ({t['took_standby']} taken), "
              f"{t['warming_requests']} model requests while they warmed ({t['pause']:g}s, "
              f"then {t['ready_after_pause']:.1f}s until ready)")
        for which in ("cold", "warm"):
            r = t[which]
            print(f"  {which}: wall {r['wall']:.2f}s ({r['wall'] / t['ideal']:.2f}x ideal; "
                  f"result after {r['to_result']:.2f}s, {r['to_result'] / t['ideal']:.2f}x), "
                  f"overhead {r['overhead_per_round']:.2f}s per round, "
                  f"{r['provider_calls']} provider calls")


if __name__ == "__main__":
    main()
