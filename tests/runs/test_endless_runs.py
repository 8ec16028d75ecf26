"""Every run ends with a status, whatever a provider sends, a config holds or a client does;
and the server's own limits: half-sent HTTP requests, results too big for SDK clients,
tool servers left behind by a killed server."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from agents import answer_then_vote, has_answered
from helpers import make_team
from mcp import Client
from mcp_harness import EXE, http_server, server_env, write_team
from scripted_provider import Call, Hang, ScriptedProvider, ToolCalls

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.config.team import Team
from massgen_mcp.runs.engine import Engine
from massgen_mcp.server import build_server

SERVER = str(Path(__file__).parents[1] / "tool_server.py")


def run_files(state: Path) -> list[Path]:
    return [p for p in (state / "runs").rglob("*") if p.is_file()]


async def test_a_lone_surrogate_from_a_provider_still_ends_the_run(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    """`"\\ud800"` in a reply's arguments used to make the record unwritable: `wait=true`
    never returned and status.json stayed `running`."""
    bad = ToolCalls([Call("new_answer", '{"content": "Kafka \\ud800 wins"}')])

    def script(req):  # answer with the bad text, then vote like the others
        return bad if not req.tool_results and not has_answered(req) \
            else answer_then_vote("Kafka")(req)

    provider.script("m1", script)
    provider.script("m2", answer_then_vote("Kafka", final="FINAL \ud800"))
    team = make_team(provider, [("a1", "openai", "m1"), ("a2", "openai", "m2")])
    app = App(tmp_path / ".massgen", env=Environment({}, dotenv_dir=tmp_path), cwd=tmp_path,
              default_team="unused")
    server, _ = build_server(app)
    prepared = app.consensus(team, "Which queue?")
    result = await prepared.start()
    assert result.status != "running"
    async with Client(server) as c:
        got = await c.call_tool("get_run", {"run_id": result.run_id})
        assert not got.is_error and got.structured_content["status"] == result.status
    files = run_files(tmp_path / ".massgen")
    assert not [p for p in files if p.name.endswith(".tmp")]
    for p in files:
        p.read_bytes().decode("utf-8")  # every record is valid UTF-8
    status = json.loads((tmp_path / ".massgen" / "runs" / result.run_id / "status.json")
                        .read_text())
    assert status["status"] == result.status


async def test_a_backend_that_cannot_be_built_fails_the_run_not_the_server(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    """An out-of-range value that slipped past validation (here forced in) used to raise
    before the run's `try`: the run stayed `running` and cancel_run said `cancelled`."""
    team = make_team(provider, [("a1", "gemini", "m1")])
    spec = team.agents[0]
    broken = spec.backend.model_copy(update={"request_timeout_seconds": math.inf})
    team = Team(team.name, (dataclasses.replace(spec, backend=broken),), team.orchestrator,
                team.source)
    engine = Engine(tmp_path / ".massgen", Environment({}))
    with anyio.fail_after(30):
        result = await engine.prepare(team, "Which queue?").start()
    assert result.status == "failed" and result.error
    assert engine.get(result.run_id).status == "failed"
    assert await engine.cancel_and_wait(result.run_id) == (False, "failed")


def _raw_session(team: Path, cwd: Path) -> tuple[subprocess.Popen[bytes], Path]:
    proc = subprocess.Popen([EXE, "--team", str(team)], cwd=cwd, env=server_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "run_consensus", "arguments": {"task": "t"}}}]
    assert proc.stdin is not None
    proc.stdin.write(b"".join((json.dumps(m) + "\n").encode() for m in messages))
    proc.stdin.flush()
    return proc, cwd / ".massgen" / "runs"


