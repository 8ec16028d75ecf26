"""A massgen-mcp cluster of real processes, for tests and `bench/scale_out.py`.

    with Cluster(tmp, team, store_url, replicas=3, workers=2) as cluster:
        async with cluster.client("legacy") as c:      # through haproxy
            r = await c.call_tool("run_consensus", {"task": "q"})
            c.served_by                                 # replicas that answered, in order

- **Replicas**: `massgen-mcp --transport streamable-http --stateless-http --store URL`, each
  in its own working directory (so nothing file-based is shared by accident), on a free
  loopback port, ready when it prints its "listening on" line.
- **Workers**: `massgen-mcp worker --store URL`, the same team, ready when they say so.
- **haproxy** (Debian's), with a config generated into the cluster's directory: round robin,
  health checks, an admin socket to see which servers are UP, and a header naming the server
  that answered each response (`X-Served-By`), which is how tests prove round robin.

Why `--stateless-http` rather than affinity on `Mcp-Session-Id` for 2025-11-25 clients: with
sessions, the session lives in one replica's memory, so haproxy would have to stick every
request of a session to it (`stick store-response res.hdr(mcp-session-id)`), and when that
replica dies the session dies with it: the next request gets 404 "Session not found" and the
SDK's client does not re-initialize by itself, so the client's retry fails. Stateless, any
replica serves any request of the same client (the run state is in Redis); what a legacy
client loses is the server-to-client back channel (mid-call sampling), which a team server
with provider keys does not use. 2026-07-28 clients are sessionless either way, so plain
round robin serves them with no stickiness.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from agents import answer_then_vote
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_harness import EXE, free_port, server_env
from scripted_provider import Reply, ScriptRequest

SERVED_BY = "x-served-by"
START_TIMEOUT = 60.0  # a replica imports the SDKs; on a loaded 2-core machine that takes a while


# ---------------------------------------------------------------------------- agents


def task_of(req: ScriptRequest) -> str:
    """The task line of a coordination prompt (the line after the original-message marker)."""
    return req.last_user_text.split("<ORIGINAL MESSAGE>\n", 1)[-1].split("\n", 1)[0]


def per_task_agent(req: ScriptRequest) -> Reply:
    """Answers `answer to <task>`, votes for agent1, presents `final for <task>`: every run's
    result names its own task, so a result given to the wrong caller shows."""
    task = task_of(req)
    return answer_then_vote(f"answer to {task}", "agent1", final=f"final for {task}")(req)


def final_for(task: str) -> str:
    return f"final for {task}"


# ---------------------------------------------------------------------------- processes


class Proc:
    """One child process in its own process group, ready once a line of its stderr contains
    `ready` (the readiness signal, never a sleep); its stderr is kept for failure messages."""

    def __init__(self, name: str, cmd: list[str], cwd: Path, ready: str,
                 env: dict[str, str] | None = None, timeout: float = START_TIMEOUT) -> None:
        self.name, self.cmd, self.cwd = name, cmd, cwd
        self.lines: list[str] = []
        self.terminated = False
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=server_env(env),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        found: queue.Queue[str | None] = queue.Queue()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.lines.append(line)
                if ready in line:
                    found.put(line)
            found.put(None)

        threading.Thread(target=read, daemon=True, name=f"stderr-{name}").start()
        try:
            line = found.get(timeout=timeout)
        except queue.Empty:
            line = None
        if line is None:
            self.stop()
            raise RuntimeError(f"{name} did not start ({' '.join(cmd)}):\n{self.stderr()}")
        self.ready_line = line

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr(self) -> str:
        return "".join(self.lines[-60:])

    def kill(self) -> None:
        """SIGKILL the whole process group: no clean-up runs, as when a host dies."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)

    def terminate(self) -> None:
        """SIGTERM, once (a second one means "now" to a worker), without waiting."""
        if self.alive() and not self.terminated:
            self.terminated = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM (live runs are closed), then SIGKILL after `grace` seconds."""
        if self.alive():
            self.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class Replica:
    name: str
    port: int
    dir: Path
    proc: Proc | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


# ---------------------------------------------------------------------------- haproxy


# Health: an MCP ping through the whole stack (the stateless path answers it without a
# session).
HEALTH_CHECK = (
    '    http-check send meth POST uri /mcp ver HTTP/1.1 hdr Host 127.0.0.1'
    ' hdr Content-Type application/json hdr Accept "application/json, text/event-stream"'
    ' body "{\\"jsonrpc\\":\\"2.0\\",\\"id\\":0,\\"method\\":\\"ping\\"}"\n'
    '    http-check expect rstring "\\"result\\""')


def haproxy_config(port: int, servers: list[tuple[str, int]], admin_socket: Path,
                   mcp_ping: bool = True) -> str:
    """The haproxy config the tests run (docs/operators.md shows the same, for a real host).
    `mcp_ping`: health-check with an MCP ping (stateless replicas); else a TCP connect."""
    backends = "\n".join(f"    server {name} 127.0.0.1:{p} check" for name, p in servers)
    health = f"    option httpchk\n{HEALTH_CHECK}" if mcp_ping else "    # TCP checks"
    return f"""\
