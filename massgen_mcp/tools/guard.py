"""Runs one agent tool server and takes its whole process group down if massgen-mcp dies.

    python -I -S guard.py COMMAND [ARGS...]

The MCP SDK starts each stdio server as the leader of a new process group and, on a normal
close, signals that group. A SIGKILLed massgen-mcp closes nothing: a server that reads its
stdin sees EOF and exits, but one still starting (a slow `npx`, a shell script that has not
reached the server yet) and whatever it spawned would live on with ppid 1.

So the SDK starts this guard instead, and the guard runs the server in a process group of
its own. When massgen-mcp dies (Linux: a parent-death signal; elsewhere: polling) the guard
SIGKILLs the server's group. When the SDK stops the guard (SIGTERM), the guard passes it
on, SIGKILLs the group after a grace period, and exits only once the server is reaped, so
"the guard has exited" still means "the server is gone". When the server exits on its own,
what it left in its group is killed too.

Standard library only, started with `-I -S`: it costs a few milliseconds per server.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

POLL_SECONDS = 0.1
PARENT_POLL_SECONDS = 0.5
TERM_GRACE_SECONDS = 1.5  # within the SDK's 2 s between SIGTERM and SIGKILL

_stop: list[str] = []  # what the signal handlers saw: "term" or "orphaned"


def _arm_parent_death(sig: int) -> None:
    """Ask the kernel for `sig` when our parent exits (Linux); elsewhere polling does it.

    The kernel sends it when the parent *thread* that started us ends: massgen-mcp starts
    servers from its event loop, which lives as long as the process."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, sig, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _kill(pgid: int, sig: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pgid, sig)


def _wait(child: subprocess.Popen[bytes], seconds: float) -> int | None:
    try:
        return child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None


def main(argv: list[str]) -> int:
    if not argv:
        print("guard: no command given", file=sys.stderr)
        return 2
    parent = os.getppid()
    signal.signal(signal.SIGUSR1, lambda *_: _stop.append("orphaned"))
    signal.signal(signal.SIGTERM, lambda *_: _stop.append("term"))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _arm_parent_death(signal.SIGUSR1)
    if os.getppid() != parent:  # it died before the signal was armed
        return 1
    try:
        child = subprocess.Popen(argv, process_group=0)
    except FileNotFoundError:
        print(f"command not found: {argv[0]}", file=sys.stderr, flush=True)
        return 127
    except OSError as e:
        print(f"cannot start {argv[0]}: {e.strerror}", file=sys.stderr, flush=True)
        return 126
    # The server owns stdin/stdout now: our copies must not keep its pipes open.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    waited = 0.0
    while True:
        code = _wait(child, POLL_SECONDS)
        if code is not None:
            _kill(child.pid, signal.SIGKILL)  # what it left behind in its group
            return code if code >= 0 else 128 - code
        waited += POLL_SECONDS
        if waited >= PARENT_POLL_SECONDS:
            waited = 0.0
            if os.getppid() != parent:
                _stop.append("orphaned")
        if "orphaned" in _stop:
            _kill(child.pid, signal.SIGKILL)
            return 1
        if "term" in _stop:
            _kill(child.pid, signal.SIGTERM)
            if _wait(child, TERM_GRACE_SECONDS) is None:
                _kill(child.pid, signal.SIGKILL)
                child.wait()
            _kill(child.pid, signal.SIGKILL)
            return 143


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
