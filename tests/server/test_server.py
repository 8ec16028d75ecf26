# mypy: disable-error-code="union-attr"
# (read as the client gets them: a field of another kind fails the test)
"""The MCP server's tool contract through the SDK's real client.

The tools, arguments and results are exercised in memory (`memory_client`: the real server
object behind the SDK's in-memory transport). Where the process is the point (stdio in both
protocol eras, restarts, signals) the server runs as `massgen-mcp` over stdio.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from agents import PRESENT, YOUR_OWN, answer_then_vote, has_answered, presenting
from mcp import Client
from mcp_harness import memory_client, stdio_params, write_team
from scripted_provider import Hang, ScriptRequest, answer

TOOLS = {"run_consensus", "get_run", "list_runs", "cancel_run", "list_backends", "plan",
         "get_plan", "list_plans", "checkpoint_init", "checkpoint"}


@pytest.fixture
def team_path(provider, tmp_path: Path) -> Path:
    provider.script("m-a", answer_then_vote("Use Kafka", "agent2", final="FINAL: Kafka"))
    provider.script("m-b", answer_then_vote("Use Kafka too", "agent2", final="FINAL: Kafka"))
    provider.script("m-c", answer_then_vote("Use SQS", "agent2", final="FINAL: Kafka"))
    return write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "m-a"), ("b", "anthropic", "m-b"), ("c", "gemini", "m-c")],
                      early_stop=False)  # every vote counted (early stop: test_decisions.py)


async def poll_status(client: Client, run_id: str, until: set[str], timeout: float = 20) -> dict:
    """Follow a run the way a client with a short tool timeout would: get_run until done."""
    with anyio.fail_after(timeout):
        while True:
            r = await client.call_tool("get_run", {"run_id": run_id})
            assert not r.is_error, r.content
            if r.structured_content["status"] in until:
                return r.structured_content
            await anyio.sleep(0.05)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_tools_list_and_a_consensus_with_progress(team_path: Path, tmp_path: Path,
                                                        mode: str) -> None:
    async with Client(stdio_params(tmp_path, "--team", str(team_path)), mode=mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) >= TOOLS
        for tool in listed.values():
            assert tool.description and len(tool.description) > 30
            assert tool.input_schema["type"] == "object"
        assert listed["run_consensus"].output_schema is not None
        assert "final_answer" in listed["run_consensus"].output_schema["properties"]
        assert listed["run_consensus"].input_schema["required"] == ["task"]

        progress: list[tuple[float, str | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, message))

        result = await client.call_tool("run_consensus", {"task": "Which queue?"},
                                        progress_callback=on_progress)  # type: ignore[arg-type]
        assert not result.is_error, result.content
        data = result.structured_content
        assert data["status"] == "completed"
        assert data["final_answer"] == "FINAL: Kafka"
        assert data["winner"]["agent_id"] == "b"  # everyone voted agent2 = b
        text = result.content[0].text
        # The text opens with the answer's first lines, then the short summary.
        assert text.startswith("FINAL: Kafka\n\nWinner: b (m-b), with 3 of 3 votes cast")
        values = [v for v, _ in progress]
        assert values == sorted(values) and len(set(values)) == len(values)
        messages = [m for _, m in progress if m]
        assert any("answered (" in m for m in messages)
        assert any("(3 of 3 votes cast): " in m for m in messages)
        assert any("presenting" in m for m in messages)
        assert messages[-1] == "finished: completed"


async def test_wait_false_then_get_run_and_resources(team_path: Path, tmp_path: Path) -> None:
    async with memory_client(tmp_path, team=team_path) as c:
        started = await c.call_tool("run_consensus", {"task": "Which queue?", "wait": False})
        assert not started.is_error, started.content
        run_id = started.structured_content["run_id"]
        assert started.structured_content["status"] in ("running", "completed")
        assert run_id in started.content[0].text
        final = await poll_status(c, run_id, {"completed"})
        assert final["final_answer"] == "FINAL: Kafka"

        runs = await c.call_tool("list_runs", {"limit": 5})
        assert runs.structured_content["runs"][0]["run_id"] == run_id

        templates = {t.uri_template for t in (await c.list_resource_templates()
                                              ).resource_templates}
        assert {"massgen://runs/{run_id}", "massgen://runs/{run_id}/events"} <= templates
        resource = await c.read_resource(f"massgen://runs/{run_id}")
        assert json.loads(resource.contents[0].text)["status"] == "completed"
        events = await c.read_resource(f"massgen://runs/{run_id}/events")
        kinds = [json.loads(line)["kind"] for line in events.contents[0].text.splitlines()]
        assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
        listed = {str(r.uri) for r in (await c.list_resources()).resources}
        assert "massgen://runs" in listed


async def test_prompts_are_listed_and_rendered(tmp_path: Path) -> None:
    async with memory_client(tmp_path) as c:
        prompts = {p.name: p for p in (await c.list_prompts()).prompts}
        assert {"consensus", "review"} <= set(prompts)
        assert all(p.description for p in prompts.values())
        got = await c.get_prompt("consensus", {"question": "Tabs or spaces?"})
        assert "Tabs or spaces?" in got.messages[0].content.text
        assert "run_consensus" in got.messages[0].content.text


async def test_cancel_run_stops_a_background_run(provider, tmp_path: Path) -> None:
    provider.script("stuck", Hang())
    team = write_team(tmp_path / "t.yaml", provider, [("s", "openai", "stuck")])
    async with memory_client(tmp_path, team=team) as c:
        started = await c.call_tool("run_consensus", {"task": "t", "wait": False})
        run_id = started.structured_content["run_id"]
        await provider.wait_for("stuck", 1, timeout=10)
        cancelled = await c.call_tool("cancel_run", {"run_id": run_id})
        assert cancelled.structured_content["cancelled"] is True
        final = await poll_status(c, run_id, {"cancelled"})
        assert final["status"] == "cancelled"
        again = await c.call_tool("cancel_run", {"run_id": run_id})
        assert again.structured_content["cancelled"] is False


async def test_client_cancel_stops_the_run(provider, tmp_path: Path) -> None:
    provider.script("stuck", Hang())
    team = write_team(tmp_path / "t.yaml", provider, [("s", "anthropic", "stuck")])
    async with memory_client(tmp_path, team=team) as c:
        async with anyio.create_task_group() as tg:
            tg.start_soon(c.call_tool, "run_consensus", {"task": "t"})
            await provider.wait_for("stuck", 1, timeout=10)
            tg.cancel_scope.cancel()  # the SDK client sends notifications/cancelled
        runs = await c.call_tool("list_runs", {})
        run_id = runs.structured_content["runs"][0]["run_id"]
        final = await poll_status(c, run_id, {"cancelled"})
        assert final["status"] == "cancelled"
        assert provider.requests_for("stuck")  # the hanging request was abandoned


@pytest.mark.parametrize(("arguments", "expected"), [
    ({}, "task"),
    ({"task": "x", "models": "nosuch/model-1"}, "'nosuch' is not a known backend"),
    ({"task": "x", "models": "openai/gpt-5"}, "OPENAI_API_KEY"),
    ({"task": "x", "team": "no-such-team"}, "no team named 'no-such-team'"),
    ({"task": "x", "files": ["missing.txt"]}, "'missing.txt' is not found"),
    ({"task": "x", "files": ["../outside.txt"]}, "outside the working directory"),
    ({"task": "  "}, "task is empty"),
    ({"task": "x", "timeout_s": -1}, "timeout_s"),
])
async def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(
        team_path: Path, tmp_path: Path, arguments: dict[str, Any], expected: str) -> None:
    (tmp_path.parent / "outside.txt").write_text("secret")
    async with memory_client(tmp_path, team=team_path) as c:
        r = await c.call_tool("run_consensus", arguments)
        assert r.is_error
        assert expected in r.content[0].text
        assert "Traceback" not in r.content[0].text
        assert (await c.list_tools()).tools  # still serving


async def test_files_are_given_to_the_agents(provider, tmp_path: Path) -> None:
    seen: list[str] = []

    def reader(req: ScriptRequest):
        seen.append(req.last_user_text)
        if presenting(req) or not has_answered(req):
            return answer("read it")
        return answer_then_vote("x", "agent1")(req)

    provider.script("reader", reader)
    team = write_team(tmp_path / "t.yaml", provider, [("r", "openai", "reader")])
    (tmp_path / "notes.md").write_text("THE-FILE-CONTENT-42")
    async with memory_client(tmp_path, team=team) as c:
        r = await c.call_tool("run_consensus", {"task": "Summarize", "files": ["notes.md"],
                                                "context": "EXTRA-CONTEXT"})
        assert not r.is_error, r.content
    assert "THE-FILE-CONTENT-42" in seen[0] and "EXTRA-CONTEXT" in seen[0]
    assert "=== notes.md ===" in seen[0]


async def test_no_keys_and_no_sampling_gives_one_clear_error(tmp_path: Path) -> None:
    async with memory_client(tmp_path) as c:
        r = await c.call_tool("run_consensus", {"task": "hello"})
        assert r.is_error
        text = r.content[0].text
        assert "OPENAI_API_KEY" in text and "models=" in text and "doctor" in text


def _sampling_agent(context: Any, params: types.CreateMessageRequestParams
                    ) -> types.CreateMessageResult:
    text = params.messages[-1].content.text
    if PRESENT in text:
        reply = {"tool": "new_answer", "arguments": {"content": "sampled final"}}
    elif YOUR_OWN in text:
        reply = {"tool": "vote", "arguments": {"agent_id": "agent1", "reason": "fine"}}
    else:
        reply = {"tool": "new_answer", "arguments": {"content": "sampled answer"}}
    return types.CreateMessageResult(role="assistant", model="client-llm", content=types.
                                     TextContent(type="text", text=json.dumps(reply)))


async def test_sampling_team_is_the_default_without_keys(tmp_path: Path) -> None:
    async def callback(context: Any, params: Any) -> types.CreateMessageResult:
        return _sampling_agent(context, params)

    async with memory_client(tmp_path, sampling_callback=callback) as c:
        r = await c.call_tool("run_consensus", {"task": "Say hi"})
        assert not r.is_error, r.content
        assert r.structured_content["final_answer"] == "sampled final"
        assert r.structured_content["team"] == "sampling"
        backends = await c.call_tool("list_backends", {})
        assert backends.structured_content["sampling_available"] is True
        assert backends.structured_content["default_team"].startswith("sampling")


async def test_sampling_on_2026_protocol_fails_clearly(tmp_path: Path) -> None:
    async def callback(context: Any, params: Any) -> types.CreateMessageResult:
        return _sampling_agent(context, params)

    async with memory_client(tmp_path, mode="2026-07-28", sampling_callback=callback) as c:
        r = await c.call_tool("run_consensus", {"task": "Say hi", "models": "sampling"})
        assert r.is_error
        text = r.content[0].text
        assert "2026-07-28" in text and "models=" in text


async def test_list_backends_never_shows_a_key(tmp_path: Path) -> None:
    key = "sk-test-1234567890abcdefghijklmnop"
    async with memory_client(tmp_path, env={"OPENAI_API_KEY": key}) as c:
        r = await c.call_tool("list_backends", {})
        dumped = json.dumps(r.structured_content) + r.content[0].text
        assert key not in dumped and key[-4:] not in dumped
        openai = next(p for p in r.structured_content["providers"] if p["provider"] == "openai")
        assert openai["usable"] is True and openai["key_present"] is True
        anthropic = next(p for p in r.structured_content["providers"]
                         if p["provider"] == "claude")
        assert "ANTHROPIC_API_KEY" in anthropic["fix"]
        prices = r.structured_content["prices"]
        assert prices["openai"] and r.structured_content["prices_as_of"]
        assert all(p["input_per_mtok"] >= 0 for p in prices["openai"].values())


async def test_finished_runs_survive_a_restart_and_live_ones_become_interrupted(
        provider, team_path: Path, tmp_path: Path) -> None:
    async with memory_client(tmp_path, team=team_path) as c:
        done = await c.call_tool("run_consensus", {"task": "Which queue?"})
        done_id = done.structured_content["run_id"]
    provider.script("stuck", Hang())
    hang_team = write_team(tmp_path / "hang.yaml", provider, [("s", "openai", "stuck")])
    # Kill the server hard while a run is live: nothing gets to write a final record.
    import subprocess

    from mcp_harness import EXE, server_env
    proc = subprocess.Popen([EXE, "run", "t", "--team", str(hang_team), "--quiet"],
                            cwd=tmp_path, env=server_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    await provider.wait_for("stuck", 1, timeout=15)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    async with memory_client(tmp_path) as c:
        again = await c.call_tool("get_run", {"run_id": done_id})
        assert again.structured_content["status"] == "completed"
        assert again.structured_content["final_answer"] == "FINAL: Kafka"
        runs = (await c.call_tool("list_runs", {})).structured_content["runs"]
        assert runs[0]["status"] == "interrupted"
        assert {r["run_id"] for r in runs} >= {done_id}
        bad = await c.call_tool("get_run", {"run_id": "../../etc/passwd"})
        assert bad.is_error and "not a run id" in bad.content[0].text


async def test_sigterm_on_stdio_closes_the_live_run_as_interrupted(provider, tmp_path: Path):
    from mcp_harness import EXE, server_env
    from scripted_provider import Hang

    provider.script("stuck", Hang())
    team = write_team(tmp_path / "t.yaml", provider, [("s", "openai", "stuck")])
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "run_consensus", "arguments": {"task": "t"}}}]
    async with await anyio.open_process([EXE, "--team", str(team)], cwd=tmp_path,
                                        env=server_env()) as proc:
        assert proc.stdin is not None
        for m in messages:
            await proc.stdin.send((json.dumps(m) + "\n").encode())
        await provider.wait_for("stuck", 1, timeout=20)
        proc.send_signal(signal.SIGTERM)
        with anyio.fail_after(20):
            assert await proc.wait() == 0
    run = next((tmp_path / ".massgen" / "runs").iterdir())
    assert json.loads((run / "result.json").read_text())["status"] == "interrupted"
