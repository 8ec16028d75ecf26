"""`massgen-mcp worker --store redis://...`: execute the runs front ends queue.

    massgen-mcp worker --store redis://127.0.0.1:6379/0 [--concurrency 4] [--team NAME]
                       [--team-dir DIR] [--allow-team-path] [--allow-cli-agents]

A worker resolves each job's team again with its own configuration (its `--team`,
`--team-dir` and provider keys: give it the same as the front ends) and refuses a job whose
agents differ from the ones the front end recorded. Then it executes the run on that record
with the same engine a single process uses (runs/scale/worker.py). SIGTERM/SIGINT: take no more
jobs, let the runs in hand finish for `--drain` seconds, then end them `interrupted` with
their best answer; a second signal skips the wait.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from massgen_mcp.app import App
    from massgen_mcp.runs.engine import PreparedRun
    from massgen_mcp.runs.scale.queue import RunJob


def add_worker_parser(sub: Any) -> None:
    p = sub.add_parser(
        "worker", help="execute the runs that front ends on a shared Redis queue",
        description="Take runs queued by massgen-mcp front ends started with the same --store "
                    "and execute them. Give workers the same --team, --team-dir and provider "
                    "keys as the front ends: a job whose team resolves differently here is "
                    "refused (the run ends failed, saying so).")
    from massgen_mcp.paths import store_from_env

    env_store = store_from_env()
    p.add_argument("--store", required=env_store is None, default=env_store, metavar="URL",
                   help="the front ends' Redis (redis://HOST:PORT/DB, rediss://..., "
                        "redis://:PASSWORD@HOST/DB, unix:///path/redis.sock?db=N; default: "
                        "$MASSGEN_MCP_STORE)")
    p.add_argument("--concurrency", type=int, default=4, metavar="N",
                   help="runs executed at once (default 4)")
    p.add_argument("--team", default=None,
                   help="the default team, as the front ends' --team")
    p.add_argument("--team-dir", action="append", default=[], metavar="DIR",
                   help="a directory of team files tool calls may name, as the front ends' "
                        "--team-dir; repeatable")
    p.add_argument("--allow-team-path", nargs="?", const="restricted", default=None,
                   choices=["restricted", "full"], help="as the front ends' --allow-team-path")
    p.add_argument("--allow-cli-agents", action="store_true",
                   help="as the front ends' --allow-cli-agents")
    p.add_argument("--drain", type=float, default=15.0, metavar="SECONDS",
                   help="on SIGTERM, how long the runs in hand may take to finish before they "
                        "are ended interrupted (default 15; give a service manager at least "
                        "this plus 15 s before it kills the worker)")
    p.add_argument("--state-dir", default=None,
                   help="where the runs' working directories (workspaces, tool logs) go on "
                        "this machine (default: $MASSGEN_MCP_HOME or ./.massgen)")
    p.add_argument("--log-level", default="WARNING", help="stderr log level (default WARNING)")


def worker_main(args: argparse.Namespace) -> int:
    import anyio

    from massgen_mcp.app import App
    from massgen_mcp.config.trust import TeamPolicy
    from massgen_mcp.errors import MassgenError
    from massgen_mcp.paths import state_dir
    from massgen_mcp.runs.store_open import open_store

    logging.basicConfig(stream=sys.stderr, level=getattr(logging, str(args.log_level).upper(),
                                                         logging.WARNING),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if logging.getLogger().level > logging.DEBUG:  # saq's own chatter (each job taken,
        logging.getLogger("saq").setLevel(logging.ERROR)  # its stop) only when debugging
    if args.concurrency < 1:
        print("massgen-mcp worker: --concurrency must be at least 1", file=sys.stderr)
        return 2
    state = state_dir(args.state_dir)
    try:
        from massgen_mcp.runs.scale.redis_store import RedisStore

        policy = TeamPolicy.create(args.team_dir, args.allow_team_path, [args.team])
        store = open_store(args.store, state)
        if not isinstance(store, RedisStore):
            raise MassgenError("--store: a worker needs the front ends' Redis (redis://...)")
    except MassgenError as e:
        print(f"massgen-mcp worker: {e}", file=sys.stderr)
        return 2
    app = App(state, default_team=args.team, team_policy=policy, store=store,
              allow_cli_agents=args.allow_cli_agents)
    try:
        anyio.run(_serve, app, store, args)
    except KeyboardInterrupt:
        return 130
    return 0


async def _serve(app: App, store: Any, args: argparse.Namespace) -> None:
    import signal

    import anyio

    worker = app.worker(lambda job: build_run(app, job), concurrency=args.concurrency,
                        drain_seconds=args.drain)
    stop, now = anyio.Event(), anyio.Event()

    async def signals() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
            async for _sig in received:
                (now if stop.is_set() else stop).set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(signals)
        print(f"massgen-mcp worker {worker.name}: taking runs from {store.shown} "
              f"(concurrency {args.concurrency})", file=sys.stderr, flush=True)
        await worker.serve(stop, now)
        tg.cancel_scope.cancel()


async def build_run(app: App, job: RunJob) -> PreparedRun:
    """The prepared run of `job`, attached to its record: the team resolved here, checked
    against the agents the front end recorded, the mode's arguments as the front end gave
    them. A `MassgenError` says why this worker will not run it."""
    from massgen_mcp.errors import InputError
    from massgen_mcp.runs.scale.queue import ConsensusCall

    team = await app.team_for(from_tool=True, **job.team.model_dump())
    recorded = app.run_meta(job.run_id).get("agents")
    here = [{"id": a.id, "provider": a.provider.name, "model": a.model} for a in team.agents]
    if here != recorded:
        raise InputError(
            f"this worker's team is {_agents(here)}, but the front end that queued the run "
            f"recorded {_agents(recorded)}: give front ends and workers the same --team, "
            "--team-dir and provider keys")
    call = job.call
    if isinstance(call, ConsensusCall):
        return app.consensus(team, call.task, context=call.context, run_id=job.run_id,
                             follow_up_of=call.follow_up_of)
    return app.plan(team, call.goal, depth=call.depth, constraints=call.constraints,
                    context=call.context, run_id=job.run_id)


def _agents(agents: Any) -> str:
    if not isinstance(agents, list):
        return "unknown"
    return ", ".join(f"{a.get('id')} ({a.get('provider')}/{a.get('model')})"
                     for a in agents if isinstance(a, dict)) or "no agents"

