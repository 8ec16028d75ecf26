"""Benchmark: wall time of the PreToolUse hook as a process, per call (not a test).

    python bench/hook.py [--calls 50]

Runs `massgen-mcp hook pre-tool-use` (the console script next to this Python, if
installed) and `python -m massgen_mcp.hook.main pre-tool-use`, each `--calls` times,
in a temporary workspace with an active checkpoint plan, cycling through a benign Bash
call, a dangerous one, a loop with substitutions, inline code and a pipe into a shell, an
approved MCP call, a line that exercises the expansion step (braces, option prefixes, a
script written then run, globs), Claude Code's heredoc commit message, a Write, and the
capability rules (a `cd` through a glob into the key directory, a wrapper no list names,
an unknown program given code, a Grep over a secret directory).
Prints median / p90 / min per form, plus a bare `python -c pass` for the interpreter's
own start-up, and the load average (on a busy 2-CPU machine every figure, the bare
interpreter's included, inflates two- to threefold;
the CPU time per call, user + system of the hook process, is the figure load moves least).
Goal: median under 80 ms per call (issue 29; on a quiet machine).

Bytecode is cached as in a real install (pip compiles it): `PYTHONDONTWRITEBYTECODE` is
dropped and `PYTHONPYCACHEPREFIX` points into a temp dir, after one warm-up call per form.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from massgen_mcp.hook.active import KEY_FILE_ENV
from massgen_mcp.modes.checkpoint.schema import validate_checkpoint_plan
from massgen_mcp.modes.checkpoint.store import init_session, new_checkpoint_dir, record_result

GOAL_MS = 80
PLAN = {"steps": [
    {"step": 1, "kind": "backup", "description": "Snapshot", "preconditions": [],
     "touches": ["shared_db"], "recovery": "terminate",
     "approved_action": {"goal_id": "g1", "tool": "mcp__ops__snapshot", "args": {}}},
    {"step": 2, "kind": "action", "description": "Deploy", "preconditions": ["step:1.proceed"],
     "touches": ["prod"], "recovery": "recheckpoint",
     "approved_action": {"goal_id": "g1", "tool": "deploy",
                         "args": {"version": "<executor-fills: version>"}, "rollback": None}},
]}


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    ws.mkdir()
    tools = [{"name": "Bash"}, {"name": "Write"}, {"name": "mcp__ops__snapshot"},
             {"name": "mcp__ops__deploy"}]
    session, _ = init_session(ws / ".massgen", ws, "bench", tools)
    ckpt = new_checkpoint_dir(session, objective="bench", action_goals=[{"id": "g1"}])
    plan = validate_checkpoint_plan(PLAN, available_tools=[t["name"] for t in tools],
                                    action_goals=[{"id": "g1"}])
    record_result(ckpt, status="completed", plan=plan, votes=[], elapsed=0.0)
    return ws


def _payloads(ws: Path) -> list[str]:
    calls = [("Bash", {"command": "ls -la"}), ("Bash", {"command": "rm -rf ~"}),
             ("Bash", {"command": "for f in $(git ls-files '*.py'); do python3 -c "
                                  "'import sys; print(sys.argv)' \"$f\" | sh; done"}),
             ("mcp__ops__deploy", {"version": "2.0"}),
             # the expansion step and the channels: braces, option prefixes, env, a script
             # written then run, Claude Code's heredoc commit message
             ("Bash", {"command": "GIT_SSH_COMMAND='ssh -q' {git,push} --forc origin m{a,}in; "
                                  "printf 'echo hi\\n' > x.sh && sh x.sh; cat .en? ~root/x"}),
             ("Bash", {"command": "git commit -m \"$(cat <<'EOF'\nFix parser\n\nCo-Authored"
                                  "-By: Claude <noreply@anthropic.com>\nEOF\n)\""}),
             ("Write", {"file_path": str(ws / "src" / "a.py"), "content": "x"}),
             # capability rules: glob cd into the key dir, an unlisted wrapper, code given
             # to an unknown program, a Grep over a directory that holds secrets
             ("Bash", {"command": "cd ~/.config && cd mass*p && cat plan.k?y && cat marks/*"}),
             ("Bash", {"command": "prlimit --nofile=64 fakeroot rm -rf ~/x; mytool -e 'x()' "
                                  "| tclsh; awk '{print > \"/etc/x\"}' a"}),
             ("Grep", {"pattern": "KEY", "path": "~/.ssh"})]
    return [json.dumps({"session_id": "b", "cwd": str(ws), "hook_event_name": "PreToolUse",
                        "tool_name": tool, "tool_input": args, "tool_use_id": "t"})
            for tool, args in calls]


def _measure(argv: list[str], payloads: list[str], calls: int, cwd: Path,
             pycache: Path) -> tuple[list[float], list[float]]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MASSGEN_", "CLAUDE_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env[KEY_FILE_ENV] = os.environ[KEY_FILE_ENV]
    subprocess.run(argv, input=payloads[0], capture_output=True, text=True, cwd=cwd, env=env)
    times, cpu = [], []
    for i in range(calls):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(argv, input=payloads[i % len(payloads)], capture_output=True,
                              text=True, cwd=cwd, env=env)
        times.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
        if proc.returncode not in (0,) and argv[-1] != "pass":
            raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr}")
    return times, cpu


def _report(name: str, measured: tuple[list[float], list[float]]) -> float:
    times, cpu = measured
    ordered = sorted(times)
    median = statistics.median(ordered)
    p90 = ordered[int(len(ordered) * 0.9) - 1]
    print(f"{name:<58} median {median:6.1f} ms   p90 {p90:6.1f} ms   min {ordered[0]:6.1f} ms"
          f"   cpu median {statistics.median(cpu):5.1f} ms")
    return median


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    script = Path(sys.executable).with_name("massgen-mcp")
    forms = {"python -c pass (interpreter start-up, for reference)":
             [sys.executable, "-c", "pass"],
             "python -m massgen_mcp.hook.main pre-tool-use":
             [sys.executable, "-m", "massgen_mcp.hook.main", "pre-tool-use"]}
    if script.exists():
        forms["massgen-mcp hook pre-tool-use"] = [str(script), "hook", "pre-tool-use"]
    else:
        print(f"(no console script at {script}: install the package to time it)")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{args.calls} calls per form, {os.cpu_count()} CPUs, load average {load}, Python "
          f"{sys.version.split()[0]}")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[KEY_FILE_ENV] = str(Path(tmp) / "plan.key")  # not the user's real key
        ws = _workspace(Path(tmp))
        payloads = _payloads(ws)
        pycache = Path(tmp) / "pycache"
        medians = {name: _report(name, _measure(argv, payloads, args.calls, ws, pycache))
                   for name, argv in forms.items()}
    hook_medians = [m for name, m in medians.items() if "hook" in name]
    worst = max(hook_medians)
    print(f"goal: median under {GOAL_MS} ms per call: {'met' if worst < GOAL_MS else 'MISSED'}")
    return 0 if worst < GOAL_MS else 1


if __name__ == "__main__":
    sys.exit(main())
