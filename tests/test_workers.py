"""Workers (`massgen-mcp worker --store redis://...`): front ends hand runs to them through the
job queue and answer from the run's event stream.

Real parts: Debian's redis-server (`redis_url`), workers as subprocesses of the installed
command, the scripted provider on loopback (the workers call it), front ends as the real
server behind the SDK's in-memory client (`front_end`), so a tool call goes through the same
host, progress and tasks code a client reaches over HTTP.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import pytest
from agents import answer_then_vote
from mcp import Client
from mcp_harness import EXE, server_env, write_team
from scripted_provider import ScriptedProvider

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.runs.store import RUN_FINISHED
from massgen_mcp.runs.store_open import open_store
from massgen_mcp.server import build_server

START_TIMEOUT = 60.0  # a worker imports the app and connects; bounded, generous under load


class WorkerProcess:
    def __init__(self, proc: subprocess.Popen[str], lines: list[str]) -> None:
        self.proc, self.lines = proc, lines

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def signal(self, sig: int) -> None:
        os.killpg(self.proc.pid, sig)


@contextmanager
def worker(cwd: Path, redis_url: str, team: Path | None, *args: str,
           env: dict[str, str] | None = None) -> Iterator[WorkerProcess]:
    """`massgen-mcp worker --store URL --team TEAM ...`, once it says it takes runs."""
    cmd = [EXE, "worker", "--store", redis_url, "--log-level", "INFO",
           *(["--team", str(team)] if team else []), *args]
    proc = subprocess.Popen(cmd, cwd=cwd, env=server_env(env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    lines: list[str] = []
    ready: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "taking runs from" in line:
                ready.put(line)
        ready.put(None)

    threading.Thread(target=read, daemon=True).start()
    w = WorkerProcess(proc, lines)
    try:
        try:
            line = ready.get(timeout=START_TIMEOUT)
        except queue.Empty:
            line = None
        if line is None:
            raise RuntimeError("worker did not start:\n" + "".join(lines))
        yield w
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@asynccontextmanager
async def front_end(cwd: Path, redis_url: str, team: Path, *,
                    queue_timeout: float = 120.0) -> AsyncIterator[tuple[Client, App]]:
    """The server as `massgen-mcp --store URL --team TEAM` builds it (dispatching to
    workers), behind the SDK's in-memory client."""
    state = cwd / ".massgen"
    app = App(state, default_team=str(team), env=Environment({}, dotenv_dir=cwd), cwd=cwd,
              store=open_store(redis_url, state))
    app.hand_runs_to_workers(queue_timeout)
    mcp, host = build_server(app)
    async with anyio.create_task_group() as background:
        host.background = background
        async with Client(mcp) as client:
            yield client, app
        background.cancel_scope.cancel()


@pytest.fixture
def team_path(provider: ScriptedProvider, tmp_path: Path) -> Path:
    provider.script("w-a", answer_then_vote("Use Kafka", "agent2", final="FINAL: Kafka"))
    provider.script("w-b", answer_then_vote("Use Kafka too", "agent2", final="FINAL: Kafka"))
    return write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "w-a"), ("b", "anthropic", "w-b")], early_stop=False)


async def test_a_worker_runs_the_front_ends_call_with_progress(
        team_path: Path, tmp_path: Path, redis_url: str, provider: ScriptedProvider) -> None:
    progress: list[str] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message or "")

    with worker(tmp_path, redis_url, team_path) as w:
        async with front_end(tmp_path, redis_url, team_path) as (client, app):
            result = await client.call_tool("run_consensus", {"task": "Which queue?"},
                                            progress_callback=on_progress)  # type: ignore[arg-type]
            assert not result.is_error, result.content
            data = result.structured_content
            assert data is not None
            assert (data["status"], data["final_answer"]) == ("completed", "FINAL: Kafka")
            run_id = data["run_id"]
            events = app.run_events(run_id)
            got = await client.call_tool("get_run", {"run_id": run_id})
            assert got.structured_content and got.structured_content["status"] == "completed"
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "queued" and "worker_started" in kinds and kinds[-1] == RUN_FINISHED
    [started] = [e for e in events if e["kind"] == "worker_started"]
    assert f"-{w.proc.pid}-" in started["worker"]  # executed by the worker process
    assert events[-1]["status"] == "completed"
    assert progress[0].startswith("waiting for a worker")
    assert any("a worker took the run" in m for m in progress)
    assert any("answered (" in m for m in progress)
    assert progress[-1] == "finished: completed"
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert provider.requests_for("w-a")
