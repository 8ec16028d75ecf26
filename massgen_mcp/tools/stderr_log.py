"""A tool server's stderr, redacted on its way to `runs/<id>/tools/<agent>-<server>.stderr.log`.

The server writes into a pipe, not into the file: a server that prints its environment
would otherwise put the full key on disk. We read the pipe, redact line by line with the
run's `Redactor`, and stop writing (with a note) past a size cap so a chatty or hostile
server cannot fill the disk.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, TextIO

import anyio

from massgen_mcp.paths import open_private
from massgen_mcp.redaction import Redactor

MAX_LOG_BYTES = 10_000_000
_CHUNK = 65536
_MAX_LINE = 65536  # a longer line is written in pieces
_DRAIN_SECONDS = 2.0  # after the server is stopped, for what is still in the pipe


class StderrLog:
    """`async with StderrLog(path, redactor) as log:` pass `log.errlog` as the server's
    stderr, call `log.spawned()` once the process exists."""

    def __init__(self, path: Path, redactor: Redactor | None) -> None:
        self.path = path
        self._redact = redactor or Redactor()
        self._read_fd, write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        self.errlog: TextIO | None = os.fdopen(write_fd, "w", encoding="utf-8")
        self._file = open_private(path)  # 0600, like every record
        self._written = 0
        self._done = anyio.Event()
        self._tg: Any = None

    async def __aenter__(self) -> StderrLog:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._pump)
        return self

    def spawned(self) -> None:
        """The server holds the write end now; ours must go, or the pipe never ends."""
        if self.errlog is not None:
            self.errlog.close()
            self.errlog = None

    async def __aexit__(self, *exc: object) -> None:
        self.spawned()
        with anyio.CancelScope(shield=True), anyio.move_on_after(_DRAIN_SECONDS):
            await self._done.wait()  # the server has exited: read what it left
        self._tg.cancel_scope.cancel()
        await self._tg.__aexit__(None, None, None)
        with contextlib.suppress(OSError):
            os.close(self._read_fd)
        self._file.close()

    async def _pump(self) -> None:
        pending = b""
        try:
            while True:
                await anyio.wait_readable(self._read_fd)
                try:
                    chunk = os.read(self._read_fd, _CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                pending += chunk
                lines = pending.split(b"\n")
                pending = lines.pop()
                if len(pending) > _MAX_LINE:
                    lines.append(pending)
                    pending = b""
                self._write(lines)
        except OSError:
            pass
        finally:
            if pending:
                self._write([pending])
            self._done.set()

    def _write(self, lines: list[bytes]) -> None:
        if not lines or self._written > MAX_LOG_BYTES:
            return
        text = "".join(self._redact.text(b.decode("utf-8", "replace")) + "\n" for b in lines)
        self._written += len(text)
        if self._written > MAX_LOG_BYTES:
            text += f"[massgen-mcp: log cut at {MAX_LOG_BYTES:,} bytes]\n"
        self._file.write(text)
        self._file.flush()
