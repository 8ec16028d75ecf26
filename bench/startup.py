"""Benchmark: how fast `massgen-mcp` answers its first `tools/list` (not a test).

    python bench/startup.py [--runs 10] [--importtime-runs 3]

Spawns `massgen-mcp` (stdio, no provider key, a clean working directory) and, interleaved
with it in the same run, a bare `MCPServer` with one tool written to a temp file and started
with the same Python; each time an MCP SDK client (`mcp.Client`, legacy mode) spawns the
server, initializes and lists the tools. The figure is the time from spawn to the
`tools/list` response; the median of `--runs` per server, after one warm-up each. The two
are spawned in pairs, alternating which goes first (ABBA), and the headline ratio is the
median of the per-pair ratios, so a load spike costs both servers of a pair alike. Goal
(issue 19): massgen-mcp <= 1.05 x the bare server. Beside the wall time, the CPU time each
server process used up to its `tools/list` answer (every thread, from /proc on Linux), paired
the same way: on a loaded machine it moves much less than the wall time.

Bytecode is cached as in a real install (pip compiles it): `PYTHONDONTWRITEBYTECODE` is
dropped and `PYTHONPYCACHEPREFIX` points into a temp dir, filled by the warm-up.

Also printed, so the start-up can be trimmed:
- whether importing `massgen_mcp.server` imports openai / anthropic / google.genai (it must
  not: the provider SDKs load when a run needs them);
- the import time of `massgen_mcp.server` (`python -X importtime`, median per module over
  `--importtime-runs`) beside a bare `import mcp.server.mcpserver`; our 15 slowest modules
  (cumulative) up to a built server; and the self time of every module that a built server
  loads and the bare SDK import does not, i.e. what our imports add;
- the phases of start-up in one process (import, App, build_server) and the import time
  of each provider SDK, which the first run on a fresh server pays.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import anyio
from _common import load_average, median, print_json, print_table
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

GOAL_RATIO = 1.05
EXE = Path(sys.executable).with_name("massgen-mcp")
PROVIDER_SDKS = ("openai", "anthropic", "google.genai")
RUN_ONLY = (*PROVIDER_SDKS, "yaml")  # what only a run needs: never imported at start
# What `massgen-mcp` does before it serves, phase by phase (internal API: it may move).
PHASES = """\
import json, sys, time
t0 = time.perf_counter()
import massgen_mcp.server as server
t1 = time.perf_counter()
from massgen_mcp.paths import state_dir
from massgen_mcp.app import App
app = App(state_dir(sys.argv[1]), default_team=None, checkpoint_team=None)
t2 = time.perf_counter()
server.build_server(app)
t3 = time.perf_counter()
print(json.dumps({"import massgen_mcp.server": t1 - t0, "App()": t2 - t1,
                  "build_server() (catalog, extensions)": t3 - t2}))
"""
BARE_SERVER = '''\
from mcp.server.mcpserver import MCPServer

server = MCPServer("bare")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    server.run()
'''


def _env(pycache: Path) -> dict[str, str]:
    """This environment without provider keys or our state variables, bytecode cached."""
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and not k.startswith("MASSGEN_MCP")
           and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _children() -> list[int]:
    """This process's child processes (Linux /proc; [] elsewhere)."""
    me = str(os.getpid())
    found = []
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[1] == me:
            found.append(int(entry.parent.name))
    return found


def _cpu_seconds(pid: int) -> float | None:
    """CPU time the process has used so far, every thread's (ns-exact from schedstat)."""
    try:
        return sum(int((t / "schedstat").read_text().split()[0])
                   for t in Path(f"/proc/{pid}/task").iterdir()) / 1e9
    except (OSError, ValueError, IndexError):
        return None


