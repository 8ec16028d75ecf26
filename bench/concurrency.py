"""Benchmark: many concurrent `run_consensus` calls over streamable HTTP (not a test).

    python bench/concurrency.py [--calls 100] [--latency 0.2] [--clients 0]
                                [--wires openai,anthropic,gemini] [--timeout 600]

Starts `massgen-mcp --transport streamable-http --team <file>` as a subprocess (as
tests/mcp_harness.http_server does) with a 3-agent team on the loopback scripted provider,
which runs in its own process and adds `--latency` seconds to every reply. Then `--calls`
MCP SDK clients (`mcp.Client(url, mode="legacy")`) connect, and once all are connected
each calls `run_consensus` with its own task at the same moment, following progress.

One client (one MCP session) per call is the default: a shared server serves many users,
each with their own session, so this is the heavier case for the server (sessions plus
runs). `--clients N` instead spreads the calls over N sessions that each carry several
calls at once. The clients live in this process and compete with the server for the same
CPUs; this process's CPU time is printed so that can be judged.

Printed: how many calls completed with their own result (status completed and the final
answer of their own task), p50/p95/max wall per call (from the call to its result),
total wall (first call to last result), session set-up time, progress notifications per
call, and the server's peak RSS (VmHWM from /proc) with its RSS before the calls and the
CPU it used. Before the burst, one call warms the server up (the provider SDKs are imported
on first use); its time is printed on its own.
"""

from __future__ import annotations

import argparse
import os
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
    median,
    percentile,
    print_json,
    print_table,
    team_data,
    vm_kib,
)
from mcp import Client
from mcp_harness import http_server


@dataclass
class Call:
    index: int
    wall: float = 0.0
    ok: bool = False
    status: str = ""
    error: str = ""
    progress: int = 0
    kept: bool = False  # completed with the stored winning answer (presentation not used)


@dataclass
class Load:
    connect: list[float] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    start: float = 0.0
    end: float = 0.0
    session_errors: list[str] = field(default_factory=list)


async def _call(client: Client, call: Call, go: anyio.Event) -> None:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        call.progress += 1

    await go.wait()
    task = f"task-{call.index}"
    start = time.perf_counter()
    try:
        r = await client.call_tool("run_consensus", {"task": task},
                                   progress_callback=on_progress)
    except Exception as e:  # a failed call is a figure here, not a crash
        call.error = f"{type(e).__name__}: {e}"
        return
    finally:
        call.wall = time.perf_counter() - start
    data = r.structured_content or {}
    call.status = str(data.get("status", "error" if r.is_error else "?"))
    # Its own result: the presented answer, or (a presentation that failed under load keeps
    # the team's stored answer, truthfully) the winning answer itself; another task's text
    # in either would fail the check.
    final = data.get("final_answer")
    call.kept = final == f"answer to {task}"
    call.ok = (not r.is_error and call.status == "completed"
               and (final == f"final for {task}" or call.kept))
    if not call.ok:
        call.error = str(data.get("error") or r.content)[:300]


async def _session(url: str, calls: list[Call], load: Load, go: anyio.Event,
                   sessions: int, all_connected: anyio.Event) -> None:
    start = time.perf_counter()
    connected = False
    try:
        async with Client(url, mode="legacy") as client:
            connected = True
            load.connect.append(time.perf_counter() - start)
            if len(load.connect) + len(load.session_errors) == sessions:
                all_connected.set()
            async with anyio.create_task_group() as tg:
                for call in calls:
                    tg.start_soon(_call, client, call, go)
    except Exception as e:  # a broken session is a figure too (its calls failed), not a crash
        leaf: BaseException = e
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        load.session_errors.append(f"{type(leaf).__name__}: {leaf}"[:300])
        if not connected and len(load.connect) + len(load.session_errors) == sessions:
            all_connected.set()
        for call in calls:
            if not call.ok and not call.error:
                call.error = f"the session failed: {load.session_errors[-1]}"
            if not call.wall:
                call.wall = time.perf_counter() - (load.start or start)


async def _first_call(url: str, timeout: float) -> float:
    """Seconds for one run_consensus on a fresh server (it imports the provider SDKs)."""
    call = Call(-1)
    with anyio.fail_after(timeout):
        async with Client(url, mode="legacy") as client:
            go = anyio.Event()
            go.set()
            await _call(client, call, go)
    if not call.ok:
        raise SystemExit(f"the warm-up call failed: {call.status} {call.error}")
    return call.wall


