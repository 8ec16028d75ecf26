"""Benchmark: what the orchestration adds on top of the models' own latency (not a test).

    python bench/overhead.py [--runs 5] [--latency 0,0.2] [--agents 3,16] [--mixed]
                             [--tool-runs 3] [--tool-latency 0.2] [--no-tools]
                             [--calls-agents 3,5,8] [--jitter 0,0.15] [--calls-runs 5]
                             [--no-calls] [--no-tracemalloc] [--state-dir DIR] [--profile]
                             [--store redis|URL]

Runs teams of scripted agents (answer, vote for agent1, the winner presents) through
`massgen_mcp.runs.engine.Engine` against the loopback scripted provider, which runs in its own
process and adds a fixed latency L to every reply. Each configuration is run once to warm up
(SDK imports, TLS context), then `--runs` times; figures are medians.

Columns:
- wall: the run as the engine's caller sees it (team built, run record written).
- ideal = 3L: the critical path with no restarts is one answer round, one vote round and the
  winner's presentation, each one provider call long. That holds for 16 agents as for 3: the
  agents of a round call in parallel, so a round costs one L whatever the team size. Restarts
  (a new answer cancels the in-flight vote turns of agents that already answered) cost
  nothing extra when every first answer lands at about the same time, as here; when they
  spread out, the spread shows up as wall > ideal.
- outside: wall minus the time during which at least one provider call was in flight (each
  backend's `turn()` is timed by a thin wrapper). This is the orchestration that sits on the
  critical path: building the team and backends, run records, status.json, scheduling
  between rounds, teardown. SDK work inside `turn()` (request building, parsing) is not in it.
- call - L: median duration of a provider call that returned, minus L: the SDK's work on
  both ends, the loopback HTTP and the provider's parsing (and waiting for a busy CPU).
- cpu: CPU time of this process per run (orchestrator + SDKs + HTTP client; the provider's
  CPU is in the other process). Less sensitive to machine load than wall time.
- calls: provider calls counted in `RunResult.totals`; http: requests the provider received
  (also counts calls cancelled by a restart).
- peak RSS: growth of this process's VmHWM over its RSS before the configuration's runs
  (VmHWM is reset per configuration); tracemalloc: Python allocation peak of one extra run.

Goals (issue 2): wall <= 1.10 x ideal for 3 agents at L = 200 ms; < 50 ms of orchestration
per run at L = 0 (the `outside` column; wall at L = 0 also includes the SDKs' and the loopback
HTTP's work for every call).

Calls per run (issue 11): teams of 3, 5 and 8 at L = 200 ms, with every reply's latency
jittered by up to `--jitter` seconds (answers then land up to 150 ms apart, as with real
providers), with the first-answer wait on (the default) and off (MassGen's behaviour: an agent
that answered first starts its next turn at once, and that call is cancelled when the next
first answer lands). Columns: calls per run (median and max; cancelled calls included), the
cancelled calls, restarts, the wall time (the wait must not lengthen it) and the cost per
run had the agents been gpt-5-mini at its list price (the scripted models are free). Goal:
2N+1 calls and no cancelled call in the jittered common case.

Early stop (issue 21): the --calls-agents teams at L = 200 ms with the largest --jitter,
early stop on (the default) and off. Every agent votes for agent1, so the vote is decided
once a majority has voted; the outstanding vote turns are cancelled (they were in flight:
the provider still counts their prompt, but they produce no output and the run does not
wait for them). Columns: calls started (cancelled included), calls completed, cancelled
calls, vote turns cut by early stop, votes counted, output tokens, wall, cost per run as
gpt-5-mini (cancelled calls' prompts included, as estimates).

Tool servers (issue 4): the same 3-agent run where every agent's backend has one stdio MCP
server (tests/tool_server.py), with the agents not calling it and with each calling it once
(that adds one provider round trip, L, to the critical path), against the run without tools;
plus the start-up of one such server alone (spawn, initialize, tools/list). Goal: the
servers add at most one server start-up time to a run. The process count is the peak number
of live descendants of this process (the scripted provider's process left out), sampled
from /proc every 10 ms during the run. Set-up is prepared.start() to the `run_started` event
(tool servers start there); teardown is `run_finished` to prepared.start() returning (they
are stopped there: stdin closed, then the SDK waits for them to exit).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import os
import pstats
import resource
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import (
    TESTS,
    ProviderProcess,
    descendants,
    load_average,
    median,
    print_json,
    print_table,
    reset_peak_rss,
    team_data,
    vm_kib,
)

import massgen_mcp.runs.pool as pool_module
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.config.team import Team
from massgen_mcp.runs.engine import Engine
from massgen_mcp.runs.store_open import open_store

GOAL_RATIO = 1.10
GOAL_ORCHESTRATION_S = 0.050
TOOL_SERVER = [sys.executable, str(TESTS / "tool_server.py")]


# ---------------------------------------------------------------------------- timing


class _CallLog:
    """(start, end) of every provider call, from a wrapper around each backend."""

    def __init__(self) -> None:
        self.intervals: list[tuple[float, float]] = []
        self.completed: list[float] = []  # durations of the calls that returned a reply

    def busy(self, t0: float, t1: float) -> float:
        """Seconds within [t0, t1] during which at least one call was in flight."""
        total, end = 0.0, t0
        for s, e in sorted(self.intervals):
            s, e = max(s, end), min(e, t1)
            if e > s:
                total += e - s
                end = e
        return total


class _TimedBackend:
    def __init__(self, inner: Any, log: _CallLog) -> None:
        self._inner, self._log = inner, log
        self.provider, self.model = inner.provider, inner.model

    async def turn(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            turn = await self._inner.turn(*args, **kwargs)
        finally:
            self._log.intervals.append((start, time.perf_counter()))
        self._log.completed.append(time.perf_counter() - start)
        return turn

    async def aclose(self) -> None:
        await self._inner.aclose()


def _time_backends(log: _CallLog) -> None:
    """Wrap every backend the engine builds (its pool calls `create_backend`)."""
    create = pool_module.create_backend

    def timed(spec: Any, context: Any = None) -> Any:
        return _TimedBackend(create(spec, context), log)

    pool_module.create_backend = timed  # type: ignore[assignment]


class _ProcessSampler:
    """Peak count of live descendants of this process while the block runs, leaving out
    the scripted provider's process (`exclude`)."""

    def __init__(self, exclude: int, interval: float = 0.01) -> None:
        self.peak = 0
        self._exclude = exclude
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.wait(self._interval):
            mine = descendants(me) - {self._exclude} - descendants(self._exclude)
            self.peak = max(self.peak, len(mine))

    def __enter__(self) -> _ProcessSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# ---------------------------------------------------------------------------- runs


