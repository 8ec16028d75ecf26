"""A real Redis for the tests: Debian's `redis-server` on a free loopback port.

    with RedisServer() as server:        # or the `redis_url` / `redis_server` fixtures
        url = server.url                 # redis://127.0.0.1:PORT/0
        server.restart()                 # same port, same data (append-only file)
        server.stop()

It runs in its own temporary directory with `--save "" --appendonly yes`, so a restart
keeps what was written and nothing lands in the working directory. Readiness is the
server's own "Ready to accept connections" line (read from its log as it is written), then a
PING: no sleeps.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
from pathlib import Path
from types import TracebackType

from tiers import require_program

START_TIMEOUT = 20.0  # a loaded CI machine starts redis in well under a second; bounded anyway
READY = "Ready to accept connections"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """One `redis-server` process (restartable on the same port with the same data)."""

    def __init__(self, port: int | None = None, *, extra: list[str] | None = None,
                 tls: bool = False) -> None:
        self.program = require_program("redis", "redis-server")
        self._tmp = tempfile.TemporaryDirectory(prefix="massgen-redis-")
        self.dir = Path(self._tmp.name)
        self.port = port or free_port()
        self.extra = list(extra or [])
        #: With `tls`, the server speaks only TLS on `port`, with a self-signed certificate
        #: for 127.0.0.1 (`ca`, made by Debian's openssl); `url` is then rediss://.
        self.ca: Path | None = self._certificate() if tls else None
        self.proc: subprocess.Popen[str] | None = None
        self.log: list[str] = []

    @property
    def url(self) -> str:
        if self.ca is not None:
            return f"rediss://127.0.0.1:{self.port}/0?ssl_ca_certs={self.ca}"
        return f"redis://127.0.0.1:{self.port}/0"

    def _certificate(self) -> Path:
        openssl = require_program("redis", "openssl")
        subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-keyout", str(self.dir / "key.pem"), "-out", str(self.dir / "ca.pem"),
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                       check=True, capture_output=True, timeout=START_TIMEOUT)
        return self.dir / "ca.pem"

    def _listen(self) -> list[str]:
        if self.ca is None:
            return ["--port", str(self.port)]
        return ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", str(self.ca),
                "--tls-key-file", str(self.dir / "key.pem"), "--tls-auth-clients", "no"]

    def start(self) -> RedisServer:
        for _attempt in range(3):
            if self._start_once():
                return self
            # Another process took the port between free_port() and the bind: pick another.
            self.port = free_port()
        raise RuntimeError("redis-server did not start:\n" + "\n".join(self.log[-20:]))

    def _start_once(self) -> bool:
        cmd = [self.program, "--bind", "127.0.0.1", *self._listen(),
               "--save", "", "--appendonly", "yes", "--dir", str(self.dir),
               "--logfile", "", "--daemonize", "no", *self.extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, cwd=self.dir)
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(self.proc, lines), daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=START_TIMEOUT)
            except queue.Empty:
                self._kill()
                raise RuntimeError(f"redis-server not ready after {START_TIMEOUT}s:\n"
                                   + "\n".join(self.log[-20:])) from None
            if line is None:  # exited (e.g. the port was taken)
                self.proc.wait()
                self.proc = None
                return False
            if READY in line:
                break
        self.ping()
        return True

    def _pump(self, proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.log.append(line.rstrip())
            lines.put(line)
        lines.put(None)

    def ping(self) -> None:
        """One PING over a plain socket (RESP inline command): the server answers +PONG."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=START_TIMEOUT) as raw:
            s = raw
            if self.ca is not None:
                s = ssl.create_default_context(cafile=str(self.ca)).wrap_socket(
                    raw, server_hostname="127.0.0.1")
            s.sendall(b"PING\r\n")
            reply = s.recv(64)
        if not reply.startswith((b"+PONG", b"-NOAUTH")):  # NOAUTH: up, with --requirepass
            raise RuntimeError(f"redis-server answered PING with {reply!r}")

    def stop(self, *, kill: bool = False) -> None:
        """Stop the server: SIGTERM (it flushes the append-only file) or, with `kill`,
        SIGKILL (a crash; what was fsynced survives)."""
        if self.proc is None:
            return
        if kill:
            self._kill()
            return
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._kill()
        self.proc = None

    def _kill(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()
        self.proc = None

    def restart(self, *, kill: bool = False) -> None:
        """Stop and start again on the same port; the data written so far is kept."""
        self.stop(kill=kill)
        if not self._start_once():
            raise RuntimeError(f"redis-server could not restart on port {self.port}:\n"
                               + "\n".join(self.log[-20:]))

    def close(self) -> None:
        self.stop()
        self._tmp.cleanup()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def flush(port: int) -> None:
    """FLUSHALL: each test starts on an empty Redis (the session's server is shared)."""
    with socket.create_connection(("127.0.0.1", port), timeout=START_TIMEOUT) as s:
        s.sendall(b"FLUSHALL\r\n")
        reply = s.recv(64)
    if not reply.startswith(b"+OK"):
        raise RuntimeError(f"redis-server answered FLUSHALL with {reply!r}")


__all__ = ["RedisServer", "flush", "free_port"]
os.environ.pop("REDIS_URL", None)  # no test reaches a Redis it did not start
