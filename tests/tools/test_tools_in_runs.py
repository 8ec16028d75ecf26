"""Agents using MCP tool servers inside real consensus runs (scripted provider, real SDKs,
real tool-server processes): the tool loop, failures, separate sessions, no orphans."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import answer_then_vote, has_answered, presenting
from helpers import run_team
from scripted_provider import Call, Hang, ScriptRequest, ToolCalls, answer, vote
from test_agent_tools import children

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.runs.engine import Engine

SERVER = str(Path(__file__).parents[1] / "tool_server.py")
TEST_SERVER = {"type": "stdio", "command": sys.executable, "args": [SERVER]}


def team_with_tools(provider, agents: list[tuple[str, str, str, dict[str, Any]]], **orch: Any):
    data = {"agents": [{"id": aid, "backend": provider.backend(wire, model, max_retries=0,
                                                               mcp_servers=servers)}
                       for aid, wire, model, servers in agents],
            "orchestrator": orch}
    return team_from_data(data, "tools.yaml", Environment({}))


def use_tool_then_answer(tool: str, arguments: dict[str, Any], prefix: str):
    """Call `tool` once, answer with what it returned, then vote for agent1."""

    def script(req: ScriptRequest):
        if presenting(req):
            return answer(f"{prefix} final")
        if has_answered(req):
            return vote("agent1", "it used the tool")
        results = req.tool_results
        if not results:
            return ToolCalls([Call(tool, arguments)])
        return answer(f"{prefix}: {results[-1]['content']}")

    return script


@pytest.fixture
def no_orphans():
    """The run has returned, so its tool servers must already be gone."""
    before = children()
    yield
    leftover = children() - before
    assert leftover == set(), f"tool server processes left behind: {leftover}"


async def test_real_time_server_output_reaches_the_answer(provider, tmp_path, no_orphans):
    time_server = {"type": "stdio", "command": sys.executable, "args": ["-m", "mcp_server_time"]}
    provider.script("t1", use_tool_then_answer("mcp__time__get_current_time",
                                               {"timezone": "UTC"}, "Time says"))
    team = team_with_tools(provider, [("timer", "openai", "t1", {"time": time_server})],
                           skip_final_presentation=True)
    result = await run_team(team, tmp_path)
    assert result.status == "completed"
    assert result.final_answer and result.final_answer.startswith("Time says: ")
    assert "UTC" in result.final_answer and "datetime" in result.final_answer
    first = provider.requests_for("t1")[0]
    assert "mcp__time__get_current_time" in first.tool_names
    assert "new_answer" in first.tool_names


@pytest.mark.parametrize("wire", ["anthropic", "gemini"])
async def test_tool_loop_on_other_wire_formats(provider, tmp_path, wire, no_orphans):
    provider.script("e1", use_tool_then_answer("mcp__t__echo", {"text": "ping-42"}, "Echo"))
    team = team_with_tools(provider, [("e", wire, "e1", {"t": TEST_SERVER})],
                           skip_final_presentation=True)
    result = await run_team(team, tmp_path)
    assert result.final_answer and "ping-42" in result.final_answer


async def test_two_agents_with_the_same_server_get_separate_sessions(provider, tmp_path,
                                                                    no_orphans):
    def counting(req: ScriptRequest):
        if presenting(req):
            return answer("final")
        if has_answered(req):
            return vote("agent1", "ok")
        if len(req.tool_results) < 2:
            return ToolCalls([Call("mcp__t__counter", {})])
        return answer("counts " + ",".join(r["content"] for r in req.tool_results))

    provider.script("c1", counting)
    provider.script("c2", counting)
    team = team_with_tools(provider, [("a", "openai", "c1", {"t": TEST_SERVER}),
                                      ("b", "openai", "c2", {"t": TEST_SERVER})],
                           skip_final_presentation=True)
    result = await run_team(team, tmp_path)
    texts = {a.agent_id: a.text for a in result.answers}
    assert texts["a"] == texts["b"] == "counts 1,2"  # each agent's own counter


async def test_tool_error_and_crash_come_back_to_the_model_and_the_run_goes_on(
        provider, tmp_path, no_orphans):
    def failing(req: ScriptRequest):
        if presenting(req):
            return answer("final")
        if has_answered(req):
            return vote("agent1", "ok")
        results = req.tool_results
        if not results:
            return ToolCalls([Call("mcp__t__fail", {"message": "boom"})])
        if len(results) == 1:
            return ToolCalls([Call("mcp__t__crash", {})])
        if len(results) == 2:
            return ToolCalls([Call("mcp__t__echo", {"text": "after crash"})])
        return answer(" | ".join(r["content"][:80] for r in results))

    provider.script("f1", failing)
    team = team_with_tools(provider, [("f", "anthropic", "f1", {"t": TEST_SERVER})],
                           skip_final_presentation=True)
    events: list[dict] = []
    result = await run_team(team, tmp_path, events=events)
    assert result.status == "completed"
    results = [r for r in provider.requests_for("f1") if r.tool_results][-1].tool_results
    assert results[0]["is_error"] and "boom" in results[0]["content"]
    assert results[1]["is_error"]
    assert results[2]["is_error"]  # the server is gone: said so, not hung
    assert any(e["kind"] == "tool_server_died" for e in events)
    agent = result.agents[0]
    assert any("t" in n for n in agent.notes)
    assert (Path(result.log_dir) / "tools").is_dir()  # stderr captured in the run dir


async def test_server_that_fails_to_start_is_dropped_and_the_run_goes_on(provider, tmp_path,
                                                                        no_orphans):
    provider.script("s1", answer_then_vote("no tools needed", "agent1"))
    broken = {**TEST_SERVER, "args": [SERVER, "--startup", "crash"]}
    team = team_with_tools(provider, [("s", "gemini", "s1", {"broken": broken})])
    events: list[dict] = []
    result = await run_team(team, tmp_path, events=events)
    assert result.status == "completed"
    assert any(e["kind"] == "tool_server_failed" for e in events)
    assert any("broken" in n for n in result.agents[0].notes)


async def test_no_orphans_after_timeout_and_cancel(provider, tmp_path, no_orphans):
    provider.script("h1", Hang())
    team = team_with_tools(provider, [("h", "openai", "h1", {"t": TEST_SERVER})],
                           orchestrator_timeout_seconds=3)
    result = await run_team(team, tmp_path)
    assert result.status == "timeout"

    engine = Engine(tmp_path / ".massgen", Environment({}))
    team2 = team_with_tools(provider, [("h", "openai", "h1", {"t": TEST_SERVER})])
    async with anyio.create_task_group() as tg:
        async def go() -> None:
            await engine.prepare(team2, "t").start()

        tg.start_soon(go)
        await provider.wait_for("h1", 2, timeout=30)
        tg.cancel_scope.cancel()
    run_id = engine.store.ids()[0]
    assert engine.get(run_id).status == "cancelled"
