"""Shared by the Redis tests: an App on a Redis store, its in-memory MCP client, a gated
scripted agent, and a scan of every key and value in Redis."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from agents import has_answered, presenting
from mcp import Client
from scripted_provider import Reply, ScriptRequest, answer, vote

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.runs.store_open import open_store
from massgen_mcp.server import build_server

WAIT = 30.0  # bound on every wait; never a sleep to wait


def app_on_redis(state: Path, url: str, team: Path, **store_options: float) -> App:
    return App(state, default_team=str(team), env=Environment({}, dotenv_dir=state.parent),
               cwd=state.parent, store=open_store(url, state, **store_options))


@contextlib.asynccontextmanager
async def client_of(app: App) -> AsyncIterator[Client]:
    mcp, host = build_server(app)
    async with anyio.create_task_group() as background:
        host.background = background
        async with Client(mcp, mode="legacy") as client:
            yield client
        background.cancel_scope.cancel()


def gated_agent(gate: threading.Event, text: str) -> Any:
    """Answers `text` at once, then waits for `gate` before voting (a run that stays live
    as long as the test needs)."""
    async def script(req: ScriptRequest) -> Reply:
        if presenting(req):
            return answer(f"FINAL: {text}")
        if not has_answered(req):
            return answer(text)
        await asyncio.to_thread(gate.wait, WAIT)
        return vote("agent1", "the first is fine")

    return script


def scan_redis(url: str) -> list[str]:
    """Every key and every value in Redis, as text (strings, hashes, streams, sets)."""
    import redis

    r: Any = redis.Redis.from_url(url, decode_responses=True)  # replies are str
    out: list[str] = []
    for name in r.scan_iter(count=1000):
        out.append(name)
        kind = r.type(name)
        if kind == "string":
            out.append(r.get(name) or "")
        elif kind == "hash":
            out.append(json.dumps(r.hgetall(name)))
        elif kind == "stream":
            out.append(json.dumps(r.xrange(name)))
        elif kind == "zset":
            out.append(json.dumps(r.zrange(name, 0, -1)))
        else:
            out.append(f"<{kind}>")
    return out


async def collect(run: Any, into: list[RunResult]) -> None:
    into.append(await run())


