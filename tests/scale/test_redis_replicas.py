"""Many processes on one Redis (a real redis-server): a run executed by one App is read,
listed, viewed and streamed live by another server process; a task made on one replica is
answered by another; concurrent runs of two processes keep their own records; and no key
reaches Redis (every key and value scanned after a run whose team has keys).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import yaml
from agents import answer_then_vote
from helpers import make_team
from mcp import Client
from mcp_harness import http_server, write_team
from redis_apps import WAIT, app_on_redis, client_of, gated_agent, scan_redis
from scripted_provider import ScriptedProvider
from tasks_client import CreateTaskResult, TasksClient, get_task
from test_secrets import ENV_KEY, LEAKS, SAYS, TEAM_KEY, talker

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.config.team import Team
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.runs.engine import Engine
from massgen_mcp.runs.store_open import open_store
from massgen_mcp.server import build_server

pytestmark = pytest.mark.redis


async def test_a_second_server_on_the_same_redis_reads_lists_views_and_streams_a_run(
        provider: ScriptedProvider, redis_url: str, tmp_path: Path) -> None:
    """A run executed by one App is served, while it runs and after, by another server
    process (`massgen-mcp --transport streamable-http --store URL`) over real HTTP."""
    gate = threading.Event()
    provider.script("shared-a", gated_agent(gate, "Use SQS"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "shared-a")])
    (tmp_path / "two").mkdir()
    one = app_on_redis(tmp_path / "one" / ".massgen", redis_url, team)
    try:
        with http_server(tmp_path / "two", "--team", str(team), "--store", redis_url) as two:
            base = two.url.rsplit("/mcp", 1)[0]
            async with client_of(one) as c1, Client(two.url, mode="legacy") as c2, \
                    httpx.AsyncClient(base_url=base, timeout=WAIT) as http:
                started = await c1.call_tool("run_consensus", {"task": "Which queue?",
                                                               "wait": False})
                run_id = started.structured_content["run_id"]
                with anyio.fail_after(WAIT):
                    while not any(e["kind"] == "answer" for e in one.store.events(run_id)):
                        await anyio.sleep(0.05)
                got = await c2.call_tool("get_run", {"run_id": run_id})
                assert got.structured_content["status"] == "running"
                # The other server's viewer streams it live: the rest arrives as we listen.
                seen: list[str] = []
                with anyio.fail_after(WAIT):
                    async with http.stream("GET", f"/runs/{run_id}/events") as stream:
                        async for line in stream.aiter_lines():
                            seen.append(line)
                            if line.startswith("id: "):
                                gate.set()
                body = "\n".join(seen)
                assert "event: end" in body
                ids = [int(x[4:]) for x in body.splitlines() if x.startswith("id: ")]
                assert ids == list(range(1, len(one.store.events(run_id)) + 1))
                page = await http.get(f"/runs/{run_id}")
                assert page.status_code == 200 and "FINAL: Use SQS" in page.text
                got = await c2.call_tool("get_run", {"run_id": run_id})
                assert got.structured_content["status"] == "completed"
                assert got.structured_content["final_answer"] == "FINAL: Use SQS"
                listed = await c2.call_tool("list_runs", {})
                assert [r["run_id"] for r in listed.structured_content["runs"]] == [run_id]
                record = await c2.read_resource(f"massgen://runs/{run_id}")
                assert "FINAL: Use SQS" in record.model_dump_json()
                events = await c2.read_resource(f"massgen://runs/{run_id}/events")
                assert "run_finished" in events.model_dump_json()
                view = await c2.read_resource(f"massgen://runs/{run_id}/view")
                assert 'data-state="done"' in json.loads(view.model_dump_json())[
                    "contents"][0]["text"]
                backends = await c2.call_tool("list_backends", {})
                usage = backends.structured_content["usage"]
                assert sum(row["runs"] for row in usage.values()) == 1
    finally:
        gate.set()
    # Nothing of it went to the second server's files.
    assert not (tmp_path / "two" / ".massgen" / "runs" / run_id / "events.jsonl").exists()


async def test_no_key_reaches_redis(provider: ScriptedProvider, redis_url: str,
                                    tmp_path: Path) -> None:
    provider.script("m1", talker)
    backend = {**provider.backend("openai", "m1", max_retries=0), "api_key": TEAM_KEY}
    team = tmp_path / "team.yaml"
    team.write_text(yaml.safe_dump({"agents": [{"id": "a", "backend": backend}]}))
    app = App(tmp_path / ".massgen", env=Environment({"OPENAI_API_KEY": ENV_KEY},
                                                     dotenv_dir=tmp_path),
              cwd=tmp_path, default_team=str(team), store=open_store(redis_url, tmp_path))
    async with client_of(app) as c:
        r = await c.call_tool("run_consensus", {"task": f"Which queue? {SAYS}"})
        assert not r.is_error, r.content
        run_id = r.structured_content["run_id"]
        await c.call_tool("get_run", {"run_id": run_id, "detail": "all"})
    # The agent said it, and it was redacted before any provider call (issue 30).
    assert provider.requests and not any(TEAM_KEY[3:15] in req.text
                                         for req in provider.requests)
    blobs = scan_redis(redis_url)
    assert any(run_id in b for b in blobs) and len(blobs) > 6
    for blob in blobs:
        for leak in LEAKS:
            assert leak not in blob, leak


async def test_concurrent_runs_of_two_processes_keep_their_own_records(
        provider: ScriptedProvider, redis_url: str, tmp_path: Path) -> None:
    engines = [Engine(tmp_path / name, Environment({}),
                      store=open_store(redis_url, tmp_path / name)) for name in ("p1", "p2")]
    results: list[RunResult] = []
    async with anyio.create_task_group() as tg:
        for n in range(6):
            provider.script(f"many-{n}", answer_then_vote(f"answer number {n}"))
            team = make_team(provider, [("a", "openai_chat", f"many-{n}"),
                                        ("b", "openai_chat", f"many-{n}")])

            async def one(team: Team = team, n: int = n) -> None:
                results.append(await engines[n % 2].prepare(team, f"question {n}").start())

            tg.start_soon(one)
    reader = open_store(redis_url, tmp_path / "reader")
    assert sorted(reader.ids()) == sorted(r.run_id for r in results)
    for r in results:
        n = int(reader.meta(r.run_id)["task"].split()[-1])
        assert reader.load(r.run_id).final_answer == f"FINAL: answer number {n}"
        events = reader.events(r.run_id)
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert all(f"answer number {n}" in e["text"] for e in events if e["kind"] == "answer")


async def test_a_task_made_on_one_replica_is_answered_by_another(
        provider: ScriptedProvider, redis_url: str, tmp_path: Path) -> None:
    """The task store is the run store: `tasks/get` on a second App on the same Redis
    resolves a task the first App created, while it works and once it is done."""
    gate = threading.Event()
    provider.script("task-a", gated_agent(gate, "Use SQS"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "task-a")])
    one = app_on_redis(tmp_path / "one" / ".massgen", redis_url, team)
    two = app_on_redis(tmp_path / "two" / ".massgen", redis_url, team)
    elsewhere: list[dict[str, Any]] = []
    mcp2, _ = build_server(two)
    async with Client(mcp2, mode="2026-07-28", extensions=[TasksClient()]) as c2:

        async def on_poll(session: Any, created: CreateTaskResult,
                          task: dict[str, Any]) -> None:
            if task["status"] == "working" and not elsewhere:
                elsewhere.append(await get_task(c2.session, created.task_id))
                gate.set()

        tasks = TasksClient(on_poll=on_poll)
        try:
            mcp1, host1 = build_server(one)
            async with anyio.create_task_group() as background:
                host1.background = background
                async with Client(mcp1, mode="2026-07-28", extensions=[tasks]) as c1:
                    r = await c1.call_tool("run_consensus", {"task": "Which queue?"})
                background.cancel_scope.cancel()
        finally:
            gate.set()
        assert not r.is_error and r.structured_content is not None
        task_id = tasks.created[0].task_id
        assert elsewhere[0]["status"] == "working" and elsewhere[0]["taskId"] == task_id
        done = await get_task(c2.session, task_id)
        assert done["status"] == "completed"
        assert done["result"]["structuredContent"]["final_answer"] == "FINAL: Use SQS"
    assert not any(task_id in blob for blob in scan_redis(redis_url))  # only its hash is kept
