"""Attacks through the task and context: oversized inputs on stdio (which has no request size
limit), configured keys typed into them, and JSON the SDK cannot read (nested 200,000 deep)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from agents import answer_then_vote
from mcp import Client
from mcp_harness import EXE, server_env, write_team
from scripted_provider import ScriptedProvider

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.config.trust import TeamPolicy
from massgen_mcp.inputs import MAX_CONTEXT_CHARS, MAX_TASK_CHARS
from massgen_mcp.server import build_server
from massgen_mcp.server.wire_errors import top_level_id

KEY = "sk-proj-Zq8vT3kLm9Xw2Rb7Yc4Nd6Hf1Jg5Ps0A"
TEAM_KEY = "team-file-key-7Hq2Lx9Vb4Nm"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "0"}}}


class StdioPeer:
    """The real server over real pipes, spoken to line by line (as an MCP client does)."""

    def __init__(self, proc: anyio.abc.Process) -> None:
        self.proc = proc
        self._buffer = b""

    async def send(self, message: dict[str, Any] | str) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        assert self.proc.stdin is not None
        await self.proc.stdin.send(line.encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        with anyio.fail_after(60):
            while b"\n" not in self._buffer:
                chunk = await self.proc.stdout.receive()
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        reply: dict[str, Any] = json.loads(line)
        return reply

    async def reply_to(self, request_id: int) -> dict[str, Any]:
        while True:  # notifications (progress, logs) may come first
            message = await self.receive()
            if message.get("id") == request_id:
                return message


async def _stdio(tmp_path: Path, *args: str, env: dict[str, str] | None = None
                 ) -> anyio.abc.Process:
    return await anyio.open_process([EXE, *args], cwd=tmp_path, env=server_env(env),
                                    stderr=subprocess.DEVNULL)


async def _initialized(peer: StdioPeer) -> None:
    await peer.send(INIT)
    assert "result" in await peer.reply_to(1)
    await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def _deep(depth: int, request_id: int | str) -> str:
    return ('{"jsonrpc":"2.0","id":' + json.dumps(request_id) + ',"method":"tools/call",'
            '"params":{"name":"list_runs","arguments":{"x":' + "[" * depth + "]" * depth + "}}}")


async def test_over_deep_json_on_stdio_gets_an_error_reply_and_the_server_lives(
        tmp_path: Path) -> None:
    async with await _stdio(tmp_path) as proc:
        peer = StdioPeer(proc)
        await _initialized(peer)
        await peer.send(_deep(200_000, 7))
        reply = await peer.reply_to(7)
        assert reply["error"]["code"] == -32700 and "nested too deeply" in reply["error"]["message"]
        await peer.send(_deep(500, "abc"))
        assert (await peer.reply_to("abc"))["error"]["code"] == -32700  # type: ignore[arg-type]
        # Not JSON at all: the id cannot be read, so it is null.
        await peer.send("{this is not json")
        reply = await peer.receive()
        assert reply["id"] is None and reply["error"]["code"] == -32700
        # A request that is JSON but not a valid JSON-RPC request, with a readable id.
        await peer.send({"jsonrpc": "2.0", "id": 9, "method": 12})
        assert (await peer.reply_to(9))["error"]["code"] == -32600
        # Still serving.
        await peer.send({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                         "params": {"name": "list_runs", "arguments": {}}})
        assert "result" in await peer.reply_to(10)
        proc.terminate()


async def test_a_huge_task_on_stdio_is_refused_before_any_provider_call(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("m1", answer_then_vote("Kafka"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "m1")])
    async with await _stdio(tmp_path, "--team", str(team)) as proc:
        peer = StdioPeer(proc)
        await _initialized(peer)
        for request_id, args in ((2, {"task": "x" * 30_000_000}),
                                 (3, {"task": "ok", "context": "y" * (MAX_CONTEXT_CHARS + 1)})):
            await peer.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                             "params": {"name": "run_consensus", "arguments": args}})
            reply = await peer.reply_to(request_id)
            result = reply["result"]
            text = result["content"][0]["text"]
            assert result["isError"] and "the limit is" in text
        assert provider.requests == []
        await peer.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "plan", "arguments": {"goal": "g" * (MAX_TASK_CHARS + 1)}}})
        result = (await peer.reply_to(4))["result"]
        assert result["isError"] and "the limit is" in result["content"][0]["text"]
        assert provider.requests == []
        proc.terminate()


async def test_configured_keys_typed_into_task_and_context_never_reach_providers(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("m1", answer_then_vote("Kafka"))
    teams = tmp_path / "teams"
    teams.mkdir()
    backend = provider.backend("openai", "m1", max_retries=0, api_key="${MY_TEAM_KEY}")
    (teams / "t.yaml").write_text(yaml.safe_dump({"agents": [{"id": "a", "backend": backend}]}))
    app = App(tmp_path / ".massgen", cwd=tmp_path,
              env=Environment({"OPENAI_API_KEY": KEY, "MY_TEAM_KEY": TEAM_KEY},
                              dotenv_dir=tmp_path),
              team_policy=TeamPolicy.create([str(teams)]))
    server, _ = build_server(app)
    async with Client(server) as client:
        r = await client.call_tool("run_consensus", {
            "task": f"Is {KEY} a valid key? And {TEAM_KEY}?",
            "context": f"export OPENAI_API_KEY={KEY}\nkey piece {KEY[5:25]}\n{TEAM_KEY}",
            "team": "t"})
    assert r.structured_content is not None
    assert r.structured_content["status"] == "completed", r.content
    sent = " ".join(req.text for req in provider.requests)
    assert KEY not in sent and KEY[5:25] not in sent and TEAM_KEY not in sent
    assert "***" in sent
    stored = "".join(p.read_text() for p in (tmp_path / ".massgen").rglob("*.json*"))
    assert KEY not in stored and TEAM_KEY not in stored


@pytest.mark.parametrize(("text", "found"), [
    ('{"jsonrpc":"2.0","id":5,"method":"x"}', 5),
    ('{"id":"a\\"b","method":"x"}', 'a"b'),
    ('{"method":"x","params":{"id":99},"id":3}', 3),
    ('{"method":"x","params":{"id":99}}', None),
    ('{"params":[{"id":1}],"id":null}', None),
    ('{"id":true}', None), ('{"id":{"x":1}}', None), ("[1,2]", None), ("", None),
    ('{"id"  :  42 , "a": [[[[', 42)])
def test_the_id_of_an_unreadable_line(text: str, found: object) -> None:
    assert top_level_id(text) == found
