"""On a terminal, `run` colours its progress and keeps one status line rewritten in place;
`NO_COLOR` turns the colour off; a pipe gets plain lines. The real program on a real
pseudo-terminal."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

from mcp_harness import EXE
from test_ship import clean_env

CLEAR_LINE = "\r\x1b[2K"
ANSWER_COLOUR = "\x1b[36m"


def run_on_a_terminal(tmp_path: Path, **env: str) -> tuple[int, str]:
    """`run --team demo` with stderr on a pseudo-terminal: its exit code and what the
    terminal received."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([EXE, "run", "Which queue?", "--team", "demo"], cwd=tmp_path,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave,
                            env=clean_env(tmp_path, TERM="xterm", **env))
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # the program closed the terminal (EIO)
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(60), b"".join(chunks).decode("utf-8", "replace")


def test_a_terminal_gets_colour_and_one_status_line_rewritten_in_place(tmp_path: Path):
    code, screen = run_on_a_terminal(tmp_path)
    assert code == 0, screen
    assert ANSWER_COLOUR in screen  # "... answered" in colour
    assert CLEAR_LINE in screen
    # the status line (answers and votes so far) is drawn and redrawn in place, never
    # left behind as a line of its own
    statuses = [part for part in screen.split(CLEAR_LINE) if part.lstrip("\x1b[2m").startswith("…")]
    assert len(statuses) >= 2
    assert all("\n" not in s.split("\x1b[0m")[0] for s in statuses)
    assert "— Winner: careful" in screen


def test_no_color_turns_the_colour_off_but_keeps_the_status_line(tmp_path: Path) -> None:
    code, screen = run_on_a_terminal(tmp_path, NO_COLOR="1")
    assert code == 0, screen
    assert "\x1b[3" not in screen and "\x1b[1;" not in screen
    assert CLEAR_LINE in screen and "answered" in screen


def test_a_pipe_gets_plain_lines(tmp_path: Path) -> None:
    done = subprocess.run([EXE, "run", "Which queue?", "--team", "demo"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env=clean_env(tmp_path, TERM="xterm"))
    assert done.returncode == 0
    assert "\x1b" not in done.stderr and "\r" not in done.stderr
    assert "answered" in done.stderr
