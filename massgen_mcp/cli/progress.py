"""What a CLI run tells its user: progress on stderr (one line per event, a heartbeat after a
quiet spell) and the exit codes shared by `run`, `plan` and `checkpoint`."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Any

HEARTBEAT_SECONDS = 10.0
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PARTIAL, EXIT_DEGRADED = 0, 1, 2, 3, 4
EXIT_NO_CONSENSUS = 5  # the winner's share of the votes was below --min-agreement


def positive_seconds(text: str) -> float:
    """An argparse type: a positive number of seconds."""
    import argparse

    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


class Progress:
    """Progress lines on stderr, and a heartbeat when nothing has been said for
    `heartbeat_s` (10 s): who is still working and for how long (a provider that accepted
    the connection and never answers would otherwise leave the terminal silent until its
    request timeout)."""

    def __init__(self, quiet: bool, heartbeat_s: float = HEARTBEAT_SECONDS) -> None:
        self.quiet = quiet
        self.heartbeat_s = heartbeat_s
        self.t0 = time.monotonic()
        self.last = self.t0
        self.since: dict[str, float] = {}  # agent -> when it last did something
        self.live: Any = None  # the run's LiveRun, once prepared

    def _print(self, message: str) -> None:
        now = time.monotonic()
        self.last = now
        if not self.quiet:
            print(f"[{now - self.t0:6.1f}s] {message}", file=sys.stderr, flush=True)

    def event(self, line: dict[str, Any]) -> None:
        from massgen_mcp.runs.progress import describe_event

        if line.get("agent"):
            self.since[str(line["agent"])] = time.monotonic()
        message = describe_event(line)
        if message:
            self._print(message)

    async def heartbeat(self) -> None:
        import anyio

        while True:
            await anyio.sleep(min(1.0, self.heartbeat_s))
            now = time.monotonic()
            if now - self.last < self.heartbeat_s:
                continue
            if self.live is not None:  # a sign of life for a run later found interrupted
                with contextlib.suppress(OSError):
                    os.utime(self.live.record.dir / "events.jsonl")
            snap = self.live.snapshot() if self.live is not None else None
            if snap is None:
                self._print("still starting (agents' tool servers)")
                continue
            busy = [a for a in snap.agents if a.status in ("working", "waiting")]
            who = ", ".join(
                f"{a.agent_id} ({a.provider}/{a.model}) for "
                f"{now - self.since.get(a.agent_id, self.t0):.0f} s" for a in busy)
            self._print(f"still working: {who or 'final presentation'}; "
                        f"{snap.totals.answers} answers, {snap.totals.votes} votes so far")
