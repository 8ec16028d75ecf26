"""What a CLI run tells its user: progress on stderr and the exit codes shared by `run`,
`plan` and `checkpoint`.

Not a terminal (a pipe, a log file, a test): one plain line per event, and a heartbeat after
a quiet spell. On a terminal: the same lines in colour (unless `NO_COLOR` is set), and below
them one status line rewritten in place (elapsed time, answers, votes, who is working) that
is cleared when the run ends. Plain ANSI escapes, not `rich`: the run needs four colours and
"clear this line", and `rich` would add its import time to every `run`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Any, TextIO

HEARTBEAT_SECONDS = 10.0
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PARTIAL, EXIT_DEGRADED = 0, 1, 2, 3, 4
EXIT_NO_CONSENSUS = 5  # the winner's share of the votes was below --min-agreement

_COLOURS = {"answer": "36", "vote": "33", "win": "1;32", "note": "35", "warn": "31",
            "dim": "2"}
_CLEAR = "\r\x1b[2K"


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


def add_progress_options(p: Any) -> None:
    """`--quiet` and `--heartbeat`: how a command that waits for a run reports on stderr."""
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--heartbeat", type=positive_seconds, default=HEARTBEAT_SECONDS,
                   metavar="SECONDS", help="after this long without news, say who is still "
                   f"working (default {HEARTBEAT_SECONDS:g})")


def _tone(kind: str) -> str:
    if kind in ("answer", "new_answer"):
        return "answer"
    if kind == "vote":
        return "vote"
    if kind in ("consensus", "presentation_done", "run_finished"):
        return "win"
    if kind in ("agent_failed", "agent_cut_off", "turn_failed", "timeout", "budget_exceeded",
                "no_consensus"):
        return "warn"
    return ""


class Progress:
    """Progress lines on stderr, and a heartbeat when nothing has been said for
    `heartbeat_s` (10 s): who is still working and for how long (a provider that accepted
    the connection and never answers would otherwise leave the terminal silent until its
    request timeout)."""

    def __init__(self, quiet: bool, heartbeat_s: float = HEARTBEAT_SECONDS,
                 out: TextIO | None = None) -> None:
        self.quiet = quiet
        self.heartbeat_s = heartbeat_s
        self.out = out or sys.stderr
        self.t0 = time.monotonic()
        self.last = self.t0
        self.since: dict[str, float] = {}  # agent -> when it last did something
        self.live: Any = None  # the run's LiveRun, once prepared
        self.terminal = not quiet and _is_terminal(self.out)
        self.colour = self.terminal and not os.environ.get("NO_COLOR")
        self._status_shown = False

    def _paint(self, text: str, tone: str) -> str:
        code = _COLOURS.get(tone)
        return f"\x1b[{code}m{text}\x1b[0m" if code and self.colour else text

    def _print(self, message: str, tone: str = "") -> None:
        now = time.monotonic()
        self.last = now
        if self.quiet:
            return
        stamp = self._paint(f"[{now - self.t0:6.1f}s]", "dim")
        prefix = _CLEAR if self._status_shown else ""
        print(f"{prefix}{stamp} {self._paint(message, tone)}", file=self.out, flush=True)
        self._status_shown = False
        self._status()

    def note(self, message: str) -> None:
        """A line about the run itself (how the team was put together, a demo, Ctrl-C)."""
        if self.quiet:
            return
        prefix = _CLEAR if self._status_shown else ""
        print(f"{prefix}{self._paint('massgen-mcp: ' + message, 'note')}", file=self.out,
              flush=True)
        self._status_shown = False
        self._status()

    def event(self, line: dict[str, Any]) -> None:
        from massgen_mcp.runs.progress import describe_event

        if line.get("agent"):
            self.since[str(line["agent"])] = time.monotonic()
        message = describe_event(line)
        if message:
            self._print(message, _tone(str(line.get("kind", ""))))

    def _status(self) -> None:
        """The one line rewritten in place on a terminal: where the run stands."""
        if not self.terminal or self.live is None:
            return
        snap = self.live.snapshot()
        if snap is None:
            return
        now = time.monotonic()
        busy = [a.agent_id for a in snap.agents if a.status in ("working", "waiting")]
        answers, votes = snap.totals.answers, snap.totals.votes
        text = (f"… {now - self.t0:.0f}s · {answers} answer{'s' if answers != 1 else ''} · "
                f"{votes} vote{'s' if votes != 1 else ''}"
                + (f" · working: {', '.join(busy)}" if busy else ""))
        width = _width(self.out)
        print(f"{_CLEAR}{self._paint(text[:width - 1], 'dim')}", end="", file=self.out,
              flush=True)
        self._status_shown = True

    def close(self) -> None:
        """Clear the status line (the summary is printed in its place)."""
        if self._status_shown:
            print(_CLEAR, end="", file=self.out, flush=True)
            self._status_shown = False
        self.live = None

    async def heartbeat(self) -> None:
        import anyio

        from massgen_mcp.config.providers import short_model

        while True:
            await anyio.sleep(min(1.0, self.heartbeat_s))
            now = time.monotonic()
            self._status()
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
                f"{a.agent_id} ({a.provider}/{short_model(a.model)}) for "
                f"{now - self.since.get(a.agent_id, self.t0):.0f} s" for a in busy)
            self._print(f"still working: {who or 'final presentation'}; "
                        f"{snap.totals.answers} answers, {snap.totals.votes} votes so far")


def _is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def _width(out: TextIO) -> int:
    import shutil

    return max(20, shutil.get_terminal_size((80, 24)).columns)
