"""The server over streamable HTTP and SSE, with real clients: progress, auth, concurrency."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import httpx
import pytest
from agents import answer_then_vote
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp_harness import EXE, free_port, http_server, server_env, write_team
from scripted_provider import ScriptRequest

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "0"}}}
MCP_HEADERS = {"accept": "application/json, text/event-stream",
               "content-type": "application/json"}


@pytest.fixture
def team_path(provider, tmp_path: Path) -> Path:
    for name in ("h-a", "h-b", "h-c"):
        provider.script(name, answer_then_vote(f"answer {name}", "agent1", final="FINAL http"))
    return write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "h-a"), ("b", "anthropic", "h-b"), ("c", "gemini", "h-c")])


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_streamable_http_consensus_with_progress(team_path: Path, tmp_path: Path,
                                                       mode: str) -> None:
    with http_server(tmp_path, "--team", str(team_path)) as server:
        async with Client(server.url, mode=mode) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert "run_consensus" in names
            progress: list[str] = []

            async def on_progress(value: float, total: float | None, msg: str | None) -> None:
                progress.append(msg or "")

            r = await c.call_tool("run_consensus", {"task": "q"}, progress_callback=on_progress)  # type: ignore[arg-type]
            assert not r.is_error, r.content
            assert r.structured_content["final_answer"] == "FINAL http"
            assert any("answered" in m for m in progress)
            assert progress[-1] == "finished: completed"

            started = await c.call_tool("run_consensus", {"task": "q2", "wait": False})
            run_id = started.structured_content["run_id"]
            with anyio.fail_after(20):
                while True:
                    got = await c.call_tool("get_run", {"run_id": run_id})
                    if got.structured_content["status"] != "running":
                        break
                    await anyio.sleep(0.05)
            assert got.structured_content["status"] == "completed"


async def test_sse_transport(team_path: Path, tmp_path: Path) -> None:
    with http_server(tmp_path, "--team", str(team_path), transport="sse") as server:
        assert server.url.endswith("/sse")
        async with Client(sse_client(server.url), mode="legacy") as c:
            assert "run_consensus" in {t.name for t in (await c.list_tools()).tools}
            progress: list[str] = []

            async def on_progress(value: float, total: float | None, msg: str | None) -> None:
                progress.append(msg or "")

            r = await c.call_tool("run_consensus", {"task": "q"}, progress_callback=on_progress)  # type: ignore[arg-type]
            assert r.structured_content["status"] == "completed"
            assert progress and progress[-1] == "finished: completed"


async def test_token_is_required_when_set(team_path: Path, tmp_path: Path) -> None:
    token = "s3cret-token-for-tests"
    with http_server(tmp_path, "--team", str(team_path), "--token", token) as server:
        async with httpx.AsyncClient() as raw:
            denied = await raw.post(server.url, json=INIT, headers=MCP_HEADERS)
            assert denied.status_code == 401
            assert denied.headers["www-authenticate"].startswith("Bearer")
            assert token not in denied.text
            wrong = await raw.post(server.url, json=INIT,
                                   headers={**MCP_HEADERS, "authorization": "Bearer nope"})
            assert wrong.status_code == 401
            ok = await raw.post(server.url, json=INIT,
                                headers={**MCP_HEADERS, "authorization": f"Bearer {token}"})
            assert ok.status_code == 200
        import httpx2

        client = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"})
        async with Client(streamable_http_client(server.url, http_client=client),
                          mode="legacy") as c:
            assert (await c.list_tools()).tools
    assert not any(token in line for line in server.stderr)


async def test_host_and_origin_are_checked(team_path: Path, tmp_path: Path) -> None:
    with http_server(tmp_path) as server:
        async with httpx.AsyncClient() as raw:
            rebound = await raw.post(server.url, json=INIT,
                                     headers={**MCP_HEADERS, "host": "evil.example:80"})
            assert rebound.status_code == 421
            foreign = await raw.post(server.url, json=INIT,
                                     headers={**MCP_HEADERS, "origin": "https://evil.example"})
            assert foreign.status_code == 403


def test_binding_a_public_address_without_a_token_is_refused(tmp_path: Path) -> None:
    done = subprocess.run([EXE, "--transport", "streamable-http", "--host", "0.0.0.0",
                           "--port", str(free_port())], cwd=tmp_path, env=server_env(),
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert "without a token" in done.stderr and "MASSGEN_MCP_TOKEN" in done.stderr


async def test_public_address_with_token_requires_it(team_path: Path, tmp_path: Path) -> None:
    token = "another-test-token"
    with http_server(tmp_path, "--host", "0.0.0.0", env={"MASSGEN_MCP_TOKEN": token}) as server:
        url = server.url.replace("0.0.0.0", "127.0.0.1")
        async with httpx.AsyncClient() as raw:
            assert (await raw.post(url, json=INIT, headers=MCP_HEADERS)).status_code == 401
            ok = await raw.post(url, json=INIT,
                                headers={**MCP_HEADERS, "authorization": f"Bearer {token}"})
            assert ok.status_code == 200
            evil = await raw.post(url, json=INIT, headers={
                **MCP_HEADERS, "authorization": f"Bearer {token}", "host": "evil.example"})
            assert evil.status_code == 421


async def test_twenty_concurrent_runs_each_get_their_own_result(provider, tmp_path: Path):
    def echo_task(req: ScriptRequest):
        task = req.last_user_text.split("<ORIGINAL MESSAGE>\n", 1)[1].split("\n", 1)[0]
        return answer_then_vote(f"answer to {task}", "agent1", final=f"final for {task}")(req)

    provider.script("echo-1", echo_task)
    provider.script("echo-2", echo_task)
    team = write_team(tmp_path / "t.yaml", provider, [("x", "openai", "echo-1"),
                                                      ("y", "gemini", "echo-2")])
    results: dict[int, dict] = {}
    with http_server(tmp_path, "--team", str(team)) as server:
        async def one(i: int) -> None:
            async with Client(server.url, mode="legacy") as c:
                r = await c.call_tool("run_consensus", {"task": f"task-{i}"})
                results[i] = r.structured_content

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for i in range(20):
                    tg.start_soon(one, i)
    assert len(results) == 20
    for i, data in results.items():
        assert data["status"] == "completed"
        assert data["task"] == f"task-{i}"
        assert data["final_answer"] == f"final for task-{i}"
    assert len({d["run_id"] for d in results.values()}) == 20


async def test_sigterm_closes_live_runs_as_interrupted(provider, tmp_path: Path) -> None:
    import json
    import signal

    from scripted_provider import Hang

    provider.script("stuck", Hang())
    team = write_team(tmp_path / "t.yaml", provider, [("s", "openai", "stuck")])
    with http_server(tmp_path, "--team", str(team)) as server:
        async with Client(server.url, mode="legacy") as c:
            started = await c.call_tool("run_consensus", {"task": "t", "wait": False})
            run_id = started.structured_content["run_id"]
            await provider.wait_for("stuck", 1, timeout=15)
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(20) == 0
    result = json.loads((tmp_path / ".massgen" / "runs" / run_id / "result.json").read_text())
    assert result["status"] == "interrupted"
