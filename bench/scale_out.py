"""Benchmark: concurrent `run_consensus` calls through haproxy over replicas and workers on
Redis, against one plain process (not a test).

    python bench/scale_out.py [--calls 300] [--latency 0.2] [--replicas 3] [--workers 2]
                              [--serial 20] [--timeout 900] [--skip-plain]

Both sides get the same burst, driven as bench/concurrency.py drives it: `--calls` MCP SDK
clients (`mode="legacy"`, one session each) connect, then all call `run_consensus` with their
own task at once, following progress; a call counts only when its result is `completed` with
the final answer of its own task (so a result given to another caller would show).

1. **plain**: `massgen-mcp --transport streamable-http --team <file>` (files, no Redis).
2. **cluster**: Debian's redis-server (tests/redis_server.py), `--workers` workers
   (`massgen-mcp worker --store redis://...`), `--replicas` replicas (`--stateless-http
   --store redis://...`) behind Debian's haproxy (tests/cluster.py builds all of it).

Printed per side: completed runs, throughput (runs/s over the burst), p50/p95/max per call,
peak RSS of each process (VmHWM; replicas and workers separately) and the CPU each used.

The Redis path's overhead per run is measured apart from the burst, where it is not hidden by
queueing: `--serial` runs one after another at L = 0 on each side (median wall per run, and
the CPU per run of every process involved), plus the Redis commands per run (INFO stats) and
the Redis memory the records take. The 3-agent team and the scripted provider (its own
process, as in the other benchmarks) are the same on both sides. The machine is shared: the
load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import yaml
from _common import (
    ProviderProcess,
    cpu_seconds,
    load_average,
    percentile,
    print_json,
    print_table,
    team_data,
    vm_kib,
)
from concurrency import _drive, _first_call
from mcp import Client
from mcp_harness import http_server

WIRES = ["openai", "anthropic", "gemini"]


@dataclass
class Side:
    name: str
    burst: Any = None  # concurrency.Load
    pids: dict[str, int] = field(default_factory=dict)  # process name -> pid
    peak_kib: dict[str, int] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)
    serial_walls: list[float] = field(default_factory=list)
    serial_cpu_s: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)  # median seconds per phase
    redis: dict[str, Any] = field(default_factory=dict)


async def _serial(url: str, n: int, timeout: float
                  ) -> tuple[list[float], list[tuple[str, float]]]:
    """`n` runs one after another on one session: the wall of each, and each run's id with
    the time its result reached the client."""
    walls: list[float] = []
    done: list[tuple[str, float]] = []
    with anyio.fail_after(timeout):
        async with Client(url, mode="legacy") as client:
            for i in range(n):
                task = f"task-{10_000 + i}"
                start = time.perf_counter()
                r = await client.call_tool("run_consensus", {"task": task})
                walls.append(time.perf_counter() - start)
                done.append(((r.structured_content or {}).get("run_id", ""), time.time()))
                data = r.structured_content or {}
                if r.is_error or data.get("final_answer") != f"final for {task}":
                    raise SystemExit(f"serial run {i} failed: {data.get('status')} {r.content}")
    return walls, done


async def _phases(url: str, done: list[tuple[str, float]]) -> dict[str, float]:
    """Where a handed-over run's time went, from its events' timestamps (median): queued ->
    a worker took it, the run in the worker, its end -> the result at the client."""
    phases: dict[str, list[float]] = {"queue": [], "in worker": [], "back to client": []}
    async with Client(url, mode="legacy") as client:
        for run_id, got in done:
            detail = await client.call_tool("get_run", {"run_id": run_id, "detail": "events"})
            ts = {e["kind"]: e["ts"] for e in
                  reversed((detail.structured_content or {}).get("events") or [])}
            if "queued" in ts and "worker_started" in ts and "run_finished" in ts:
                phases["queue"].append(ts["worker_started"] - ts["queued"])
                phases["in worker"].append(ts["run_finished"] - ts["worker_started"])
                phases["back to client"].append(got - ts["run_finished"])
    return {k: statistics.median(v) for k, v in phases.items() if v}


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def _measure(side: Side, url: str, provider: ProviderProcess, args: argparse.Namespace,
             redis: Any = None) -> None:
    """Warm up, the serial runs at L = 0, then the burst at --latency."""
    anyio.run(_first_call, url, args.timeout)
    # Every process imports the provider SDKs on its first run: a small burst warms them all
    # (haproxy spreads it over the replicas, the queue over the workers).
    anyio.run(_drive, url, 4 * len(side.pids), 0, args.timeout)
    provider.latency = 0.0
    stats0 = _redis_stats(redis)
    cpu0 = _cpu(side.pids)
    side.serial_walls, done = anyio.run(_serial, url, args.serial, args.timeout)
    cpu1 = _cpu(side.pids)
    side.serial_cpu_s = sum(cpu1[k] - cpu0[k] for k in cpu0)
    stats1 = _redis_stats(redis)
    side.phases = anyio.run(_phases, url, done)
    if redis is not None:
        side.redis = {
            "commands_per_run": (stats1["commands"] - stats0["commands"]) / args.serial,
            "memory_per_run_kib": (stats1["memory"] - stats0["memory"]) / args.serial / 1024,
        }
    provider.latency = args.latency
    cpu0 = _cpu(side.pids)
    side.burst = anyio.run(_drive, url, args.calls, 0, args.timeout)
    cpu1 = _cpu(side.pids)
    side.cpu_s = {k: cpu1[k] - cpu0[k] for k in cpu0}
    side.peak_kib = {name: vm_kib(pid, "VmHWM") for name, pid in side.pids.items()}


def _redis_stats(redis: Any) -> dict[str, int]:
    if redis is None:
        return {"commands": 0, "memory": 0}
    info = redis.info()
    return {"commands": int(info["total_commands_processed"]),
            "memory": int(info["used_memory"])}


def plain(tmp: Path, team: Path, provider: ProviderProcess, args: argparse.Namespace) -> Side:
    side = Side("plain process")
    with http_server(tmp, "--team", str(team), timeout=120) as server:
        side.pids = {"server": server.proc.pid}
        _measure(side, server.url, provider, args)
    return side


def cluster(tmp: Path, team: Path, provider: ProviderProcess,
            args: argparse.Namespace) -> Side:
    from cluster import Cluster
    from redis_server import RedisServer

    side = Side(f"haproxy + {args.replicas} replicas + {args.workers} workers + Redis")
    import redis as redis_py

    (tmp / "cluster").mkdir()
    with RedisServer() as server, \
            Cluster(tmp / "cluster", team, server.url, replicas=args.replicas,
                    workers=args.workers) as c:
        side.pids = {r.name: r.proc.pid for r in c.replicas if r.proc}
        side.pids |= {w.name: w.pid for w in c.workers}
        assert server.proc is not None and c.proxy is not None
        side.pids["redis"] = server.proc.pid
        side.pids["haproxy"] = c.proxy.proc.pid
        _measure(side, c.url, provider, args, redis_py.Redis.from_url(server.url))
    return side


def _row(side: Side, calls: int) -> list[Any]:
    load = side.burst
    walls = [c.wall for c in load.calls if c.ok]
    total = load.end - load.start
    mem = ", ".join(f"{name} {kib / 1024:.0f}" for name, kib in side.peak_kib.items())
    return [side.name, f"{len(walls)}/{calls}", f"{len(walls) / total:.1f}/s" if total else "-",
            f"{percentile(walls, 50):.2f} s", f"{percentile(walls, 95):.2f} s",
            f"{total:.1f} s", f"{mem} MiB", f"{sum(side.cpu_s.values()):.1f} s"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=300, help="concurrent run_consensus calls")
    p.add_argument("--latency", type=float, default=0.2,
                   help="seconds the scripted provider adds to every reply (default 0.2)")
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--serial", type=int, default=20,
                   help="runs one after another at L = 0, for the overhead per run")
    p.add_argument("--timeout", type=float, default=900, help="give up after this many s")
    p.add_argument("--skip-plain", action="store_true", help="measure the cluster only")
    args = p.parse_args()
    load_before = load_average()
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp_name, ProviderProcess(args.latency) as provider:
        tmp = Path(tmp_name)
        team = tmp / "team.yaml"
        team.write_text(yaml.safe_dump(team_data(provider.root, 3, WIRES)))
        sides = []
        if not args.skip_plain:
            (tmp / "plain").mkdir()
            sides.append(plain(tmp / "plain", team, provider, args))
        sides.append(cluster(tmp, team, provider, args))
        errors = provider.errors()
    load_after = load_average()

    print(f"\n{args.calls} concurrent run_consensus calls, 3 agents ({'+'.join(WIRES)}), "
          f"L = {args.latency * 1000:.0f} ms, one MCP session per call (load average "
          f"{load_before} before, {load_after} after; {os.cpu_count()} CPUs; "
          f"{time.time() - started:.0f} s in all)")
    print_table(["side", "completed", "throughput", "p50 call", "p95 call", "burst wall",
                 "peak RSS", "CPU (all processes)"], [_row(s, args.calls) for s in sides])
    print(f"\nRedis path overhead, {args.serial} runs one after another at L = 0:")
    rows = []
    for s in sides:
        rows.append([s.name, f"{statistics.median(s.serial_walls) * 1000:.0f} ms",
                     f"{s.serial_cpu_s / args.serial * 1000:.0f} ms",
                     f"{s.redis.get('commands_per_run', 0):.0f}" if s.redis else "-",
                     f"{s.redis.get('memory_per_run_kib', 0):.0f} KiB" if s.redis else "-"])
    print_table(["side", "wall per run (median)", "CPU per run (all processes)",
                 "Redis commands per run", "Redis memory per run"], rows)
    for s in sides:
        if s.phases:
            print(f"{s.name}: median " + ", ".join(f"{k} {v * 1000:.0f} ms"
                                                  for k, v in s.phases.items()))
    for s in sides:
        kept = sum(c.kept for c in s.burst.calls)
        if kept:
            print(f"  {s.name}: {kept} run(s) completed with the team's stored answer (its "
                  "presentation did not come back in time under this load; still its own)")
        if s.burst.session_errors:
            print(f"  {s.name}: {len(s.burst.session_errors)} MCP session(s) broke, e.g. "
                  f"{s.burst.session_errors[0]}")
    failed = [(s.name, c) for s in sides for c in s.burst.calls if not c.ok]
    for name, c in failed[:5]:
        print(f"  {name}: call {c.index} failed: {c.status or '-'} {c.error}")
    if errors:
        print(f"  scripted provider errors: {errors[:3]}")
    result: dict[str, Any] = {"load_before": load_before, "calls": args.calls,
                              "latency_s": args.latency, "sides": {}}
    for s in sides:
        walls = [c.wall for c in s.burst.calls if c.ok]
        total = s.burst.end - s.burst.start
        result["sides"][s.name] = {
            "completed": len(walls), "throughput_per_s": round(len(walls) / total, 2),
            "p50_s": round(percentile(walls, 50), 3), "p95_s": round(percentile(walls, 95), 3),
            "burst_s": round(total, 2), "peak_rss_kib": s.peak_kib,
            "session_errors": len(s.burst.session_errors),
            "kept_stored_answer": sum(c.kept for c in s.burst.calls),
            "cpu_s": {k: round(v, 2) for k, v in s.cpu_s.items()},
            "serial_wall_median_s": round(statistics.median(s.serial_walls), 4),
            "serial_cpu_per_run_s": round(s.serial_cpu_s / args.serial, 4), "redis": s.redis,
            "serial_phases_s": {k: round(v, 4) for k, v in s.phases.items()},
        }
    print_json("scale_out", result)
    return 0 if not failed and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