@dataclass
class Sample:
    wall: float
    outside: float
    cpu: float
    status: str
    calls: int
    requests: int
    input_tokens: int
    restarts: int
    call_excess: float  # median provider call duration minus the scripted latency
    setup: float  # prepared.start() called -> run_started (team, backends, tool servers)
    teardown: float  # run_finished -> prepared.start() returned (tool servers, backends, record)
    processes: int = 0
    output_tokens: int = 0
    cancelled: int = 0
    early_stopped: int = 0
    votes: int = 0


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def _run_once(engine: Engine, team: Team, provider: ProviderProcess, log: _CallLog,
                    task: str, sample_processes: bool = False) -> Sample:
    provider.reset()
    log.intervals.clear()
    log.completed.clear()
    marks: dict[str, float] = {}

    def listener(event: dict[str, Any]) -> None:
        if event["kind"] in ("run_started", "run_finished"):
            marks[event["kind"]] = time.perf_counter()

    sampler = _ProcessSampler(provider.pid) if sample_processes else None
    c0 = _cpu()
    t0 = time.perf_counter()
    if sampler:
        with sampler:
            result = await engine.prepare(team, task, listener=listener).start()
    else:
        result = await engine.prepare(team, task, listener=listener).start()
    t1 = time.perf_counter()
    cpu = _cpu() - c0
    if result.status != "completed" or result.final_answer != f"final for {task}":
        raise RuntimeError(f"run {result.run_id} ended {result.status}: {result.error} "
                           f"(final answer {result.final_answer!r})")
    errors = provider.errors()
    if errors:
        raise RuntimeError(f"a script raised: {errors}")
    if not log.completed:
        raise RuntimeError("provider calls were not timed: massgen_mcp.runs.pool no longer "
                           "builds "
                           "backends through its create_backend; update _time_backends")
    return Sample(wall=t1 - t0, outside=(t1 - t0) - log.busy(t0, t1), cpu=cpu,
                  status=result.status, calls=result.totals.provider_calls,
                  requests=provider.count(), input_tokens=result.totals.input_tokens,
                  restarts=result.totals.restarts, output_tokens=result.totals.output_tokens,
                  cancelled=result.totals.cancelled_calls,
                  early_stopped=result.totals.early_stop_cancelled_turns,
                  votes=result.totals.votes,
                  call_excess=median(log.completed) - provider.latency,
                  setup=marks["run_started"] - t0, teardown=t1 - marks["run_finished"],
                  processes=sampler.peak if sampler else 0)


