"""Talk to massgen-mcp with real MCP clients: as a process (stdio, HTTP) or in memory."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import yaml
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from scripted_provider import ScriptedProvider

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.server import build_server
from massgen_mcp.urls import is_loopback_host

EXE = shutil.which("massgen-mcp") or str(Path(sys.executable).parent / "massgen-mcp")


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A clean environment: no provider keys, no inherited state directory."""
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and not k.startswith("MASSGEN_MCP")}
    env.update(extra or {})
    return env


def write_team(path: Path, provider: ScriptedProvider, agents: list[tuple[str, str, str]],
               **orchestrator: Any) -> Path:
    data = {"agents": [{"id": aid, "backend": provider.backend(wire, model, max_retries=0)}
                       for aid, wire, model in agents],
            "orchestrator": orchestrator}
    path.write_text(yaml.safe_dump(data))
    return path


def stdio_params(cwd: Path, *args: str, env: dict[str, str] | None = None
                 ) -> StdioServerParameters:
    return StdioServerParameters(command=EXE, args=list(args), env=server_env(env),
                                 cwd=str(cwd))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RunningServer:
    def __init__(self, proc: subprocess.Popen[str], url: str, stderr: list[str]) -> None:
        self.proc, self.url, self.stderr = proc, url, stderr


@contextmanager
def started(cmd: list[str], cwd: Path, env: dict[str, str] | None, ready_when: str,
            what: str, timeout: float = 30.0, stop_seconds: float = 10.0
            ) -> Iterator[tuple[subprocess.Popen[str], list[str], str]]:
    """Run `cmd` in its own process group and yield (process, stderr lines so far, the line
    that says it is ready: the first containing `ready_when`); SIGTERM to the group when
    done (SIGKILL after `stop_seconds`)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=server_env(env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    lines: list[str] = []
    ready: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if ready_when in line:
                ready.put(line)
        ready.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        try:
            line = ready.get(timeout=timeout)
        except queue.Empty:
            line = None
        if line is None:
            raise RuntimeError(f"{what} did not start:\n" + "".join(lines))
        yield proc, lines, line
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(stop_seconds)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@contextmanager
def http_server(cwd: Path, *args: str, transport: str = "streamable-http",
                env: dict[str, str] | None = None, timeout: float = 30.0, auth: bool = False
                ) -> Iterator[RunningServer]:
    """Run `massgen-mcp --transport ...` and yield once it prints that it is listening.
    Without a credential of its own (`--token`, `--auth-file`, `MASSGEN_MCP_TOKEN`) on
    loopback it is started `--no-token`, or `auth=True` to keep the generated token."""
    credentials = {"--token", "--auth-file", "--no-token"}
    host = args[args.index("--host") + 1] if "--host" in args else "127.0.0.1"
    if not (auth or credentials & set(args) or "MASSGEN_MCP_TOKEN" in (env or {})
            or not is_loopback_host(host)):
        args = (*args, "--no-token")
    cmd = [EXE, "--transport", transport, "--port", str(free_port()), *args]
    with started(cmd, cwd, env, "listening on", "server", timeout) as (proc, lines, line):
        url = line.split("listening on ", 1)[1].split(" ", 1)[0]
        yield RunningServer(proc, url, lines)


@asynccontextmanager
async def memory_client(cwd: Path, *, team: str | Path | None = None,
                        env: dict[str, str] | None = None, mode: str = "legacy",
                        **client_options: Any) -> AsyncIterator[Client]:
    """The real server, built as `massgen-mcp` builds it, behind the SDK's in-memory client.

    For tool contracts and arguments, where the process is not the point; background runs
    get a task group as they do in the real server.
    """
    app = App(cwd / ".massgen", default_team=str(team) if team else None,
              env=Environment(env or {}, dotenv_dir=cwd), cwd=cwd)
    mcp, host = build_server(app)
    async with anyio.create_task_group() as background:
        host.background = background
        async with Client(mcp, mode=mode, **client_options) as client:
            yield client
        background.cancel_scope.cancel()