@pytest.mark.parametrize("how", ["sigterm", "stdin_closed"])
async def test_a_stopped_server_records_why(provider: ScriptedProvider, tmp_path: Path,
                                            how: str) -> None:
    provider.script("stuck", Hang())
    team = write_team(tmp_path / "t.yaml", provider, [("s", "openai", "stuck"),
                                                      ("s2", "openai", "stuck")])
    proc, runs = _raw_session(team, tmp_path)
    try:
        await provider.wait_for("stuck", 2, timeout=30)
        if how == "sigterm":
            proc.send_signal(signal.SIGTERM)
        else:
            assert proc.stdin is not None
            proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (run,) = runs.iterdir()
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "interrupted"
    assert "None" not in result["error"]
    want = "SIGTERM" if how == "sigterm" else "client disconnected"
    assert want in result["error"]


# ---------------------------------------------------------------------------- tool servers


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigkill_while_tool_servers_start_leaves_no_orphan(tmp_path: Path) -> None:
    """Servers still starting (not reading stdin) used to outlive a SIGKILLed parent."""
    pids = tmp_path / "pids"
    slow = (f"echo $$ >> {pids}; sleep 60; exec '{sys.executable}' '{SERVER}'")
    script = f"""
import anyio
from pathlib import Path
from massgen_mcp.tools.session import open_toolboxes
from massgen_mcp.config.team import MCPServerConfig

async def main():
    servers = [MCPServerConfig(name=f"s{{i}}", command="/bin/sh", args=["-c", {slow!r}])
               for i in range(3)]
    async with open_toolboxes({{"a": servers}}, run_dir=Path({str(tmp_path)!r}),
                              startup_timeout=120, call_timeout=5):
        pass

anyio.run(main)
"""
    proc = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (
                not pids.exists() or len(pids.read_text().split()) < 3):
            time.sleep(0.05)
        shells = [int(p) for p in pids.read_text().split()]
        assert len(shells) == 3 and all(_group_alive(os.getpgid(p)) for p in shells)
        groups = [os.getpgid(p) for p in shells]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_group_alive(g) for g in groups):
            time.sleep(0.05)
        assert not any(_group_alive(g) for g in groups)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------------------- HTTP limits


def test_half_sent_http_requests_are_closed(provider: ScriptedProvider, tmp_path: Path) -> None:
    team = write_team(tmp_path / "t.yaml", provider, [("a", "openai", "m1")])
    with http_server(tmp_path, "--team", str(team), "--request-timeout", "1") as server:
        host, port = server.url.split("//", 1)[1].split("/", 1)[0].split(":")
        socks = []
        for i in range(40):
            s = socket.create_connection((host, int(port)), timeout=10)
            if i % 2:  # half a header; or a whole header and half a body
                s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            else:
                s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"
                          b"Content-Type: application/json\r\n\r\n{\"jsonrpc\"")
            socks.append(s)
        for s in socks:  # the server closes each one (EOF), well before our own timeout
            while True:
                try:
                    if s.recv(65536) == b"":
                        break
                except ConnectionResetError:
                    break
            s.close()
        ok = socket.create_connection((host, int(port)), timeout=10)
        ok.sendall(b"GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert ok.recv(100).startswith(b"HTTP/1.1 ")
        ok.close()


async def test_results_over_a_megabyte_reach_the_python_client(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    big = "x" * 700_000
    provider.script("m1", answer_then_vote(big, final=big))
    provider.script("m2", answer_then_vote(big, final=big))
    team = write_team(tmp_path / "t.yaml", provider, [("a", "openai", "m1"),
                                                      ("b", "openai", "m2")])
    with http_server(tmp_path, "--team", str(team)) as server:
        async with Client(server.url, mode="legacy") as c:
            with anyio.fail_after(60):
                r = await c.call_tool("run_consensus", {"task": "Which queue?"})
    assert r.structured_content["status"] == "completed"
    assert r.structured_content["final_answer_truncated"] is True
    link = r.content[1]
    assert link.type == "resource_link"
    assert str(link.uri) == f"massgen://runs/{r.structured_content['run_id']}/answer"
    full = json.loads((Path(r.structured_content["log_dir"]) / "result.json").read_text())
    assert len(full["final_answer"]) >= 700_000