global
    maxconn 4096
    stats socket {admin_socket} mode 600 level admin

defaults
    mode http
    timeout connect 2s
    # A run_consensus call is one long response (progress, then the result): minutes, not
    # the usual seconds. Both ends of a waiting call are idle between progress messages.
    timeout client 1h
    timeout server 1h
    timeout http-request 15s
    timeout http-keep-alive 15s
    # Retry only a connection that failed (a dead replica), never a request a replica has
    # received: a replayed tools/call would start a second run.
    retries 3
    option redispatch 1

frontend mcp
    bind 127.0.0.1:{port}
    maxconn 4096
    default_backend replicas

backend replicas
    # Round robin, no stickiness: replicas run --stateless-http and keep runs in Redis, so any
    # replica serves any request of any client (2025-11-25 or 2026-07-28).
    balance roundrobin
{health}
    # A busy replica (a loaded host, Python) may take a while to answer a ping: give it 5 s
    # and three misses. A dead one is found at once: a refused connection from real traffic
    # marks it down (observe layer4), and the request is redispatched.
    timeout check 5s
    default-server inter 1s fall 3 rise 1 observe layer4 error-limit 1 on-error mark-down
    http-response set-header X-Served-By %s
{backends}
"""


class Haproxy:
    """Debian's haproxy in the foreground, with its admin socket for server states."""

    def __init__(self, dir: Path, servers: list[tuple[str, int]], program: str = "haproxy",
                 port: int | None = None, mcp_ping: bool = True) -> None:
        self.dir = dir
        self.port = port or free_port()
        self.socket = dir / "haproxy.sock"
        self.config = dir / "haproxy.cfg"
        self.config.write_text(haproxy_config(self.port, servers, self.socket, mcp_ping))
        check = subprocess.run([program, "-c", "-f", str(self.config)], capture_output=True,
                               text=True)
        if check.returncode != 0:
            raise RuntimeError(f"haproxy rejected {self.config}:\n{check.stdout}{check.stderr}")
        self.log = (dir / "haproxy.log").open("w")
        self.proc = subprocess.Popen([program, "-db", "-f", str(self.config)], cwd=dir,
                                     stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.names = [name for name, _ in servers]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def admin(self, command: str) -> str:
        """One command on the admin socket (e.g. `show stat`)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(str(self.socket))
            s.sendall(command.encode() + b"\n")
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def states(self) -> dict[str, str]:
        """Each backend server's status as haproxy sees it (UP, DOWN, ...)."""
        lines = [line for line in self.admin("show stat").splitlines() if line]
        header = lines[0].lstrip("# ").split(",")
        states = {}
        for line in lines[1:]:
            row = dict(zip(header, line.split(","), strict=False))
            if row.get("pxname") == "replicas" and row.get("svname") in self.names:
                states[row["svname"]] = row.get("status", "")
        return states

    def wait_until(self, want: Callable[[dict[str, str]], bool], timeout: float = 30.0) -> None:
        """Poll the admin socket until `want(states)` holds (haproxy's own checks decide)."""
        deadline = time.monotonic() + timeout
        last: dict[str, str] | str = "no answer"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"haproxy exited: {(self.dir / 'haproxy.log').read_text()}")
            with contextlib.suppress(OSError, IndexError):
                last = self.states()
                if want(last):
                    return
            time.sleep(0.05)  # polling haproxy's state, the readiness signal here
        raise TimeoutError(f"haproxy servers did not reach the wanted state: {last}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


# ---------------------------------------------------------------------------- clients


@dataclass
class ClusterClient:
    """An MCP client through haproxy, recording which replica answered each HTTP request."""

    client: Client
    served: list[tuple[str, str]] = field(default_factory=list)  # (JSON-RPC method, replica)
    sessions: set[str] = field(default_factory=set)  # Mcp-Session-Id values the server sent

    @property
    def served_by(self) -> list[str]:
        return [replica for _, replica in self.served]

    def replicas_for(self, method: str) -> list[str]:
        return [replica for m, replica in self.served if m == method]


def _method_of(request: httpx2.Request) -> str:
    try:
        body = json.loads(request.content or b"{}")
    except (ValueError, httpx2.RequestNotRead):
        return request.method
    return str(body.get("method") or ("response" if isinstance(body, dict) else "batch")) \
        if isinstance(body, dict) else "batch"


@asynccontextmanager
async def cluster_client(url: str, mode: str = "legacy", **options: Any
                         ) -> AsyncIterator[ClusterClient]:
    """`mcp.Client` over streamable HTTP at `url`; `mode` as `Client` takes it ("legacy":
    the 2025-11-25 handshake; "2026-07-28": sessionless)."""
    recorded: list[tuple[str, str]] = []
    sessions: set[str] = set()

    async def on_response(response: httpx2.Response) -> None:
        recorded.append((_method_of(response.request), response.headers.get(SERVED_BY, "")))
        if session := response.headers.get("mcp-session-id"):
            sessions.add(session)

    http = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=300.0),
                              event_hooks={"response": [on_response]})
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode,
                            **options) as client:
        yield ClusterClient(client, recorded, sessions)


