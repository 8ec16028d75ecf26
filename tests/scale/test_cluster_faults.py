"""Faults in a cluster of real processes (haproxy, three replicas, two workers, Redis): a
replica killed while a client waits on it, the replica that created a task killed, Redis
restarted mid-run. After each: the events and the final result agree, and Redis holds
exactly the runs the test started (none lost, none duplicated).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from cluster import Cluster, final_for
from cluster_checks import (
    TIMEOUT,
    Gate,
    check_record,
    ignore_progress,
    install,
    poll_run,
    runs_for,
    runs_in_redis,
    wait_served,
)
from redis_server import RedisServer
from scripted_provider import ScriptedProvider
from tasks_client import TasksClient

pytestmark = [pytest.mark.redis, pytest.mark.haproxy]


async def test_replica_killed_while_client_waits(own_cluster: Cluster,
                                                 provider: ScriptedProvider) -> None:
    """SIGKILL the replica serving a waiting run_consensus: the run goes on (a worker runs
    it), and the client's retry through haproxy reaches the same run and its result."""
    gate = Gate()
    install(provider, gate)
    task = "survive the replica"
    try:
        async with own_cluster.client("legacy") as c:
            failure: list[BaseException] = []

            async def wait_for_it() -> None:
                try:
                    await c.client.call_tool("run_consensus", {"task": task},
                                             progress_callback=ignore_progress)
                except Exception as e:  # the connection to the killed replica broke
                    failure.append(e)

            with anyio.fail_after(TIMEOUT):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(wait_for_it)
                    await gate.wait_held(3)
                    victim = await wait_served(c, "tools/call")
                    own_cluster.kill_replica(victim)
            assert failure, "the call survived its replica's death?"
            gate.open()
            # The retry: find the run (the same client, through haproxy, any replica).
            found = (await runs_for(c, [task]))[task]
            assert len(found) == 1, found
            data = await poll_run(c, found[0])
            assert data["status"] == "completed", data
            assert data["final_answer"] == final_for(task)
            await check_record(c, found[0], task)
            assert victim not in c.served_by[-3:]
            assert own_cluster.store and runs_in_redis(own_cluster.store) == 1
    finally:
        gate.open()


async def test_replica_killed_while_task_client_polls(own_cluster: Cluster,
                                                      provider: ScriptedProvider) -> None:
    """A 2026-07-28 task: the replica that created it is killed; tasks/get goes on through
    the others and the task ends with the run's own result."""
    gate = Gate()
    install(provider, gate)
    task = "task survives"
    killed: list[str] = []
    killed_at: list[int] = []

    async def on_poll(session: Any, created: Any, polled: dict[str, Any]) -> None:
        if not killed:  # the first poll: the run is live, held at its first answers
            await gate.wait_held(3)
            killed.append(c.replicas_for("tools/call")[0])
            own_cluster.kill_replica(killed[0])
            killed_at.append(len(c.served))
            gate.open()

    tasks = TasksClient(on_poll=on_poll, max_poll_s=0.05, timeout=TIMEOUT)
    try:
        async with own_cluster.client("2026-07-28", extensions=[tasks]) as c:
            r = await c.client.call_tool("run_consensus", {"task": task})
            assert not r.is_error, r.content
            assert (r.structured_content or {})["final_answer"] == final_for(task)
            after = c.served[killed_at[0]:]
            assert ("tasks/get" in {m for m, _ in after}
                    and killed[0] not in {replica for _, replica in after}), (killed, c.served)
            run_id = (r.structured_content or {})["run_id"]
            await check_record(c, run_id, task)
            assert len((await runs_for(c, [task]))[task]) == 1
            assert own_cluster.store and runs_in_redis(own_cluster.store) == 1
    finally:
        gate.open()


async def test_redis_restarted_mid_run(own_cluster: Cluster, provider: ScriptedProvider,
                                       redis_server: RedisServer) -> None:
    """Redis goes away and comes back (same data: append-only file) while two runs are live,
    one followed by a client waiting on run_consensus, one started with wait=false: each
    ends truthfully (completed with its own answer, or interrupted/failed saying why), the
    waiting client gets the run's real outcome, nothing stays `running`, and the store holds
    exactly the two runs."""
    gate = Gate()
    install(provider, gate)
    waited, background = "through a restart (waiting)", "through a restart (background)"
    outcome: list[dict[str, Any]] = []
    try:
        async with own_cluster.client("legacy") as waiter, \
                own_cluster.client("2026-07-28") as c:

            async def wait_for_it() -> None:
                r = await waiter.client.call_tool("run_consensus", {"task": waited},
                                                  progress_callback=ignore_progress)
                outcome.append(r.structured_content or {"error": str(r.content)})

            with anyio.fail_after(TIMEOUT):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(wait_for_it)
                    started = await c.client.call_tool("run_consensus",
                                                       {"task": background, "wait": False})
                    background_id = (started.structured_content or {})["run_id"]
                    await gate.wait_held(6)
                    redis_server.restart()
                    gate.open()
            assert outcome and outcome[0].get("run_id"), outcome
            waited_id = outcome[0]["run_id"]
            for run_id, task in ((waited_id, waited), (background_id, background)):
                data = await poll_run(c, run_id)
                assert data["status"] in ("completed", "interrupted", "failed"), data
                if data["status"] != "completed":
                    assert data.get("error"), data  # an honest reason
                record = await check_record(c, run_id, task)
                if run_id == waited_id:  # the waiting client was told what the record says
                    assert outcome[0]["status"] == record["status"], (outcome, record)
                    assert outcome[0].get("final_answer") == record.get("final_answer")
            found = await runs_for(c, [waited, background])
            assert {t: len(v) for t, v in found.items()} == {waited: 1, background: 1}, found
            assert runs_in_redis(redis_server.url) == 2
    finally:
        gate.open()
