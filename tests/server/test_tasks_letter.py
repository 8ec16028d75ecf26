"""MCP Tasks to the letter of the extension (SEP-2663 / SEP-2575), where a client written from
the specification found the server lax: the 2025-11-25 wire, `Mcp-Name`, `subscriptions/listen`
for task ids, and `lastUpdatedAt` of a finished task read by another process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from agents import answer_then_vote
from mcp.shared.exceptions import MCPError
from mcp_harness import http_server, memory_client, write_team
from scripted_provider import ScriptedProvider
from tasks_client import EXTENSION_ID, TasksClient, cancel_task, get_task

MODERN = "2026-07-28"


def modern(method: str, params: dict[str, Any], declared: bool = True) -> dict[str, Any]:
    extensions: dict[str, Any] = {"extensions": {EXTENSION_ID: {}}} if declared else {}
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {**params, "_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "spec", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": extensions}}}


def headers(method: str, name: str | None = None) -> dict[str, str]:
    out = {"accept": "application/json, text/event-stream", "content-type": "application/json",
           "mcp-protocol-version": MODERN, "mcp-method": method}
    return {**out, "mcp-name": name} if name is not None else out


def error_of(response: httpx.Response) -> dict[str, Any]:
    text = response.text
    if text.startswith(("event:", "data:", "id:", ":")):  # an SSE reply: its data line
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    body = json.loads(text)
    assert "error" in body, body
    error: dict[str, Any] = body["error"]
    return error


async def test_a_2025_11_25_session_gets_minus_32021_for_tasks(tmp_path: Path) -> None:
    async with memory_client(tmp_path, mode="legacy", extensions=[TasksClient()]) as client:
        for call in (get_task, cancel_task):
            with pytest.raises(MCPError) as e:
                await call(client.session, "mgt_any-task-id")
            assert e.value.error.code == -32021, e.value.error


@pytest.mark.parametrize("method", ["tasks/get", "tasks/cancel", "tasks/update"])
async def test_tasks_methods_need_a_matching_mcp_name(tmp_path: Path, method: str) -> None:
    task_id = "mgt_" + "a" * 43
    params: dict[str, Any] = {"taskId": task_id}
    if method == "tasks/update":
        params["inputResponses"] = {}
    with http_server(tmp_path) as server:
        async with httpx.AsyncClient() as raw:
            for name in ("mgt_someone-else", None):
                r = await raw.post(server.url, json=modern(method, params),
                                   headers=headers(method, name))
                assert r.status_code == 400, (name, r.status_code, r.text)
                assert error_of(r)["code"] == -32020
            matching = await raw.post(server.url, json=modern(method, params),
                                      headers=headers(method, task_id))
            assert error_of(matching)["code"] == -32602  # past the header: an unknown task


async def test_listen_for_task_ids_needs_the_extension(tmp_path: Path) -> None:
    listen = {"notifications": {"taskIds": ["mgt_" + "b" * 43]}}
    with http_server(tmp_path) as server:
        async with httpx.AsyncClient() as raw:
            r = await raw.post(server.url, json=modern("subscriptions/listen", listen,
                                                       declared=False),
                               headers=headers("subscriptions/listen"))
            assert error_of(r)["code"] == -32021, r.text
            assert EXTENSION_ID in error_of(r)["message"]


async def test_a_finished_tasks_last_update_is_when_its_run_ended(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    for model in ("l-a", "l-b"):
        provider.script(model, answer_then_vote(f"answer {model}", final="FINAL"))
    team = write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "l-a"), ("b", "openai", "l-b")])
    tasks = TasksClient()
    async with memory_client(tmp_path, team=team, mode=MODERN, extensions=[tasks]) as client:
        done = await client.call_tool("run_consensus", {"task": "Which queue?"})
    run_id = done.structured_content["run_id"]
    task_id = tasks.created[0].task_id
    # Another process reads it: its run record says when it ended (moved to a known past).
    record = tmp_path / ".massgen" / "runs" / run_id / "result.json"
    data = json.loads(record.read_text())
    data["started_at"], data["elapsed_seconds"] = "2026-01-02T03:04:05Z", 10.0
    record.write_text(json.dumps(data))
    async with memory_client(tmp_path, mode=MODERN, extensions=[TasksClient()]) as other:
        first = await get_task(other.session, task_id)
        second = await get_task(other.session, task_id)
    assert first["status"] == "completed"
    assert first["lastUpdatedAt"] == second["lastUpdatedAt"] == "2026-01-02T03:04:15Z"


async def test_a_malformed_id_in_the_redis_index_does_not_break_list_runs(
        provider: ScriptedProvider, tmp_path: Path, redis_url: str) -> None:
    import redis

    from massgen_mcp.app import App
    from massgen_mcp.config.env import Environment
    from massgen_mcp.runs.scale.redis_record import RUNS
    from massgen_mcp.runs.store_open import open_store

    provider.script("r-a", answer_then_vote("answer", final="FINAL redis"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "r-a")])
    app = App(tmp_path / ".massgen", default_team=str(team), env=Environment({}), cwd=tmp_path,
              store=open_store(redis_url, tmp_path / ".massgen"))
    chosen = await app.team_for()
    result = await app.consensus(chosen, "Which queue?").start()
    client = redis.Redis.from_url(redis_url)
    client.zadd(RUNS, {"../../not-a-run": 9e12, "run_bad": 9e12 + 1})  # newest: read first
    runs = app.list_runs(10)
    assert [r.run_id for r in runs] == [result.run_id]