# ---------------------------------------------------------------------------- the cluster


class Cluster(AbstractContextManager["Cluster"]):
    """Replicas + workers on one store URL, behind haproxy; everything stopped on exit."""

    def __init__(self, dir: Path, team: Path, store: str | None, *, replicas: int = 3,
                 workers: int = 2, haproxy: str = "haproxy", stateless: bool = True,
                 replica_args: tuple[str, ...] = (), worker_args: tuple[str, ...] = ()) -> None:
        self.dir, self.team, self.store = dir, team, store
        self.stateless = stateless
        self.n_replicas, self.n_workers = replicas, workers
        self.haproxy_program = haproxy
        self.replica_args, self.worker_args = replica_args, worker_args
        self.replicas: list[Replica] = []
        self.workers: list[Proc] = []
        self.proxy: Haproxy | None = None
        self._stack = ExitStack()

    # ------------------------------------------------------------------ start and stop

    def __enter__(self) -> Cluster:
        try:
            self.replicas = [Replica(f"r{i + 1}", free_port(), self.dir / f"r{i + 1}")
                             for i in range(self.n_replicas)]
            for replica in self.replicas:
                replica.dir.mkdir(parents=True, exist_ok=True)
                self.start_replica(replica)
            for i in range(self.n_workers):
                self.start_worker(f"w{i + 1}")
            self.proxy = Haproxy(self.dir, [(r.name, r.port) for r in self.replicas],
                                 self.haproxy_program, mcp_ping=self.stateless)
            self._stack.callback(self.proxy.stop)
            self.proxy.wait_until(lambda s: len(s) == len(self.replicas)
                                  and all(v == "UP" for v in s.values()))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        procs = [*self.workers, *(r.proc for r in self.replicas if r.proc is not None)]
        for proc in procs:  # all at once: an idle worker takes its queue's grace to stop
            proc.terminate()
        for proc in procs:
            proc.stop()

    def _store_args(self) -> list[str]:
        return ["--store", self.store] if self.store else []

    def start_replica(self, replica: Replica) -> Proc:
        """(Re)start a replica on its own port, so haproxy's config still names it."""
        cmd = [EXE, "--transport", "streamable-http", "--port", str(replica.port),
               *(["--stateless-http"] if self.stateless else []), *self._store_args(),
               "--team", str(self.team),
               *self.replica_args]
        replica.proc = Proc(replica.name, cmd, replica.dir, "listening on")
        return replica.proc

    def start_worker(self, name: str) -> Proc:
        wdir = self.dir / name
        wdir.mkdir(parents=True, exist_ok=True)
        cmd = [EXE, "worker", *self._store_args(), "--team", str(self.team), *self.worker_args]
        worker = Proc(name, cmd, wdir, WORKER_READY)
        self.workers.append(worker)
        return worker

    # ------------------------------------------------------------------ use

    @property
    def url(self) -> str:
        assert self.proxy is not None
        return self.proxy.url

    def client(self, mode: str = "legacy", **options: Any
               ) -> contextlib.AbstractAsyncContextManager[ClusterClient]:
        return cluster_client(self.url, mode, **options)

    def replica(self, name: str) -> Replica:
        return next(r for r in self.replicas if r.name == name)

    def kill_replica(self, name: str, wait_down: bool = True) -> None:
        """SIGKILL a replica (no clean-up), then wait until haproxy's checks mark it DOWN."""
        replica = self.replica(name)
        assert replica.proc is not None
        replica.proc.kill()
        if wait_down and self.proxy is not None:
            self.proxy.wait_until(lambda s: s.get(name) != "UP")

    def stderr(self) -> str:
        """Every process's recent stderr, for assertion messages."""
        parts = [f"--- {r.name}\n{r.proc.stderr()}" for r in self.replicas if r.proc]
        parts += [f"--- {w.name}\n{w.stderr()}" for w in self.workers]
        if self.proxy is not None:
            parts.append(f"--- haproxy\n{(self.proxy.dir / 'haproxy.log').read_text()[-3000:]}")
        return "\n".join(parts)


#: What `massgen-mcp worker` prints on stderr once it takes jobs.
WORKER_READY = "taking runs from"