async def _drive(url: str, n_calls: int, n_clients: int, timeout: float) -> Load:
    load = Load(calls=[Call(i) for i in range(n_calls)])
    sessions = n_clients or n_calls
    shares = [load.calls[i::sessions] for i in range(sessions)]
    shares = [share for share in shares if share]
    go, all_connected = anyio.Event(), anyio.Event()
    with anyio.fail_after(timeout):
        async with anyio.create_task_group() as tg:
            for share in shares:
                tg.start_soon(_session, url, share, load, go, len(shares), all_connected)
            await all_connected.wait()  # every session is open: now fire every call at once
            load.start = time.perf_counter()
            go.set()

            async def done() -> None:
                while not all(c.wall for c in load.calls):
                    await anyio.sleep(0.05)
                load.end = time.perf_counter()

            tg.start_soon(done)
    return load


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=100, help="concurrent run_consensus calls")
    p.add_argument("--latency", type=float, default=0.2,
                   help="seconds the scripted provider adds to every reply (default 0.2)")
    p.add_argument("--clients", type=int, default=0,
                   help="MCP sessions to spread the calls over (default 0: one per call)")
    p.add_argument("--wires", default="openai,anthropic,gemini",
                   help="wire formats of the 3 agents, comma separated")
    p.add_argument("--timeout", type=float, default=600, help="give up after this many s")
    args = p.parse_args()
    wires = [w for w in args.wires.split(",") if w]
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp_name, ProviderProcess(args.latency) as provider:
        tmp = Path(tmp_name)
        team = tmp / "team.yaml"
        team.write_text(yaml.safe_dump(team_data(provider.root, 3, wires)))
        with http_server(tmp, "--team", str(team)) as server:
            pid = server.proc.pid
            rss_start = vm_kib(pid, "VmRSS")
            cpu0 = cpu_seconds(pid)
            first = anyio.run(_first_call, server.url, args.timeout)
            first_cpu = cpu_seconds(pid) - cpu0
            rss_idle = vm_kib(pid, "VmRSS")
            cpu0, own0 = cpu_seconds(pid), cpu_seconds(os.getpid())
            load = anyio.run(_drive, server.url, args.calls, args.clients, args.timeout)
            peak = vm_kib(pid, "VmHWM")
            rss_after = vm_kib(pid, "VmRSS")
            server_cpu = cpu_seconds(pid) - cpu0
            own_cpu = cpu_seconds(os.getpid()) - own0
        requests = provider.count()
    load_after = load_average()

    walls = [c.wall for c in load.calls if c.ok]
    failed = [c for c in load.calls if not c.ok]
    total = load.end - load.start
    sessions = args.clients or args.calls
    print(f"\n{args.calls} concurrent run_consensus calls over streamable HTTP, {sessions} "
          f"session(s), 3 agents ({'+'.join(wires)}), L = {args.latency * 1000:.0f} ms (load "
          f"average {load_before} before, {load_after} after; {os.cpu_count()} CPUs)")
    print_table(
        ["completed", "p50 call", "p95 call", "max call", "total wall", "session set-up p50",
         "progress/call", "server peak RSS", "server RSS before", "server CPU", "client CPU",
         "provider requests"],
        [[f"{len(walls)}/{args.calls}", f"{percentile(walls, 50):.2f} s",
          f"{percentile(walls, 95):.2f} s", f"{max(walls, default=float('nan')):.2f} s",
          f"{total:.2f} s", f"{median(load.connect) * 1000:.0f} ms",
          f"{median([c.progress for c in load.calls]):.0f}", f"{peak / 1024:.0f} MiB",
          f"{rss_idle / 1024:.0f} MiB", f"{server_cpu:.1f} s", f"{own_cpu:.1f} s", requests]])
    print(f"before the burst: one call on the fresh server took {first:.2f} s and "
          f"{first_cpu:.1f} s of server CPU (the provider SDKs load on first use); server RSS "
          f"{rss_start / 1024:.0f} MiB at start, {rss_idle / 1024:.0f} MiB after that call")
    for c in failed[:5]:
        print(f"  call {c.index} failed: {c.status or '-'} {c.error}")
    result: dict[str, Any] = {
        "load_before": load_before, "calls": args.calls, "sessions": sessions,
        "latency_s": args.latency, "wires": wires, "completed": len(walls),
        "p50_s": round(percentile(walls, 50), 3), "p95_s": round(percentile(walls, 95), 3),
        "max_s": round(max(walls, default=0.0), 3), "total_s": round(total, 3),
        "connect_p50_s": round(median(load.connect), 3),
        "first_call_s": round(first, 3), "first_call_server_cpu_s": round(first_cpu, 2),
        "server_rss_start_kib": rss_start,
        "server_peak_rss_kib": peak, "server_rss_idle_kib": rss_idle,
        "server_rss_after_kib": rss_after, "server_cpu_s": round(server_cpu, 2),
        "client_cpu_s": round(own_cpu, 2), "provider_requests": requests,
    }
    print_json("concurrency", result)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
