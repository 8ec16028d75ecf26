"""Shared helpers for the benchmarks: the scripted provider in its own process, team files,
process and memory readings from /proc, and the table/JSON output.

The scripted provider (tests/scripted_provider.py) runs in a *separate process* here, not in
a thread of the benchmark: in a thread it would share the GIL with the orchestrator and the
SDKs, so every reply would queue behind our own work and the figures would mix the fake
model's CPU with ours. A real provider is remote; a process on the other core is closer.

    with ProviderProcess(latency=0.2) as p:
        team = team_data(p.root, [("a", "openai", "bench-0"), ...])

Every model named ``bench-<n>`` plays `consensus_agent`: answer, then vote for agent1, then
(when it won) present ``final for <task>``; ``benchtool-<n>`` first calls the
``mcp__t__echo`` tool once before its first answer. ``python bench/_common.py provider`` is
the child's entry point (a line protocol on stdin/stdout: ``latency S``, ``jitter S``,
``count``, ``errors``, ``reset``; EOF stops it).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

TEST_KEY = "test-key"  # what the scripted provider expects; not a real key
MODELS = 256  # bench-0 .. bench-255 are scripted
ECHO_TOOL = "mcp__t__echo"
_WIRES = {"openai": "chatcompletion", "anthropic": "claude", "gemini": "gemini"}


# ---------------------------------------------------------------------------- output


def load_average() -> str:
    """The 1/5/15-minute load averages, e.g. ``'2.31 1.80 1.42'``."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100), nearest-rank, so it is always an observed value."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]


def print_table(headers: list[str], rows: list[list[Any]]) -> None:
    """A plain aligned table on stdout (also valid Markdown, to paste into the README)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"

    print(line(cells[0]))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in cells[1:]:
        print(line(r))


def print_json(bench: str, data: dict[str, Any]) -> None:
    """The machine-readable result: one JSON line, last on stdout."""
    print(json.dumps({"bench": bench, "load_average": load_average(), **data}), flush=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


# ---------------------------------------------------------------------------- processes


def _stat_fields(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (children, grandchildren, ...), from /proc."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None and fields[0] != "Z":
                parent[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier} - found
        found |= frontier
    return found


def vm_kib(pid: int | str, field: str) -> int:
    """A `/proc/<pid>/status` memory field (VmRSS, VmHWM, ...) in KiB; 0 if unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def reset_peak_rss(pid: int | str = "self") -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0), so the next peak is this phase's."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = _stat_fields(pid)
    if fields is None:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------- teams


def backend(root: str, wire: str, model: str, **fields: Any) -> dict[str, Any]:
    """A team-file backend pointing at the scripted provider at `root`."""
    base = root + "/v1" if wire == "openai" else root
    return {"type": _WIRES[wire], "model": model, "base_url": base, "api_key": TEST_KEY,
            "max_retries": 0, **fields}


def team_data(root: str, n: int, wires: list[str], *, tools: list[str] | None = None,
              use_tools: bool = False, **orchestrator: Any) -> dict[str, Any]:
    """A team of `n` scripted agents, wires assigned round-robin; `tools` is the stdio
    command line of one MCP tool server (named ``t``) given to every agent, and `use_tools`
    makes the agents call it once."""
    agents = []
    prefix = "benchtool" if use_tools else "bench"
    for i in range(n):
        fields: dict[str, Any] = {}
        if tools:
            fields["mcp_servers"] = {"t": {"type": "stdio", "command": tools[0],
                                           "args": tools[1:]}}
        agents.append({"id": f"a{i:02d}",
                       "backend": backend(root, wires[i % len(wires)], f"{prefix}-{i}", **fields)})
    return {"agents": agents, "orchestrator": orchestrator}


# ---------------------------------------------------------------------------- the provider


class ProviderProcess:
    """The scripted provider in a child process; `latency` is settable while it runs."""

    def __init__(self, latency: float = 0.0) -> None:
        self._latency = latency
        self.proc: subprocess.Popen[str] | None = None
        self.root = ""

    def __enter__(self) -> ProviderProcess:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "provider"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, bufsize=1)
        self.root = self._read()
        self.latency = self._latency
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        assert self.proc.stdin is not None
        self.proc.stdin.close()  # EOF: the child stops serving and exits
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _read(self) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the scripted provider process exited")
        return line.strip()

    def _ask(self, command: str) -> str:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._read()

    @property
    def latency(self) -> float:
        return self._latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        self._latency = seconds
        self._ask(f"latency {seconds}")

    def set_jitter(self, seconds: float) -> None:
        """Add a random delay, uniform in [0, seconds], to every reply (0: none)."""
        self._ask(f"jitter {seconds}")

    def count(self) -> int:
        """HTTP requests the provider received since the last `reset()`."""
        return int(self._ask("count"))

    def errors(self) -> list[str]:
        """Exceptions raised by scripts (a benchmark bug if any)."""
        return json.loads(self._ask("errors"))

    def reset(self) -> None:
        self._ask("reset")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid


def task_of(text: str) -> str:
    """The task line of a coordination prompt."""
    return text.split("<ORIGINAL MESSAGE>\n", 1)[-1].split("\n", 1)[0]


def consensus_agent(req: Any) -> Any:
    """Answer, then vote for agent1; when it won, present ``final for <task>``."""
    from agents import answer_then_vote

    task = task_of(req.last_user_text)
    return answer_then_vote(f"answer to {task}", "agent1", final=f"final for {task}")(req)


def tool_agent(req: Any) -> Any:
    """`consensus_agent`, but first calls the echo tool once before its first answer."""
    from agents import has_answered, presenting
    from scripted_provider import Call, ToolCalls

    if (ECHO_TOOL in req.tool_names and not req.tool_results and not has_answered(req)
            and not presenting(req)):
        return ToolCalls([Call(ECHO_TOOL, {"text": "looked up"})])
    return consensus_agent(req)


def _install(p: Any) -> None:
    for i in range(MODELS):
        p.script(f"bench-{i}", consensus_agent)
        p.script(f"benchtool-{i}", tool_agent)


def _serve_provider() -> None:
    from scripted_provider import ScriptedProvider

    with ScriptedProvider() as p:
        _install(p)
        print(p.root, flush=True)
        for line in sys.stdin:
            cmd, _, arg = line.strip().partition(" ")
            if cmd == "latency":
                p.latency = float(arg)
                out = "ok"
            elif cmd == "jitter":
                p.jitter = float(arg)
                out = "ok"
            elif cmd == "count":
                out = str(len(p.requests))
            elif cmd == "errors":
                out = json.dumps([repr(e) for e in p.script_errors])
            elif cmd == "reset":  # forget what was received, keep the scripts and latency
                latency, jitter = p.latency, p.jitter
                p.reset()
                _install(p)
                p.latency, p.jitter = latency, jitter
                out = "ok"
            else:
                out = f"unknown command {cmd!r}"
            print(out, flush=True)


if __name__ == "__main__" and sys.argv[1:] == ["provider"]:
    _serve_provider()
