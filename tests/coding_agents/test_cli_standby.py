"""Warm standbys of coding-agent CLIs between runs (runs/standby.py), with the real Claude Code
CLI against the loopback scripted provider: the next run starts on a process that is already
up, that made no model request while it waited, that carries nothing of the last run, and
that never outlives the server."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import answer_then_vote, has_answered, presenting
from cli_agents import (
    claude_backend,
    cli_agent,
    cli_env,
    cli_path,
    codex_backend,
    gemini_backend,
    leftover_processes,
    no_leftovers,
)
from scripted_provider import Call, ScriptedProvider, ScriptRequest, ToolCalls, answer, vote
from test_engine import WatchedPool

from massgen_mcp.backends import Backend
from massgen_mcp.backends.cli._live import StreamingCliBackend
from massgen_mcp.backends.cli._rpc import RpcCliBackend
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.config.team import Team
from massgen_mcp.runs.engine import Engine

pytestmark = pytest.mark.npm


@pytest.fixture
def short_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short temp dir for this test's standbys (and their Unix sockets, ~100 bytes max),
    so the process table can be searched for what lives under it."""
    path = Path(tempfile.mkdtemp(prefix="sb-", dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(path))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _team(provider: ScriptedProvider, model: str, sensitivity: str = "lenient",
          cli: str = "claude") -> Team:
    backend = {"claude": claude_backend, "gemini": gemini_backend,
               "codex": codex_backend}[cli](provider, model)
    return team_from_data({"agents": [{"id": "coder", "backend": backend}],
                           "orchestrator": {"voting_sensitivity": sensitivity}},
                          "standby.yaml", Environment({}))


async def _until_connected(root: Path) -> None:
    """Until the standby under `root` has started its workflow MCP server (Claude Code does
    that at the end of its start-up, before any message)."""
    with anyio.fail_after(90):
        while not any("workflow_server" in p for p in leftover_processes(str(root))):
            await anyio.sleep(0.05)  # polling the process table: there is no event to wait on


def _cli(backend: Backend) -> StreamingCliBackend:
    assert isinstance(backend, StreamingCliBackend)
    return backend


def _text(req: ScriptRequest) -> str:
    return json.dumps(req.raw) + json.dumps(req.headers)


@pytest.mark.parametrize("cli", ["claude", "gemini", "codex"])
async def test_the_next_run_takes_a_warm_standby_that_carries_nothing_of_the_last(
        provider: ScriptedProvider, tmp_path: Path, short_tmp: Path, cli: str) -> None:
    provider.script("warm", cli_agent(answer_then_vote("queue answer")))
    pool = WatchedPool(standby_size=2)
    engine = Engine(tmp_path / "state", Environment(cli_env()), pool=pool)
    team = _team(provider, "warm", cli=cli)
    first = await engine.prepare(team, "Task ALPHA-7781: which queue?").start()
    assert first.status == "completed", first.error
    cold = _cli(pool.seen[0])
    [first_session] = cold.sessions
    assert not cold.started_warm
    # The run left one standby, started as its first turn started the CLI.
    before = len(provider.requests)
    [standby] = pool.standbys.backends()
    assert standby.pid is not None and standby is not cold
    if isinstance(standby, RpcCliBackend):
        with anyio.fail_after(90):
            await standby.started()  # its `initialize` answered: its start-up is over
    else:
        await _until_connected(standby.root)
    assert len(provider.requests) == before  # warming made no model request

    second = await engine.prepare(team, "Task BETA-4410: which queue?").start()
    assert second.status == "completed", second.error
    warm = _cli(pool.seen[1])
    assert warm is standby and warm.started_warm and warm.invocations == 1
    later = provider.requests[before:]
    assert later and all("ALPHA-7781" not in _text(r) for r in later)
    opening = later[0]
    assert "BETA-4410" in opening.text
    # (The standby's own HOME may be named: it was made for the standby, after the first run.)
    for leaked in (first_session, str(first.log_dir), "queue answer"):
        assert leaked not in _text(opening), leaked
    # It works in the second run's own workspace, and its files are kept with that run.
    workspace = Path(second.log_dir) / "workspaces" / "coder"
    assert str(workspace.resolve()) in opening.text
    assert (Path(second.log_dir) / "agents" / "coder" / "cli.stderr.log").exists()
    assert warm.sessions and first_session not in warm.sessions
    assert not leftover_processes(str(standby.root))  # it ended with its run ...
    assert len(pool.standbys) == 1  # ... and left the next standby
    # The server exits: the standbys go at once, and nothing is left behind.
    engine.shut_down()
    assert len(pool.standbys) == 0
    assert not no_leftovers(str(short_tmp))
    await pool.aclose()


async def test_a_standby_that_does_not_fit_the_turn_is_replaced_by_a_cold_start(
        provider: ScriptedProvider, tmp_path: Path, short_tmp: Path) -> None:
    """The same member in a team whose voting rules changed: the first turn's system text is
    not the one the standby was started with, so the standby is stopped and the turn starts
    cold (the model never sees the old text); the run is unaffected."""
    provider.script("fit", cli_agent(answer_then_vote("an answer")))
    pool = WatchedPool(standby_size=1)
    engine = Engine(tmp_path / "state", Environment(cli_env()), pool=pool)
    assert (await engine.prepare(_team(provider, "fit"), "Q1?").start()).status == "completed"
    [standby] = pool.standbys.backends()
    before = len(provider.requests)
    second = await engine.prepare(_team(provider, "fit", "strict"), "Q2?").start()
    assert second.status == "completed", second.error
    warm = _cli(pool.seen[1])
    assert warm is standby and not warm.started_warm and warm.invocations == 2
    opening = provider.requests[before]
    assert "Be demanding" in opening.system and "Vote for an existing answer" not in _text(
        opening)
    # Its next standby is started the way this run's first turn started the CLI.
    [again] = pool.standbys.backends()
    assert again.pid is not None and again is not warm
    assert again._warm_plan is not None and "Be demanding" in again._warm_plan.system_text
    engine.shut_down()
    assert not no_leftovers(str(short_tmp))
    await pool.aclose()


KILLED_SERVER = """
import sys, time, anyio
from pathlib import Path
sys.path.insert(0, {tests!r})
from agents import answer_then_vote, has_answered, presenting
from cli_agents import claude_backend, cli_env
from scripted_provider import ScriptedProvider
from massgen_mcp.backends import Backend
from massgen_mcp.backends.cli._live import StreamingCliBackend
from massgen_mcp.backends.cli._rpc import RpcCliBackend
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.runs.engine import Engine
from massgen_mcp.runs.pool import BackendPool
p = ScriptedProvider()
p.root = {root!r}
team = team_from_data({{"agents": [{{"id": "coder", "backend": claude_backend(p, "sk")}}]}},
                      "t.yaml", Environment({{}}))
engine = Engine(Path({state!r}), Environment(cli_env()), pool=BackendPool(standby_size=1))
result = anyio.run(lambda: engine.prepare(team, "Q?").start())
print(result.status, len(engine.pool.standbys), flush=True)
time.sleep(600)
"""


async def test_a_killed_server_takes_its_standbys_with_it(
        provider: ScriptedProvider, tmp_path: Path, short_tmp: Path) -> None:
    cli_path("claude")  # the tier is decided here: a skip inside the child would not reach pytest
    provider.script("sk", cli_agent(answer_then_vote("an answer")))
    code = KILLED_SERVER.format(tests=str(Path(__file__).parents[1]), root=provider.root,
                                state=str(tmp_path / "state"))
    env: dict[str, Any] = {**cli_env(), "TMPDIR": str(short_tmp)}
    server = await anyio.open_process([sys.executable, "-c", code], env=env,
                                      stderr=subprocess.DEVNULL)
    try:
        assert server.stdout is not None
        with anyio.fail_after(120):
            line = await server.stdout.receive()
        assert line.decode().split() == ["completed", "1"]
        await _until_connected(short_tmp)  # the standby is up, idle, in the server's TMPDIR
        server.kill()  # SIGKILL: no cleanup code runs in the server
        await server.wait()
        with anyio.fail_after(10):
            while leftover_processes(str(short_tmp)):
                await anyio.sleep(0.05)  # polling the process table (no event to wait on)
    finally:
        if server.returncode is None:
            server.kill()
        await server.aclose()  # its pipes closed while the loop runs, not at garbage collection


def _snapshot_reader(outside: Path) -> Any:
    """Edits app.py in its workspace and answers; in its vote turn Reads its answer's snapshot
    (named in the prompt) and a file outside every directory it was given, then votes."""

    def script(req: ScriptRequest) -> Any:
        if presenting(req):
            return answer("FINAL: VALUE is 2")
        if not has_answered(req):
            if not any(r["name"] == "Edit" for r in req.tool_results):
                cwd = re.search(r"Primary working directory: (\S+)", req.text)
                assert cwd, "Claude Code's context names its working directory"
                return ToolCalls([Call("Edit", {"file_path": f"{cwd.group(1)}/app.py",
                                                "old_string": "VALUE = 1",
                                                "new_string": "VALUE = 2"})])
            return answer("I set VALUE to 2")
        snap = re.search(r"agent1\.1: read-only copy of its workspace at (\S+)", req.text)
        assert snap, "the prompt names the answer's snapshot"
        reads = [r for r in req.tool_results if r["name"] == "Read"]
        if len(reads) < 2:
            path = f"{snap.group(1)}/app.py" if not reads else str(outside)
            return ToolCalls([Call("Read", {"file_path": path})])
        return vote("agent1")

    return cli_agent(script)


async def test_a_warm_member_reads_the_runs_snapshots_and_nothing_outside(
        provider: ScriptedProvider, tmp_path: Path, short_tmp: Path) -> None:
    """The snapshot directory a cold start gets as --add-dir, a standby gets when it is moved:
    in both runs the member reads its answer's snapshot, and is refused a file elsewhere."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "app.py").write_text("VALUE = 1\n")
    outside = tmp_path / "elsewhere" / "private.txt"
    outside.parent.mkdir()
    outside.write_text("PRIVATE-99\n")
    provider.script("snap", _snapshot_reader(outside))
    team = team_from_data({"agents": [{"id": "coder", "backend": claude_backend(
        provider, "snap")}], "orchestrator": {"context_paths": [{"path": str(proj)}]}},
        "standby.yaml", Environment({}))
    pool = WatchedPool(standby_size=1)
    engine = Engine(tmp_path / "state", Environment(cli_env()), pool=pool)
    for i in range(2):
        before = len(provider.requests)
        result = await engine.prepare(team, "Set VALUE to 2").start()
        assert result.status == "completed", (result.error, [a.error for a in result.agents])
        assert _cli(pool.seen[i]).started_warm == (i == 1)
        reads = [r for req in provider.requests[before:] for r in req.tool_results
                 if r["name"] == "Read"]
        snapshot, elsewhere = reads[0], reads[1]
        assert "VALUE = 2" in snapshot["content"] and not snapshot["is_error"]
        assert "PRIVATE-99" not in elsewhere["content"]
    engine.shut_down()
    assert not no_leftovers(str(short_tmp))
    await pool.aclose()


async def test_a_server_keeps_standbys_and_takes_them_away_when_it_exits(
        provider: ScriptedProvider, tmp_path: Path, short_tmp: Path) -> None:
    """The real server over stdio (standbys are on by default there): after a run its member's
    CLI waits warm; when the client goes away the server exits and takes it along."""
    from mcp import Client
    from mcp_harness import stdio_params

    cli_path("claude")
    provider.script("srv", cli_agent(answer_then_vote("served answer")))
    team = tmp_path / "team.yaml"
    team.write_text(json.dumps({"agents": [{"id": "coder",
                                            "backend": claude_backend(provider, "srv")}]}))
    env = {**cli_env(), "TMPDIR": str(short_tmp)}
    async with Client(stdio_params(tmp_path, "--team", str(team), env=env),
                      mode="legacy") as client:
        r = await client.call_tool("run_consensus", {"task": "Which queue?"})
        assert not r.is_error and "status completed" in str(r.content[0])
        await _until_connected(short_tmp)  # the standby, in the server's TMPDIR
    assert not no_leftovers(str(short_tmp), timeout=20)
