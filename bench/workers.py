"""Benchmark: what handing a run to a worker costs, and how fast a cancel crosses processes
(not a test).

    python bench/workers.py [--runs 10] [--latency 0,0.2] [--concurrent 20] [--cancels 5]

Starts Debian's redis-server on a free loopback port (tests/redis_server.py), the scripted
provider in its own process (bench/_common.py, latency L per reply) and one
`massgen-mcp worker` subprocess (--concurrency 8). The team is 3 scripted agents.

- in-process: `App` on the Redis store executing the run itself (as `--run-here`);
- worker: the same `App` as a front end (`hand_runs_to_workers`): the run is queued, the worker
  executes it, the front end follows its event stream to the final record.
Sequential runs (`--runs`, after one warm-up each), then `--concurrent` runs at once; figures
are medians (ms). The worker path's overhead per run is the difference of the medians.

- cancel: a run through the worker whose provider replies take 30 s; once the worker has
  taken it, another store (another replica's view) calls `request_cancel`; the time until
  the run's final record says `cancelled` (followed on its stream).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _common import ProviderProcess, load_average, median, print_table, team_data
from redis_server import RedisServer

EXE = str(Path(sys.executable).parent / "massgen-mcp")


def start_worker(cwd: Path, url: str, team: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([EXE, "worker", "--store", url, "--team", str(team),
                             "--concurrency", "8", "--drain", "0"], cwd=cwd,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "taking runs from" in line:
            return proc
    raise RuntimeError("the worker did not start")


def app_on(url: str, state: Path, team: Path, dispatch: bool) -> Any:
    from massgen_mcp.app import App
    from massgen_mcp.config.env import Environment
    from massgen_mcp.runs.store_open import open_store

    app = App(state, default_team=str(team), env=Environment({}), cwd=state.parent,
              store=open_store(url, state))
    if dispatch:
        app.hand_runs_to_workers(120)
    return app


async def one_run(app: Any, task: str) -> float:
    team = await app.tool_team()
    start = time.perf_counter()
    result = await app.consensus(team, task).start()
    took = time.perf_counter() - start
    assert result.status == "completed", (result.status, result.error)
    return took


async def sequential(app: Any, runs: int) -> float:
    await one_run(app, "warm up")
    return median([await one_run(app, f"task {i}") for i in range(runs)])


async def concurrent(app: Any, n: int) -> float:
    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one_run, app, f"concurrent {i}")
    return time.perf_counter() - start


async def cancel_latency(front: Any, other: Any, trials: int) -> list[float]:
    out = []
    for i in range(trials):
        team = await front.tool_team()
        prepared = front.consensus(team, f"cancel me {i}")
        async with anyio.create_task_group() as tg:
            tg.start_soon(prepared.start)
            async for event in front.store.follow(prepared.run_id):
                if event.get("kind") == "worker_started":
                    break
            start = time.perf_counter()
            assert other.store.request_cancel(prepared.run_id)
            async for event in other.store.follow(prepared.run_id):
                if event.get("kind") == "run_finished":
                    break
            out.append(time.perf_counter() - start)
            assert other.get_run(prepared.run_id).status == "cancelled"
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--latency", default="0,0.2")
    parser.add_argument("--concurrent", type=int, default=20)
    parser.add_argument("--cancels", type=int, default=5)
    args = parser.parse_args()
    rows: list[list[Any]] = []
    with tempfile.TemporaryDirectory() as tmp, RedisServer() as redis, \
            ProviderProcess() as provider:
        root = Path(tmp)
        team = root / "team.yaml"
        team.write_text(yaml.safe_dump(team_data(provider.root, 3,
                                                 ["openai", "anthropic", "gemini"])))
        worker = start_worker(root, redis.url, team)
        try:
            here = app_on(redis.url, root / "here" / ".massgen", team, dispatch=False)
            front = app_on(redis.url, root / "front" / ".massgen", team, dispatch=True)
            other = app_on(redis.url, root / "other" / ".massgen", team, dispatch=True)

            async def measure() -> list[float]:  # one event loop: the queue's client is its
                for latency in [float(x) for x in args.latency.split(",")]:
                    provider.latency = latency
                    a = await sequential(here, args.runs)
                    b = await sequential(front, args.runs)
                    ca = await concurrent(here, args.concurrent)
                    cb = await concurrent(front, args.concurrent)
                    rows.append([f"{latency * 1000:.0f}", f"{a * 1000:.0f}",
                                 f"{b * 1000:.0f}", f"{(b - a) * 1000:+.0f}",
                                 f"{ca * 1000:.0f}", f"{cb * 1000:.0f}"])
                provider.latency = 30.0
                return await cancel_latency(front, other, args.cancels)

            cancels = anyio.run(measure)
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(30)
    print(f"load average {load_average()}; 3 agents; one worker (--concurrency 8)")
    print_table(["L ms", "in-process ms", "worker ms", "overhead ms",
                 f"{args.concurrent} at once here ms", f"{args.concurrent} via worker ms"], rows)
    print(f"cancel across processes (request_cancel -> final record): median "
          f"{median(cancels) * 1000:.0f} ms, max {max(cancels) * 1000:.0f} ms "
          f"over {len(cancels)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