async def _time_to_tools(params: StdioServerParameters) -> tuple[float, int, float | None]:
    """Seconds from spawn to the tools/list response, how many tools it lists, and the CPU
    seconds the server process used until then (None where /proc cannot tell)."""
    with open(os.devnull, "w") as devnull:
        start = time.perf_counter()
        async with Client(stdio_client(params, errlog=devnull), mode="legacy") as client:
            tools = (await client.list_tools()).tools
            elapsed = time.perf_counter() - start
            pids = _children()
            cpu = _cpu_seconds(pids[0]) if len(pids) == 1 else None
            return elapsed, len(tools), cpu


@dataclass
class Spawns:
    times: dict[str, list[float]]  # wall seconds to tools/list, per server
    ratios: list[float]  # per pair
    cpu: dict[str, list[float]]  # CPU seconds of the server process to tools/list
    cpu_ratios: list[float]


async def _startup(runs: int, tmp: Path, env: dict[str, str]) -> Spawns:
    bare = tmp / "bare_server.py"
    bare.write_text(BARE_SERVER)
    work = tmp / "work"
    work.mkdir()
    servers = {
        "massgen-mcp": StdioServerParameters(command=str(EXE), args=[], env=env, cwd=str(work)),
        "bare MCPServer, 1 tool": StdioServerParameters(command=sys.executable, args=[str(bare)],
                                                        env=env, cwd=str(work)),
    }
    out = Spawns({name: [] for name in servers}, [], {name: [] for name in servers}, [])
    for name, params in servers.items():  # warm-up: fills the bytecode cache
        _, count, _ = await _time_to_tools(params)
        if count == 0:
            raise SystemExit(f"{name} listed no tools")
    names = list(servers)
    for i in range(runs):
        pair: dict[str, float] = {}
        cpu: dict[str, float | None] = {}
        for name in names if i % 2 == 0 else names[::-1]:  # ABBA: neither always goes first
            pair[name], _, cpu[name] = await _time_to_tools(servers[name])
            out.times[name].append(pair[name])
        out.ratios.append(pair["massgen-mcp"] / pair["bare MCPServer, 1 tool"])
        ours, bare = cpu["massgen-mcp"], cpu["bare MCPServer, 1 tool"]
        if ours and bare:
            out.cpu["massgen-mcp"].append(ours)
            out.cpu["bare MCPServer, 1 tool"].append(bare)
            out.cpu_ratios.append(ours / bare)
    return out


def _sdks_imported(env: dict[str, str]) -> list[str]:
    code = ("import massgen_mcp.server, sys; "
            f"print(','.join(m for m in {RUN_ONLY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return [m for m in out.stdout.strip().split(",") if m]


_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


@dataclass(frozen=True)
class Imported:
    name: str
    depth: int
    self_us: int  # median over the runs
    cumulative_us: int


def _importtime(argv: list[str], env: dict[str, str], runs: int) -> list[Imported]:
    """One entry per line of `python -X importtime <argv>`, medians over `runs`.

    A module may appear twice: `import a.b` where `a/__init__` itself imports `a.b`
    prints `a.b` nested under `a`, then once more at depth 0.
    """
    seen: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-X", "importtime", *argv], env=env,
                             capture_output=True, text=True, check=True)
        for line in out.stderr.splitlines():
            m = _LINE.match(line)
            if m:
                key = (m.group(4), len(m.group(3)) // 2)
                seen[key].append((int(m.group(1)), int(m.group(2))))
    return [Imported(name, depth, int(median([s for s, _ in v])), int(median([c for _, c in v])))
            for (name, depth), v in seen.items()]


def _phases(env: dict[str, str], state: Path, runs: int) -> dict[str, float] | None:
    """Median seconds of each start-up phase in a fresh process; None if the API moved."""
    got: dict[str, list[float]] = defaultdict(list)
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", PHASES, str(state)], env=env,
                             capture_output=True, text=True)
        if out.returncode != 0:
            print(f"(start-up phases not measured: {out.stderr.strip().splitlines()[-1:]})")
            return None
        for name, seconds in json.loads(out.stdout).items():
            got[name].append(seconds)
    return {name: median(v) for name, v in got.items()}


