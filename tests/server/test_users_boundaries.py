"""Plans and checkpoint sessions belong to their user, as runs do (test_users.py): over real
HTTP with two users' tokens and an admin's, another user's plan reads word for word as an
unknown one, `latest` is the caller's latest, and a workspace's checkpoint session can be
neither used nor taken over by another user.

Found after issue 30 closed: `get_plan('latest')` gave any client the newest plan of any
user, and `checkpoint_init` by a second user replaced (and deactivated) the first user's
session for the same workspace."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import httpx
import pytest
from mcp_harness import http_server, write_team
from scripted_provider import ScriptedProvider
from test_guard_trust import TOOLS
from test_modes import GOOD, planner
from test_users import client_as, error_text, new_token

UNKNOWN = "plan_20260101T000000Z_abcd"


@pytest.fixture(autouse=True)
def _keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MASSGEN_MCP_KEY_FILE", str(tmp_path / "keys" / "plan.key"))


async def test_plans_and_checkpoint_sessions_are_their_users(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    auth = tmp_path / "conf" / "users"
    tokens = {name: new_token(auth, name, *extra)
              for name, extra in (("alice", ()), ("bob", ()), ("root", ("--admin",)))}
    provider.script("plans", planner(GOOD))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "plans")])
    workspace = tmp_path / "project"
    workspace.mkdir()
    init = {"workspace_dir": str(workspace), "original_task": "ship", "available_tools": TOOLS}
    with http_server(tmp_path, "--auth-file", str(auth), "--team", str(team)) as server:
        async with client_as(server, tokens["alice"]) as alice:
            made = await alice.call_tool("plan", {"goal": "a job queue", "depth": "shallow"})
            assert not made.is_error, made.content
            plan_id = made.structured_content["plan_id"]
            latest = await alice.call_tool("get_plan", {"plan_id": "latest"})
            assert latest.structured_content["plan_id"] == plan_id
            assert not (await alice.call_tool("checkpoint_init", init)).is_error

        async with client_as(server, tokens["bob"]) as bob:
            listed = await bob.call_tool("list_plans", {})
            assert listed.structured_content["plans"] == []
            unknown = error_text(await bob.call_tool("get_plan", {"plan_id": UNKNOWN}))
            hidden = error_text(await bob.call_tool("get_plan", {"plan_id": plan_id}))
            assert hidden == unknown.replace(UNKNOWN, plan_id)  # the id tells bob nothing
            assert "no plans are stored" in error_text(
                await bob.call_tool("get_plan", {"plan_id": "latest"}))
            # alice's checkpoint session: not bob's to use, nor to replace.
            used = error_text(await bob.call_tool("checkpoint", {"objective": "deploy"}))
            assert "checkpoint_init" in used
            named = error_text(await bob.call_tool("checkpoint", {
                "objective": "deploy", "workspace_dir": str(workspace)}))
            assert "no checkpoint session for workspace" in named
            taken = error_text(await bob.call_tool("checkpoint_init", init))
            assert "another user's checkpoint session" in taken

        async with client_as(server, tokens["root"]) as root:
            everyone = await root.call_tool("list_plans", {})
            assert [p["plan_id"] for p in everyone.structured_content["plans"]] == [plan_id]
            got = await root.call_tool("get_plan", {"plan_id": plan_id})
            assert not got.is_error
        async with client_as(server, tokens["alice"]) as alice:  # still hers, still active
            again = await alice.call_tool("checkpoint_init", init)
            assert again.structured_content["replaced"] is True


async def test_sse_streams_are_sessions_capped_per_user(tmp_path: Path) -> None:
    """On the SSE transport a session is an open `GET /sse` stream: counted while it lasts."""
    auth = tmp_path / "conf" / "users"
    tokens = {name: new_token(auth, name) for name in ("alice", "bob")}
    with http_server(tmp_path, "--auth-file", str(auth), "--sessions-per-user", "2",
                     transport="sse") as server:
        def as_user(name: str) -> dict[str, str]:
            return {"authorization": f"Bearer {tokens[name]}", "accept": "text/event-stream"}

        readers: list[Any] = []  # held: a line reader left to the collector closes its stream
        async with httpx.AsyncClient(timeout=30) as raw, AsyncExitStack() as streams:
            async def open_stream(name: str) -> httpx.Response:
                response = await streams.enter_async_context(
                    raw.stream("GET", server.url, headers=as_user(name)))
                if response.status_code == 200:  # the SDK's first event names the endpoint
                    readers.append(response.aiter_lines())
                    assert (await anext(readers[-1])).startswith("event: endpoint")
                return response

            first = await open_stream("alice")
            assert (await open_stream("alice")).status_code == 200
            third = await open_stream("alice")
            assert third.status_code == 429
            assert "--sessions-per-user" in (await third.aread()).decode()
            assert (await open_stream("bob")).status_code == 200  # per user
            await first.aclose()  # alice ends one stream: her place comes back
            with anyio.fail_after(20):
                while (await open_stream("alice")).status_code == 429:
                    await anyio.lowlevel.checkpoint()
