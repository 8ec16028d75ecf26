"""MCP Tasks (`io.modelcontextprotocol/tasks`) through a client built from the specification
(tests/tasks_client.py) over the SDK's transports: in memory and over HTTP, with restarts."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from agents import answer_then_vote, has_answered, presenting
from mcp import Client
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_harness import http_server, memory_client, write_team
from scripted_provider import Reply, ScriptedProvider, ScriptRequest, answer, vote
from tasks_client import (
    EXTENSION_ID,
    CreateTaskResult,
    TasksClient,
    cancel_task,
    get_task,
    update_task,
)

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.server import build_server

MODERN = "2026-07-28"


def gated(text: str, gate: threading.Event, final: str) -> Callable[[ScriptRequest], Any]:
    """Answer `text` only once `gate` is set, then vote agent1 and present `final`."""

    async def script(req: ScriptRequest) -> Reply:
        if presenting(req):
            return answer(final)
        if not has_answered(req):
            await asyncio.to_thread(gate.wait, 60)
            return answer(text)
        return vote("agent1", "agent1 is right")

    return script


def team(provider: ScriptedProvider, tmp_path: Path, gate: threading.Event | None = None,
         final: str = "FINAL: use SQS") -> Path:
    for model in ("t-a", "t-b"):
        if gate is None:
            provider.script(model, answer_then_vote(f"answer {model}", final=final))
        else:
            provider.script(model, gated(f"answer {model}", gate, final))
    return write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "t-a"), ("b", "openai", "t-b")])


async def test_a_consensus_becomes_a_task_with_progress_then_its_result(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    gate = threading.Event()
    working: list[str] = []

    async def on_poll(session: ClientSession, created: CreateTaskResult,
                      task: dict[str, Any]) -> None:
        if task["status"] == "working":
            working.append(task["statusMessage"])
            if task["statusMessage"].startswith("started:"):
                gate.set()  # the answers come only once the task was seen working

    tasks = TasksClient(on_poll=on_poll)
    async with memory_client(tmp_path, team=team(provider, tmp_path, gate), mode=MODERN,
                             extensions=[tasks]) as client:
        r = await client.call_tool("run_consensus", {"task": "Which queue?"})
    assert not r.is_error, r.content
    created = tasks.created[0]
    assert created.status == "working" and created.result_type == "task"
    assert len(created.task_id) >= 40 and created.poll_interval_ms
    # `working` carries the progress notifications' text: "started: a (...), b (...)"
    assert any(m.startswith("started: a (") for m in working), working
    final = tasks.polls[-1]
    assert final["status"] == "completed" and final["taskId"] == created.task_id
    assert r.structured_content is not None
    assert r.structured_content["final_answer"] == "FINAL: use SQS"
    assert r.structured_content["winner"]["agent_id"] == "a"
    assert final["result"]["structuredContent"] == r.structured_content
    # The task id is a capability: only its hash is stored, next to the run it points to.
    pointers = list((tmp_path / ".massgen" / "tasks").glob("*.json"))
    assert len(pointers) == 1 and created.task_id not in pointers[0].name
    assert json.loads(pointers[0].read_text())["run_id"] == r.structured_content["run_id"]
    state = "".join(p.read_text(errors="replace") for p in (tmp_path / ".massgen").rglob("*")
                    if p.is_file())
    assert created.task_id not in state


async def test_without_the_extension_calls_are_unchanged(provider: ScriptedProvider,
                                                         tmp_path: Path) -> None:
    """A client that does not declare the extension (and any 2025-11-25 session) gets the
    same bytes from a server with the extension as from one without it."""
    path = team(provider, tmp_path)
    app = App(tmp_path / ".massgen", default_team=str(path), env=Environment({}),
              cwd=tmp_path)
    with_tasks, host = build_server(app)
    plain, plain_host = build_server(app, tasks=False)
    async with anyio.create_task_group() as tg:
        host.background = plain_host.background = tg
        async with Client(with_tasks, mode=MODERN) as a, Client(plain, mode=MODERN) as b:
            ran = await a.call_tool("run_consensus", {"task": "Which queue?"})
            assert ran.structured_content["final_answer"] == "FINAL: use SQS"
            run_id = ran.structured_content["run_id"]
            for name, args in (("get_run", {"run_id": run_id}), ("list_runs", {}),
                               ("get_run", {"run_id": run_id, "detail": "all"})):
                one, two = await a.call_tool(name, args), await b.call_tool(name, args)
                assert one.model_dump_json() == two.model_dump_json()
            tools_a, tools_b = await a.list_tools(), await b.list_tools()
            assert tools_a.model_dump_json() == tools_b.model_dump_json()
        # The 2025-11-25 wire never gets a task, even when the client says it knows them.
        async with Client(with_tasks, mode="legacy", extensions=[TasksClient()]) as legacy:
            r = await legacy.call_tool("run_consensus", {"task": "Which queue?"})
            assert r.structured_content["final_answer"] == "FINAL: use SQS"
        tg.cancel_scope.cancel()


async def test_cancel_stops_the_run_and_keeps_its_best_answer(provider: ScriptedProvider,
                                                              tmp_path: Path) -> None:
    async def quick_then_hang(req: ScriptRequest) -> Reply:
        if not has_answered(req):
            return answer("SQS, for now")
        await asyncio.sleep(120)
        return vote("agent1", "late")

    provider.script("c-a", quick_then_hang)
    provider.script("c-b", quick_then_hang)
    path = write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "c-a"), ("b", "openai", "c-b")])
    cancelled = False

    async def on_poll(session: ClientSession, created: CreateTaskResult,
                      task: dict[str, Any]) -> None:
        nonlocal cancelled
        if task["status"] == "working" and not cancelled and "answered" in task[
                "statusMessage"]:
            for ack in (await update_task(session, created.task_id, {"nothing": {}}),
                        await cancel_task(session, created.task_id)):  # empty acks
                assert {k: v for k, v in ack.items() if k != "_meta"} == {
                    "resultType": "complete"}
            cancelled = True

    tasks = TasksClient(on_poll=on_poll)
    async with memory_client(tmp_path, team=path, mode=MODERN, extensions=[tasks]) as client:
        r = await client.call_tool("run_consensus", {"task": "Which queue?"})
        final = tasks.polls[-1]
        assert cancelled and final["status"] == "cancelled"
        assert "best answer so far is kept" in final["statusMessage"]
        assert r.structured_content["status"] == "cancelled"
        assert r.structured_content["final_answer"] == "SQS, for now"
        run = await client.call_tool("get_run", {"run_id": r.structured_content["run_id"]})
        assert run.structured_content["status"] == "cancelled"


async def test_unknown_task_ids_are_invalid_params(tmp_path: Path) -> None:
    async with memory_client(tmp_path, mode=MODERN, extensions=[TasksClient()]) as client:
        for call in (get_task, cancel_task):
            with pytest.raises(MCPError) as e:
                await call(client.session, "mgt_not-a-task")
            assert e.value.error.code == -32602 and "not found" in e.value.error.message
        with pytest.raises(MCPError):
            await update_task(client.session, "mgt_not-a-task", {})


async def test_tasks_methods_need_the_extension_declared(tmp_path: Path) -> None:
    """SEP-2575: a 2026-07-28 request whose capabilities lack the extension gets -32021."""
    async with memory_client(tmp_path, mode=MODERN) as client:
        for call in (get_task, cancel_task):
            with pytest.raises(MCPError) as e:
                await call(client.session, "mgt_not-a-task")
            assert e.value.error.code == -32021
            assert "io.modelcontextprotocol/tasks" in e.value.error.message


async def test_a_bad_argument_is_answered_at_once_not_as_a_task(tmp_path: Path) -> None:
    tasks = TasksClient()
    async with memory_client(tmp_path, mode=MODERN, extensions=[tasks]) as client:
        r = await client.call_tool("run_consensus", {"task": "q", "files": ["../../etc/x"]})
    assert r.is_error and not tasks.created


def test_tasks_outlive_their_client_and_a_restart(provider: ScriptedProvider,
                                                  tmp_path: Path) -> None:
    """Over HTTP: the client that started a task goes away, a new one finds it working;
    the server stops mid-run and starts again: the task is failed, with the best answer
    so far from the run record, never unknown."""
    async def one_answers(req: ScriptRequest) -> Reply:
        if not has_answered(req):
            return answer("Kafka, so far")
        await asyncio.sleep(300)
        return vote("agent1", "late")

    async def hangs(req: ScriptRequest) -> Reply:
        await asyncio.sleep(300)
        return answer("never")

    provider.script("r-a", one_answers)
    provider.script("r-b", hangs)
    path = write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "r-a"), ("b", "openai", "r-b")])

    async def start(url: str) -> str:
        tasks = TasksClient()
        async with Client(url, mode=MODERN, extensions=[tasks]) as c:
            r = await c.session.call_tool("run_consensus", {"task": "Which queue?"},
                                          allow_claimed=True)
        assert isinstance(r, CreateTaskResult), r
        return r.task_id

    async def poll(url: str, task_id: str, until: set[str]) -> dict[str, Any]:
        async with Client(url, mode=MODERN, extensions=[TasksClient()]) as c:
            with anyio.fail_after(60):
                while True:
                    task = await get_task(c.session, task_id)
                    if task["status"] in until and (task["status"] != "working" or "answered"
                                                    in task["statusMessage"]):
                        return task
                    await anyio.sleep(0.05)

    with http_server(tmp_path, "--team", str(path)) as server:
        discover = httpx.post(server.url, json={
            "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {}}}},
            headers={"Accept": "application/json, text/event-stream",
                     "MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"})
        assert EXTENSION_ID in discover.text, discover.text  # advertised to every client
        task_id = anyio.run(start, server.url)
        live = anyio.run(poll, server.url, task_id, {"working"})
        assert live["status"] == "working" and "answered" in live["statusMessage"]
    with http_server(tmp_path, "--team", str(path)) as server:
        task = anyio.run(poll, server.url, task_id, {"failed", "completed", "cancelled"})
    assert task["status"] == "failed", task
    assert "interrupted" in task["statusMessage"]
    best = task["error"]["data"]["result"]["structuredContent"]
    assert best["status"] == "interrupted" and best["final_answer"] == "Kafka, so far"


async def test_a_plan_over_stdio_is_a_task_too(provider: ScriptedProvider,
                                               tmp_path: Path) -> None:
    """`plan` through the real `massgen-mcp` process on the 2026-07-28 wire (stdio)."""
    from mcp_harness import stdio_params
    from test_modes import GOOD, planner

    expected = [t["id"] for t in GOOD["tasks"]]  # type: ignore[index]

    for model in ("pl-a", "pl-b"):
        provider.script(model, planner(GOOD))
    path = write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "pl-a"), ("b", "openai", "pl-b")])
    env = {"MASSGEN_MCP_KEY_FILE": str(tmp_path / "keys" / "plan.key")}
    tasks = TasksClient()
    async with Client(stdio_params(tmp_path, "--team", str(path), env=env), mode=MODERN,
                      extensions=[tasks]) as c:
        r = await c.call_tool("plan", {"goal": "Add a job queue", "depth": "shallow"})
    assert tasks.created and tasks.polls[-1]["status"] == "completed"
    assert not r.is_error, r.content
    data = r.structured_content
    assert data is not None and data["status"] == "completed" and data["plan_id"]
    assert [t["id"] for t in data["plan"]["tasks"]] == expected
    text = r.content[0].text  # type: ignore[union-attr]
    assert text.startswith(f"Plan {data['plan_id']}: 6 tasks in 3 chunks")
    assert data["markdown"] and data["markdown"] not in text  # nothing sent twice