def _team(provider: ProviderProcess, n: int, wires: list[str], **kw: Any) -> Team:
    return team_from_data(team_data(provider.root, n, wires, **kw), "bench-team.yaml",
                          Environment({}))


async def _config(engine: Engine, provider: ProviderProcess, log: _CallLog, *, n: int,
                  wires: list[str], latency: float, runs: int, memory: bool) -> dict[str, Any]:
    provider.latency = latency
    team = _team(provider, n, wires)
    await _run_once(engine, team, provider, log, "warm-up")
    reset_peak_rss()
    rss0 = vm_kib("self", "VmRSS")
    samples = [await _run_once(engine, team, provider, log, f"task {i}") for i in range(runs)]
    peak_rss = vm_kib("self", "VmHWM") - rss0
    traced = 0
    if memory:
        tracemalloc.start()
        await _run_once(engine, team, provider, log, "traced")
        traced = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    ideal = 3 * latency
    wall = median([s.wall for s in samples])
    return {
        "agents": n, "wires": "+".join(wires), "latency_s": latency, "runs": runs,
        "wall_s": round(wall, 4), "ideal_s": round(ideal, 4),
        "ratio": round(wall / ideal, 3) if ideal else None,
        "outside_s": round(median([s.outside for s in samples]), 4),
        "cpu_s": round(median([s.cpu for s in samples]), 4),
        "call_excess_s": round(median([s.call_excess for s in samples]), 4),
        "wall_min_s": round(min(s.wall for s in samples), 4),
        "calls": samples[-1].calls, "requests": round(median([s.requests for s in samples])),
        "input_tokens": samples[-1].input_tokens,
        "restarts": round(median([s.restarts for s in samples])),
        "peak_rss_kib": peak_rss, "tracemalloc_peak_kib": traced // 1024,
    }


# ---------------------------------------------------------------------------- tools


