"""Benchmark: what a run record costs in each store, files vs Redis (not a test).

    python bench/store.py [--events 3000] [--runs 200] [--follow 200] [--url redis://...]

Starts Debian's redis-server on a free loopback port (tests/redis_server.py; or uses --url)
and drives the two `RunRecords` directly, as the orchestrator does:

- event: one `RunRecordWriter.event()` (the orchestrator's event sink, called synchronously
  in the event loop): a typical event (~200 bytes) and an `answer` event carrying 2 KB of
  text. Redis: one XADD on the synchronous client (decision 2: must stay < 0.5 ms).
- run: a whole record without the events: `open()` (meta, first status, lease), 8
  `status()` rewrites (what a 3-agent run writes), `finish()` (final record + counters),
  then one `load()`: the store's own overhead per run.
- follow: from `event()` to a follower in the same process receiving it (file store: its
  0.2 s poll; Redis: XREAD BLOCK), median and p95.

Figures are medians over the iterations (ms); the machine's load average is printed with
them (this machine is shared: compare the two columns of one run, not runs of two days).
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
from _common import load_average, percentile

from massgen_mcp.coordination.result import AgentInfo, RunResult, UsageInfo
from massgen_mcp.redaction import Redactor
from massgen_mcp.runs.store import RunRecords, new_run_id
from massgen_mcp.runs.store_open import open_store

REDACTOR = Redactor(["sk-bench-not-a-real-key-0123456789"])  # redaction is part of the cost
SMALL = {"agent": "agent2", "label": "agent2.1", "agents_with_answers": 2,
         "message": "agent2 answered (2/3 have answered)"}
ANSWER = {**SMALL, "text": "Use SQS with a dead-letter queue. " * 60}


def _result(run_id: str, status: str = "running") -> RunResult:
    agents = [AgentInfo(agent_id=f"agent{i}", anonymous_id=f"agent{i}", provider="openai",
                        model="gpt-5-mini", status="answered", answers=1,
                        usage=UsageInfo(input_tokens=900, output_tokens=300,
                                        total_tokens=1200, provider_calls=3))
              for i in (1, 2, 3)]
    return RunResult(run_id=run_id, status=status, task="Which queue?", team="bench",  # type: ignore[arg-type]
                     agents=agents, final_answer="Use SQS" if status != "running" else None)


def bench_events(store: RunRecords, n: int) -> dict[str, float]:
    run_id = new_run_id()
    w = store.open(run_id, REDACTOR, {"task": "bench events"})
    small, big = [], []
    for i in range(n):
        data = ANSWER if i % 10 == 0 else SMALL
        t = time.perf_counter()
        w.event("answer" if i % 10 == 0 else "thinking", dict(data))
        (big if i % 10 == 0 else small).append((time.perf_counter() - t) * 1000)
    w.finish(_result(run_id, "completed"))
    return {"event_ms": statistics.median(small), "event_p95_ms": percentile(small, 95),
            "answer_event_ms": statistics.median(big)}


def bench_runs(store: RunRecords, n: int) -> dict[str, float]:
    times = []
    for _ in range(n):
        run_id = new_run_id()
        t = time.perf_counter()
        w = store.open(run_id, REDACTOR, {"task": "bench run", "agents": []})
        for _ in range(8):
            w.status(_result(run_id))
        w.finish(_result(run_id, "completed"))
        store.load(run_id)
        times.append((time.perf_counter() - t) * 1000)
    return {"run_ms": statistics.median(times), "run_p95_ms": percentile(times, 95)}


async def bench_follow(store: RunRecords, n: int) -> dict[str, float]:
    run_id = new_run_id()
    w = store.open(run_id, REDACTOR, {"task": "bench follow"})
    w.status(_result(run_id))
    sent: dict[int, float] = {}
    lags: list[float] = []

    async def follow() -> None:
        async for event in store.follow(run_id):
            if event.get("seq") in sent:
                lags.append((time.perf_counter() - sent[event["seq"]]) * 1000)

    async with anyio.create_task_group() as tg:
        tg.start_soon(follow)
        await anyio.sleep(0.3)  # the follower is waiting (a benchmark may sleep)
        for _ in range(n):
            line = w.event("thinking", dict(SMALL))
            sent[line["seq"]] = time.perf_counter()
            await anyio.sleep(0.01)
        w.finish(_result(run_id, "completed"))
    return {"follow_ms": statistics.median(lags), "follow_p95_ms": percentile(lags, 95)}


def measure(url: str | None, state: Path, args: argparse.Namespace) -> dict[str, Any]:
    store = open_store(url, state)
    out: dict[str, Any] = {}
    out.update(bench_events(store, args.events))
    out.update(bench_runs(store, args.runs))
    out.update(anyio.run(bench_follow, store, args.follow))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=3000)
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--follow", type=int, default=200)
    p.add_argument("--url", default=None, help="an existing Redis (default: start one)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="massgen-bench-store-") as tmp:
        server = None
        url = args.url
        if url is None:
            from redis_server import RedisServer

            server = RedisServer().start()
            url = server.url
        try:
            figures = {"files": measure(None, Path(tmp) / "files", args),
                       "redis": measure(url, Path(tmp) / "redis", args)}
        finally:
            if server is not None:
                server.close()
    figures["load"] = load_average()  # type: ignore[assignment]
    if args.json:
        print(json.dumps(figures, indent=1))
        return 0
    rows = [("event (small) ms", "event_ms"), ("event p95 ms", "event_p95_ms"),
            ("answer event (2 KB) ms", "answer_event_ms"),
            ("record per run ms", "run_ms"), ("record per run p95 ms", "run_p95_ms"),
            ("follow lag ms", "follow_ms"), ("follow lag p95 ms", "follow_p95_ms")]
    print(f"{'':26}{'files':>10}{'redis':>10}    load {figures['load']}")
    for label, k in rows:
        print(f"{label:26}{figures['files'][k]:10.3f}{figures['redis'][k]:10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
