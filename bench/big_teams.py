"""Benchmark: big teams, k reviewers against all-to-all (issue 31; not a test).

    python bench/big_teams.py [--agents 3,8,16,50] [--k 4] [--latency 0.05]
                              [--answer-chars 600] [--state-dir DIR]

Each team of N function agents (backends/function.py: in process, no wire, so the figures
are the orchestration's own) answers with an answer of about `--answer-chars` characters,
then votes for the first answer it may vote for; the winner presents. Every reply waits
`--latency` seconds (a model's think time; it makes the answer round land together, as real
first answers do within a round). Each size is run twice: k reviewers (the default above 5
agents) and all-to-all (`all_to_all_max_agents: 64`).

Columns: calls (provider calls; 2N+1 is one answer, one vote each and the presentation),
prompt chars (characters of every message sent, summed over the run), largest prompt (the
biggest single request), span (wall time of the run), the status.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_json, print_table

from massgen_mcp.backends.function import FunctionCall, register_function
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.messages import Turn
from massgen_mcp.runs.engine import Engine


class Meter:
    """Counts what the function agents were sent."""

    def __init__(self, latency: float, answer_chars: int) -> None:
        self.latency, self.answer_chars = latency, answer_chars
        self.prompts: list[int] = []

    async def agent(self, call: FunctionCall) -> Turn:
        self.prompts.append(sum(len(m.content) for m in call.messages))
        if self.latency:
            await asyncio.sleep(self.latency)
        step = call.step
        if step.presenting:
            return call.answer(f"final answer of {call.agent_id}")
        if not step.answered:
            body = f"{call.agent_id} proposes a queue design. " * (self.answer_chars // 40 + 1)
            return call.answer(body[:self.answer_chars])
        return call.vote(sorted(step.vote_targets)[0], "the clearest design")


async def one_run(n: int, all_to_all: bool, meter: Meter, state: Path) -> dict[str, Any]:
    meter.prompts = []
    orchestrator: dict[str, Any] = {"first_answer_wait_seconds": 60}
    if all_to_all:
        orchestrator["all_to_all_max_agents"] = 64
    data = {"agents": [{"id": f"agent_{i:02d}", "backend": {"type": "function",
                                                             "model": "big-team-bench"}}
                       for i in range(n)], "orchestrator": orchestrator}
    team = team_from_data(data, "bench", Environment({}))
    engine = Engine(state / ".massgen", Environment({}))
    t0 = time.perf_counter()
    task = "Which message queue should we use for 10k events/s?"
    result = await engine.prepare(team, task).start()
    span = time.perf_counter() - t0
    return {"agents": n, "review": "all-to-all" if all_to_all else
            (f"k={result.reviews.per_agent}" if result.reviews else "all-to-all"),
            "calls": result.totals.provider_calls, "ideal_calls": 2 * n + 1,
            "prompt_chars": sum(meter.prompts), "largest_prompt": max(meter.prompts),
            "span_s": round(span, 3), "status": result.status}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", default="3,8,16,50")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--answer-chars", type=int, default=600)
    ap.add_argument("--state-dir", default=None)
    args = ap.parse_args()
    meter = Meter(args.latency, args.answer_chars)
    register_function("big-team-bench", meter.agent)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(args.state_dir or tmp)
        for n in (int(x) for x in args.agents.split(",")):
            for all_to_all in (False, True):
                if all_to_all and n <= 5:
                    continue  # the same run: small teams are all-to-all by default
                rows.append(await one_run(n, all_to_all, meter, state))
    headers = ["agents", "review", "calls", "ideal_calls", "prompt_chars", "largest_prompt",
               "span_s", "status"]
    print_table(headers, [[r[h] for h in headers] for r in rows])
    print_json("big_teams", {"rows": rows, "latency": args.latency,
                             "answer_chars": args.answer_chars})


if __name__ == "__main__":
    asyncio.run(main())
