"""Bounds on HTTP clients: a request must arrive whole within a time limit.

uvicorn times out idle keep-alive connections but not a request that is still arriving: a
client that opens a connection and sends half a header (or half a body) holds a file
descriptor for as long as it likes, and about a thousand of them exhaust a server with the
usual 1024-descriptor limit. `TimedH11Protocol` closes a connection whose request (headers
and body) is not complete `REQUEST_READ_TIMEOUT` seconds after its first byte was due. The
soft descriptor limit is also raised to the hard limit at start.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

REQUEST_READ_TIMEOUT = 15.0
_READING = (h11.IDLE, h11.SEND_BODY)  # the client has not finished sending a request


class TimedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for reading each request."""

    read_timeout = REQUEST_READ_TIMEOUT

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._read_timer: asyncio.TimerHandle | None = None
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state in _READING:
            if self._read_timer is None:
                self._arm()
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._read_timer = self.loop.call_later(self.read_timeout, self._timed_out)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _timed_out(self) -> None:
        self._read_timer = None
        if self.conn.their_state in _READING and not self.transport.is_closing():
            log.info("closing a connection whose request did not arrive within %gs",
                     self.read_timeout)
            self.transport.close()


def raise_fd_limit() -> None:
    """Use every file descriptor the hard limit allows (many clients, many tool servers)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY:
            hard = max(soft, 65536)
        if soft < hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):
        pass
