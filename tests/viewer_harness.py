"""Headless Chromium and `massgen-mcp view` for the viewer tests."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp_harness import EXE, server_env
from tiers import require

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT_MS = 20_000


@pytest.fixture(name="browser")
async def browser_fixture() -> AsyncIterator[Any]:
    """Chromium with a fresh profile (Playwright gives every launch a new --user-data-dir);
    the machine has no internet, and these flags keep Chromium from trying."""
    require("chromium", os.access(CHROMIUM, os.X_OK), f"{CHROMIUM} is missing")
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        context = await chromium.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(WAIT_MS)
        try:
            yield context
        finally:
            await chromium.close()


@contextmanager
def viewer(state: Path, *args: str) -> Iterator[str]:
    """`massgen-mcp view --no-open --no-token` on a free port; yields the URL it prints
    (test_users.py checks the token `view` asks for by default)."""
    proc = subprocess.Popen([EXE, "view", "--no-open", "--no-token", "--state-dir", str(state),
                             *args],
                            env=server_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        seen: list[str] = []
        while True:
            line = lines.get(timeout=30)
            if line is None:
                raise RuntimeError("viewer did not start:\n" + "".join(seen))
            seen.append(line)
            if " at http://" in line:
                yield line.split(" at ", 1)[1].split(" ", 1)[0]
                break
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
        assert proc.stdout is not None
        assert proc.stdout.read() == "", "the viewer wrote to stdout"
