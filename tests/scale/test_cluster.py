"""Scale-out with real parts: Debian's haproxy round robin over three HTTP replicas and two
workers on Debian's redis-server, with MCP clients of both protocol eras going through
haproxy (the faults are in test_cluster_faults.py).

Every test proves where its requests went (haproxy's `X-Served-By`) and ends by checking the
record. Load stays small: a few runs per test (the 300-run figure is bench/scale_out.py's).
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from cluster import Cluster, final_for
from cluster_checks import (
    MODELS,
    TIMEOUT,
    Gate,
    check_record,
    install,
    poll_run,
    runs_for,
)
from mcp_harness import write_team
from scripted_provider import ScriptedProvider
from tasks_client import TasksClient

pytestmark = [pytest.mark.redis, pytest.mark.haproxy]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_round_robin_serves_both_eras(cluster: Cluster, provider: ScriptedProvider,
                                            mode: str) -> None:
    install(provider)
    async with cluster.client(mode) as c:
        assert c.client.session.protocol_version == ("2025-11-25" if mode == "legacy"
                                                     else "2026-07-28")
        for _ in range(3):
            await c.client.list_tools()
        messages: list[str] = []

        async def on_progress(progress: float, total: float | None,
                              message: str | None) -> None:
            messages.append(message or "")

        task = f"round robin {mode}"
        r = await c.client.call_tool("run_consensus", {"task": task},
                                     progress_callback=on_progress)
        assert not r.is_error, r.content
        data = r.structured_content or {}
        assert data["status"] == "completed" and data["final_answer"] == final_for(task)
        assert messages and messages[-1] == "finished: completed", messages
        # Consecutive requests went to every replica, with no stickiness.
        assert set(c.replicas_for("tools/list")) == {"r1", "r2", "r3"}, (c.served,
                                                                         cluster.stderr())
        assert set(c.served_by) == {"r1", "r2", "r3"}
        assert not c.sessions  # stateless: no replica holds a session for this client
        await check_record(c, data["run_id"], task)


async def test_sessions_without_stateless_http_break_round_robin(
        _programs: str, provider: ScriptedProvider, tmp_path: Path) -> None:
    """Why the replicas run --stateless-http: a 2025-11-25 session lives in the replica that
    opened it, so round robin sends its next request to a replica that never heard of it."""
    install(provider)
    team = write_team(tmp_path / "team.yaml", provider, MODELS)
    with Cluster(tmp_path, team, None, replicas=2, workers=0, stateless=False) as plain:
        with pytest.raises(Exception) as refused:  # the SDK wraps it (exception groups)
            async with plain.client("legacy") as c:
                await c.client.list_tools()
        assert "session" in _messages(refused.value).lower(), _messages(refused.value)


def _messages(error: BaseException) -> str:
    """The text of an error and of everything in its exception group(s)."""
    if isinstance(error, BaseExceptionGroup):
        return " | ".join(_messages(e) for e in error.exceptions)
    return f"{type(error).__name__}: {error}"


def test_readme_haproxy_config_is_valid(_programs: str, tmp_path: Path) -> None:
    """The haproxy config the operators' page shows passes `haproxy -c` (as the tests' own
    does)."""
    import re
    import subprocess

    page = (Path(__file__).parents[2] / "docs" / "operators.md").read_text()
    section = page.split("## haproxy\n", 1)[1]
    config = re.search(r"```\n(global\n.*?)```", section, re.S)
    assert config, "no haproxy config block under '## haproxy' in docs/operators.md"
    text = config.group(1).replace("/run/haproxy/admin.sock", str(tmp_path / "admin.sock"))
    (tmp_path / "haproxy.cfg").write_text(text)
    check = subprocess.run([_programs, "-c", "-f", str(tmp_path / "haproxy.cfg")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    for line in ("balance roundrobin", "option redispatch", "timeout server 1h"):
        assert line in text


async def test_background_run_answered_by_every_replica(cluster: Cluster,
                                                        provider: ScriptedProvider) -> None:
    gate = Gate()
    install(provider, gate)
    task = "background run"
    async with cluster.client("legacy") as c:
        started = await c.client.call_tool("run_consensus", {"task": task, "wait": False})
        run_id = (started.structured_content or {})["run_id"]
        starter = c.replicas_for("tools/call")[0]
        await gate.wait_held(3)
        # While it runs, every replica knows it: get_run and list_runs on each.
        for _ in range(3):
            got = await c.client.call_tool("get_run", {"run_id": run_id})
            assert (got.structured_content or {})["status"] == "running", got.content
        for _ in range(3):
            assert run_id in (await runs_for(c, [task]))[task]
        readers = set(c.replicas_for("tools/call")[1:])
        assert readers == {"r1", "r2", "r3"}, c.served
        gate.open()
        data = await poll_run(c, run_id)
        assert data["status"] == "completed" and data["final_answer"] == final_for(task)
        assert starter in {"r1", "r2", "r3"}
        await check_record(c, run_id, task)
        assert len((await runs_for(c, [task]))[task]) == 1


async def test_cancel_from_another_replica(cluster: Cluster, provider: ScriptedProvider) -> None:
    gate = Gate()
    install(provider, gate)
    task = "cancel me"
    try:
        async with cluster.client("2026-07-28") as c:
            started = await c.client.call_tool("run_consensus", {"task": task, "wait": False})
            run_id = (started.structured_content or {})["run_id"]
            await gate.wait_held(3)
            cancelled = await c.client.call_tool("cancel_run", {"run_id": run_id})
            starter, canceller = c.replicas_for("tools/call")[:2]
            assert starter != canceller, c.served
            body = cancelled.structured_content or {}
            # Stopped, or (a loaded machine: the wait for it is bounded) asked to stop.
            assert (body["cancelled"] is True and body["status"] == "cancelled") or (
                body["status"] == "running" and "asked the run to stop" in body["message"]), body
            data = await poll_run(c, run_id)
            assert data["status"] == "cancelled"
            await check_record(c, run_id, task)
    finally:
        gate.open()


async def test_task_followed_through_other_replicas(cluster: Cluster,
                                                    provider: ScriptedProvider) -> None:
    install(provider)
    task = "a task"
    tasks = TasksClient(max_poll_s=0.05, timeout=TIMEOUT)
    async with cluster.client("2026-07-28", extensions=[tasks]) as c:
        r = await c.client.call_tool("run_consensus", {"task": task})
        assert not r.is_error, r.content
        assert (r.structured_content or {})["final_answer"] == final_for(task)
        assert len(tasks.created) == 1
        creator = c.replicas_for("tools/call")[0]
        pollers = set(c.replicas_for("tasks/get"))
        assert pollers - {creator}, f"every tasks/get went to {creator}: {c.served}"
        assert tasks.polls[-1]["status"] == "completed"


async def test_viewer_page_through_any_replica(cluster: Cluster,
                                               provider: ScriptedProvider) -> None:
    install(provider)
    task = "viewer page"
    async with cluster.client("legacy") as c:
        r = await c.client.call_tool("run_consensus", {"task": task})
        run_id = (r.structured_content or {})["run_id"]
    assert cluster.proxy is not None
    served = set()
    async with httpx.AsyncClient(base_url=cluster.proxy.root, timeout=30) as web:
        for _ in range(3):
            page = await web.get(f"/runs/{run_id}")
            assert page.status_code == 200, page.text[:300]
            assert final_for(task) in page.text
            served.add(page.headers["x-served-by"])
    assert served == {"r1", "r2", "r3"}