def _import_seconds(module: str, env: dict[str, str], runs: int) -> float:
    """Median time of `import module` measured inside a fresh process (without the
    interpreter's start-up and exit, which grow with the number of modules loaded)."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    return median([float(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                         capture_output=True, text=True).stdout)
                   for _ in range(runs)])


def _process_seconds(code: str, env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
        times.append(time.perf_counter() - start)
    return median(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=30, help="spawns per server (default 30)")
    p.add_argument("--sdk-runs", type=int, default=3,
                   help="runs per provider SDK import timing (default 3; 0 skips it)")
    p.add_argument("--importtime-runs", type=int, default=3,
                   help="python -X importtime runs to take the median of (default 3)")
    args = p.parse_args()
    if not EXE.exists():
        raise SystemExit(f"no console script at {EXE}: install the package first")
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        env = _env(tmp / "pycache")
        spawns = anyio.run(_startup, args.runs, tmp, env)
        times, ratios = spawns.times, spawns.ratios
        sdks = _sdks_imported(env)
        ours = _importtime(["-c", "import massgen_mcp.server"], env, args.importtime_runs)
        sdk_only = _importtime(["-c", "import mcp.server.mcpserver"], env,
                               args.importtime_runs)
        built = _importtime(["-c", PHASES, str(tmp / "state")], env, args.importtime_runs)
        phases = _phases(env, tmp / "state", 5)
        import_ours = _import_seconds("massgen_mcp.server", env, 5)
        import_sdk = _import_seconds("mcp.server.mcpserver", env, 5)
        interpreter = _process_seconds("pass", env, 5)
        sdk_imports = {sdk: _import_seconds(sdk, env, args.sdk_runs)
                       for sdk in PROVIDER_SDKS if args.sdk_runs}
    load_after = load_average()

    medians = {name: median(t) for name, t in times.items()}
    ratio = median(ratios)  # per pair: both servers of a pair met the same load
    ratio_of_medians = medians["massgen-mcp"] / medians["bare MCPServer, 1 tool"]
    print(f"\nStart-up to the first tools/list over stdio (median of {args.runs} interleaved "
          f"spawns; load average {load_before} before, {load_after} after; "
          f"{os.cpu_count()} CPUs)")
    print_table(["server", "median", "min", "max"],
                [[name, f"{medians[name] * 1000:.0f} ms", f"{min(t) * 1000:.0f} ms",
                  f"{max(t) * 1000:.0f} ms"] for name, t in times.items()])
    print(f"ratio massgen-mcp / bare, median of the {len(ratios)} pairs: {ratio:.3f} (goal <= "
          f"{GOAL_RATIO}) -> {'met' if ratio <= GOAL_RATIO else 'NOT met'}; ratio of the "
          f"medians: {ratio_of_medians:.3f}")
    if spawns.cpu_ratios:
        cpu = {name: median(v) for name, v in spawns.cpu.items()}
        print(f"CPU time of the server process to the first tools/list (every thread; less "
              f"sensitive to load than wall time): massgen-mcp {cpu['massgen-mcp'] * 1000:.0f} "
              f"ms, bare {cpu['bare MCPServer, 1 tool'] * 1000:.0f} ms; ratio, median of the "
              f"{len(spawns.cpu_ratios)} pairs: {median(spawns.cpu_ratios):.3f}")
    # The SDK's logging set-up imports rich when it is there (a dev tool's dependency here):
    # the bare server pays it; massgen-mcp skips that set-up (server/sdk_adapter.py).
    rich = importlib.util.find_spec("rich") is not None
    print("rich installed: " + ("yes: the bare MCPServer() imports it to set up logging, "
                                "which massgen-mcp skips" if rich
                                else "no (as in a plain install)"))
    print(f"\nrun-only modules (provider SDKs, PyYAML) imported by `import massgen_mcp.server`: "
          f"{sdks or 'none'} -> "
          f"{'NOT met' if sdks else 'met'}")
    print(f"median of 5: python -c pass {interpreter * 1000:.0f} ms (process); in a fresh "
          f"process, import mcp.server.mcpserver {import_sdk * 1000:.0f} ms, import "
          f"massgen_mcp.server {import_ours * 1000:.0f} ms")

    if sdk_imports:
        print("provider SDK import, paid once per server process by the first run that uses "
              "it (median): " + ", ".join(f"{k} {v * 1000:.0f} ms"
                                           for k, v in sdk_imports.items()))

    total_ours = next(i.cumulative_us for i in ours
                      if i.name == "massgen_mcp.server" and i.depth == 0)
    total_sdk = next(i.cumulative_us for i in sdk_only
                     if i.name == "mcp.server.mcpserver" and i.depth == 0)
    print(f"\n-X importtime: massgen_mcp.server {total_ours / 1000:.0f} ms cumulative, "
          f"mcp.server.mcpserver alone {total_sdk / 1000:.0f} ms")
    if phases:
        print("\nstart-up phases in one process (median of 5):")
        print_table(["phase", "time"], [[k, f"{v * 1000:.0f} ms"] for k, v in phases.items()])
    # Modules of ours up to a built server, so those build_server() imports count too.
    best: dict[str, Imported] = {}
    for i in built:
        if i.name.startswith("massgen_mcp") and (
                i.name not in best or i.cumulative_us > best[i.name].cumulative_us):
            best[i.name] = i
    mine = sorted(best.values(), key=lambda i: -i.cumulative_us)[:15]
    print("\nour 15 slowest modules up to a built server (cumulative includes whatever a module "
          "imports first: massgen_mcp.server carries the MCP SDK):")
    print_table(["module", "cumulative", "self"],
                [[i.name, f"{i.cumulative_us / 1000:.1f} ms", f"{i.self_us / 1000:.1f} ms"]
                 for i in mine])
    # What the server costs beyond the SDK: self time of every module the bare SDK import
    # does not load, by package (massgen_mcp modules one by one).
    sdk_names = {i.name for i in sdk_only}
    extra: dict[str, int] = defaultdict(int)
    for i in built:
        if i.name not in sdk_names:
            extra[i.name if i.name.startswith("massgen_mcp") else i.name.split(".")[0]] += (
                i.self_us)
    pulled = sorted(extra.items(), key=lambda x: -x[1])[:12]
    print(f"\nimport time beyond `import mcp.server.mcpserver`: {sum(extra.values()) / 1000:.0f} "
          f"ms self time in {len([i for i in built if i.name not in sdk_names])} modules; the "
          "largest (by module of ours, by package otherwise):")
    print_table(["module / package", "self"], [[n, f"{us / 1000:.1f} ms"] for n, us in pulled])

    print_json("startup", {
        "load_before": load_before, "runs": args.runs,
        "median_s": {k: round(v, 4) for k, v in medians.items()},
        "ratio": round(ratio, 3), "ratio_of_medians": round(ratio_of_medians, 3),
        "goal_met": ratio <= GOAL_RATIO, "rich_installed": rich,
        "cpu_median_s": {k: round(median(v), 4) for k, v in spawns.cpu.items() if v},
        "cpu_ratio": round(median(spawns.cpu_ratios), 3) if spawns.cpu_ratios else None,
        "provider_sdks_imported": sdks,
        "import_s": {"interpreter": round(interpreter, 4), "mcp.server.mcpserver":
                     round(import_sdk, 4), "massgen_mcp.server": round(import_ours, 4)},
        "importtime_ms": {"massgen_mcp.server": round(total_ours / 1000, 1),
                          "mcp.server.mcpserver": round(total_sdk / 1000, 1)},
        "sdk_import_s": {k: round(v, 4) for k, v in sdk_imports.items()},
        "phases_s": {k: round(v, 4) for k, v in (phases or {}).items()},
        "slowest_modules_ms": {i.name: round(i.cumulative_us / 1000, 1) for i in mine},
        "extra_import_self_ms": round(sum(extra.values()) / 1000, 1),
        "extra_import_largest_ms": {n: round(us / 1000, 1) for n, us in pulled},
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