async def _tool_server_startup(runs: int) -> float:
    """Median seconds to spawn one tool server, initialize and list its tools."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    times = []
    params = StdioServerParameters(command=TOOL_SERVER[0], args=TOOL_SERVER[1:])
    with open(os.devnull, "w") as devnull:
        for _ in range(runs):
            t0 = time.perf_counter()
            async with Client(stdio_client(params, errlog=devnull), mode="legacy") as c:
                await c.list_tools()
                times.append(time.perf_counter() - t0)
    return median(times)


async def _tools(engine: Engine, provider: ProviderProcess, log: _CallLog, *, latency: float,
                 runs: int) -> dict[str, Any]:
    provider.latency = latency
    variants: dict[str, Callable[[], Team]] = {
        "no tools": lambda: _team(provider, 3, ["openai"]),
        "tools, unused": lambda: _team(provider, 3, ["openai"], tools=TOOL_SERVER),
        "tools, 1 call each": lambda: _team(provider, 3, ["openai"], tools=TOOL_SERVER,
                                            use_tools=True),
    }
    teams = {name: make() for name, make in variants.items()}
    for team in teams.values():
        await _run_once(engine, team, provider, log, "warm-up")
    samples: dict[str, list[Sample]] = {name: [] for name in teams}
    for i in range(runs):  # interleaved, so a load spike hits every variant alike
        for name, team in teams.items():
            samples[name].append(
                await _run_once(engine, team, provider, log, f"task {i}", sample_processes=True))
    startup = await _tool_server_startup(max(3, runs))
    base = median([s.wall for s in samples["no tools"]])
    rows = {}
    for name, got in samples.items():
        wall = median([s.wall for s in got])
        rows[name] = {"wall_s": round(wall, 4), "extra_s": round(wall - base, 4),
                      "setup_s": round(median([s.setup for s in got]), 4),
                      "teardown_s": round(median([s.teardown for s in got]), 4),
                      "peak_processes": max(s.processes for s in got),
                      "calls": got[-1].calls}
    return {"latency_s": latency, "runs": runs, "server_startup_s": round(startup, 4),
            "variants": rows}


# ---------------------------------------------------------------------------- calls


async def _calls(engine: Engine, provider: ProviderProcess, log: _CallLog, *, sizes: list[int],
                 jitters: list[float], runs: int) -> list[dict[str, Any]]:
    from massgen_mcp.config.prices import price_for

    price = price_for("openai", "gpt-5-mini")
    assert price is not None
    provider.latency = 0.2
    rows = []
    for n in sizes:
        for jitter in jitters:
            provider.set_jitter(jitter)
            for wait in (True, False):
                # every vote counted: early stop is measured on its own (_early_stop)
                team = _team(provider, n, ["openai"], early_stop=False,
                             **({} if wait else {"first_answer_wait_seconds": 0}))
                await _run_once(engine, team, provider, log, "warm-up")
                got: list[Sample] = []
                costs: list[float] = []
                for i in range(runs):
                    sample = await _run_once(engine, team, provider, log, f"task {i}")
                    got.append(sample)
                    costs.append(price.cost(sample.input_tokens, sample.output_tokens))
                rows.append({
                    "agents": n, "jitter_s": jitter, "first_answer_wait": wait,
                    "ideal_calls": 2 * n + 1,
                    "calls_median": median([s.calls for s in got]),
                    "calls_max": max(s.calls for s in got),
                    "cancelled_max": max(s.cancelled for s in got),
                    "restarts_median": median([s.restarts for s in got]),
                    "wall_s": round(median([s.wall for s in got]), 4),
                    "cost_usd_gpt5mini": round(median(costs), 6)})
                print(f"  done: calls, {n} agents, jitter {jitter:g}s, wait "
                      f"{'on' if wait else 'off'}", file=sys.stderr, flush=True)
    provider.set_jitter(0)
    return rows


async def _early_stop(engine: Engine, provider: ProviderProcess, log: _CallLog, *,
                      sizes: list[int], jitter: float, runs: int) -> list[dict[str, Any]]:
    """The same teams with early stop on (the default) and off (every vote awaited)."""
    from massgen_mcp.config.prices import price_for

    price = price_for("openai", "gpt-5-mini")
    assert price is not None
    provider.latency = 0.2
    provider.set_jitter(jitter)
    rows = []
    for n in sizes:
        for on in (True, False):
            team = _team(provider, n, ["openai"], early_stop=on)
            await _run_once(engine, team, provider, log, "warm-up")
            got = [await _run_once(engine, team, provider, log, f"task {i}")
                   for i in range(runs)]
            rows.append({
                "agents": n, "early_stop": on, "jitter_s": jitter,
                "calls_median": median([s.calls for s in got]),
                "completed_calls_median": median([s.calls - s.cancelled for s in got]),
                "cancelled_median": median([s.cancelled for s in got]),
                "vote_turns_cancelled_median": median([s.early_stopped for s in got]),
                "votes_median": median([s.votes for s in got]),
                "output_tokens_median": median([s.output_tokens for s in got]),
                "wall_s": round(median([s.wall for s in got]), 4),
                "cost_usd_gpt5mini": round(median([price.cost(s.input_tokens, s.output_tokens)
                                                   for s in got]), 6)})
            print(f"  done: early stop {'on' if on else 'off'}, {n} agents", file=sys.stderr,
                  flush=True)
    provider.set_jitter(0)
    return rows


# ---------------------------------------------------------------------------- profile


async def _profile(engine: Engine, provider: ProviderProcess, log: _CallLog, runs: int) -> None:
    provider.latency = 0.0
    team = _team(provider, 3, ["openai"])
    await _run_once(engine, team, provider, log, "warm-up")
    prof = cProfile.Profile()
    prof.enable()
    for i in range(runs):
        await _run_once(engine, team, provider, log, f"task {i}")
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out).sort_stats("cumulative")
    stats.print_stats(r"massgen_mcp", 30)
    print(f"\ncProfile of {runs} runs, 3 agents, L = 0, our functions by cumulative time "
          "(ncalls counts every resumption of a coroutine):", file=sys.stderr)
    print("   ncalls" + out.getvalue().split("ncalls", 1)[-1], file=sys.stderr)


# ---------------------------------------------------------------------------- main


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


@contextlib.contextmanager
def _store_url(store: str | None) -> Iterator[str | None]:
    """`--store`: None (the files), a Redis URL, or `redis` for a redis-server of its own
    on a free loopback port (tests/redis_server.py)."""
    if store != "redis":
        yield store
        return
    from redis_server import RedisServer

    with RedisServer() as server:
        yield server.url


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


async def main(args: argparse.Namespace) -> None:
    log = _CallLog()
    _time_backends(log)
    rows: list[dict[str, Any]] = []
    load_before = load_average()
    with tempfile.TemporaryDirectory(dir=args.state_dir) as tmp, ProviderProcess() as provider, \
            _store_url(args.store) as url:
        state = Path(tmp) / ".massgen"
        engine = Engine(state, Environment({}), store=open_store(url, state))
        wire_sets = [["openai"]] + ([["openai", "anthropic", "gemini"]] if args.mixed else [])
        for wires in wire_sets:
            for n in args.agents:
                for latency in args.latency:
                    rows.append(await _config(engine, provider, log, n=n, wires=wires,
                                              latency=latency, runs=args.runs,
                                              memory=not args.no_tracemalloc))
                    print(f"  done: {n} agents, {'+'.join(wires)}, L={latency:g}s",
                          file=sys.stderr, flush=True)
        calls = []
        if not args.no_calls:
            calls = await _calls(engine, provider, log, sizes=args.calls_agents,
                                 jitters=args.jitter, runs=args.calls_runs)
        early = []
        if not args.no_early_stop:
            early = await _early_stop(engine, provider, log, sizes=args.calls_agents,
                                      jitter=max(args.jitter), runs=args.calls_runs)
        tools = None
        if not args.no_tools:
            tools = await _tools(engine, provider, log, latency=args.tool_latency,
                                 runs=args.tool_runs)
        if args.profile:
            await _profile(engine, provider, log, args.runs)
    load_after = load_average()

    print(f"\nOrchestration overhead (medians of {args.runs} runs; load average "
          f"{load_before} before, {load_after} after; {os.cpu_count()} CPUs)")
    print_table(
        ["agents", "wires", "L", "wall", "ideal 3L", "wall/ideal", "outside calls", "call - L",
         "cpu", "calls (http)", "prompt tokens", "restarts", "peak RSS", "tracemalloc"],
        [[r["agents"], r["wires"], f"{r['latency_s'] * 1000:.0f} ms",
          f"{r['wall_s'] * 1000:.0f} ms", f"{r['ideal_s'] * 1000:.0f} ms",
          f"{r['ratio']:.2f}" if r["ratio"] else "-", f"{r['outside_s'] * 1000:.0f} ms",
          f"{r['call_excess_s'] * 1000:.0f} ms",
          f"{r['cpu_s'] * 1000:.0f} ms", f"{r['calls']} ({r['requests']})", r["input_tokens"],
          r["restarts"], f"{r['peak_rss_kib'] / 1024:.1f} MiB",
          f"{r['tracemalloc_peak_kib'] / 1024:.1f} MiB" if r["tracemalloc_peak_kib"] else "-"]
         for r in rows])
    goals = {}
    for r in rows:
        if r["agents"] == 3 and r["wires"] == "openai" and r["latency_s"] == 0.2:
            goals["ratio_3_agents_200ms"] = r["ratio"]
            print(f"goal wall <= {GOAL_RATIO} x ideal (3 agents, L = 200 ms): {r['ratio']:.2f} "
                  f"-> {'met' if r['ratio'] <= GOAL_RATIO else 'NOT met'}")
        if r["agents"] == 3 and r["wires"] == "openai" and r["latency_s"] == 0:
            goals["orchestration_3_agents_s"] = r["outside_s"]
            print(f"goal < {GOAL_ORCHESTRATION_S * 1000:.0f} ms orchestration per run (3 "
                  f"agents, L = 0): {r['outside_s'] * 1000:.0f} ms outside provider calls, "
                  f"{r['wall_s'] * 1000:.0f} ms wall -> "
                  f"{'met' if r['outside_s'] < GOAL_ORCHESTRATION_S else 'NOT met'}")
    if calls:
        print(f"\nCalls per run (L = 200 ms plus jitter, medians of {args.calls_runs} runs; "
              "cost had every agent been gpt-5-mini)")
        print_table(
            ["agents", "jitter", "first-answer wait", "calls (max)", "ideal 2N+1",
             "cancelled (max)", "restarts", "wall", "cost / run"],
            [[r["agents"], f"{r['jitter_s'] * 1000:.0f} ms",
              "on" if r["first_answer_wait"] else "off",
              f"{r['calls_median']:g} ({r['calls_max']})", r["ideal_calls"],
              r["cancelled_max"], f"{r['restarts_median']:g}", f"{r['wall_s'] * 1000:.0f} ms",
              f"${r['cost_usd_gpt5mini']:.5f}"] for r in calls])
        common = [r for r in calls if r["first_answer_wait"] and r["jitter_s"] > 0]
        ok = all(r["calls_max"] == r["ideal_calls"] and r["cancelled_max"] == 0 for r in common)
        goals["calls_2n_plus_1_jittered"] = ok
        print(f"goal: 2N+1 calls and no cancelled call with jitter and the wait on -> "
              f"{'met' if ok else 'NOT met'}")
    if early:
        print(f"\nEarly stop (L = 200 ms plus up to {early[0]['jitter_s'] * 1000:.0f} ms "
              f"jitter, medians of {args.calls_runs} runs; every agent votes for agent1)")
        print_table(
            ["agents", "early stop", "calls", "completed", "cancelled", "vote turns cut",
             "votes counted", "output tokens", "wall", "cost / run"],
            [[r["agents"], "on" if r["early_stop"] else "off", f"{r['calls_median']:g}",
              f"{r['completed_calls_median']:g}", f"{r['cancelled_median']:g}",
              f"{r['vote_turns_cancelled_median']:g}", f"{r['votes_median']:g}",
              f"{r['output_tokens_median']:g}", f"{r['wall_s'] * 1000:.0f} ms",
              f"${r['cost_usd_gpt5mini']:.5f}"] for r in early])
    if tools:
        print(f"\nAgent tool servers (3 agents, L = {tools['latency_s'] * 1000:.0f} ms, medians "
              f"of {tools['runs']} interleaved runs; one tool server alone starts in "
              f"{tools['server_startup_s'] * 1000:.0f} ms)")
        print_table(["variant", "wall", "extra vs no tools", "set-up", "teardown",
                     "peak processes", "calls"],
                    [[name, f"{v['wall_s'] * 1000:.0f} ms", f"{v['extra_s'] * 1000:+.0f} ms",
                      f"{v['setup_s'] * 1000:.0f} ms", f"{v['teardown_s'] * 1000:.0f} ms",
                      v["peak_processes"], v["calls"]] for name, v in tools["variants"].items()])
        extra = tools["variants"]["tools, unused"]["extra_s"]
        goals["tool_extra_over_startup"] = round(extra / tools["server_startup_s"], 2)
        print(f"goal: tool servers add <= one server start-up: +{extra * 1000:.0f} ms vs "
              f"{tools['server_startup_s'] * 1000:.0f} ms -> "
              f"{'met' if extra <= tools['server_startup_s'] else 'NOT met'}")
    print_json("overhead", {"load_before": load_before, "rows": rows, "calls": calls,
                            "early_stop": early,
                            "tools": tools, "goals": goals})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5, help="timed runs per configuration")
    p.add_argument("--latency", type=_floats, default=[0.0, 0.2],
                   help="per-call latencies in seconds, comma separated (default 0,0.2)")
    p.add_argument("--agents", type=_ints, default=[3, 16], help="team sizes (default 3,16)")
    p.add_argument("--mixed", action="store_true",
                   help="also run teams mixing the OpenAI, Anthropic and Gemini wires")
    p.add_argument("--no-tracemalloc", action="store_true",
                   help="skip the extra traced run per configuration")
    p.add_argument("--no-tools", action="store_true", help="skip the tool-server benchmark")
    p.add_argument("--tool-runs", type=int, default=3, help="runs per tool-server variant")
    p.add_argument("--tool-latency", type=float, default=0.2,
                   help="per-call latency for the tool-server benchmark (default 0.2)")
    p.add_argument("--calls-agents", type=_ints, default=[3, 5, 8],
                   help="team sizes for the calls-per-run benchmark (default 3,5,8)")
    p.add_argument("--jitter", type=_floats, default=[0.0, 0.15],
                   help="reply latency jitters for the calls benchmark (default 0,0.15)")
    p.add_argument("--calls-runs", type=int, default=5, help="runs per calls configuration")
    p.add_argument("--no-calls", action="store_true", help="skip the calls-per-run benchmark")
    p.add_argument("--no-early-stop", action="store_true",
                   help="skip the early-stop benchmark (teams of --calls-agents)")
    p.add_argument("--state-dir", default=None,
                   help="directory to hold the run records (default: the system temp dir); "
                        "status.json writes cost what this file system charges for them")
    p.add_argument("--store", default=None, metavar="redis|URL",
                   help="record the runs in Redis (`redis`: start a redis-server on a free "
                        "loopback port) instead of files, to measure the Redis store's cost")
    p.add_argument("--profile", action="store_true",
                   help="also print a cProfile of 3-agent runs at L = 0")
    return p.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
