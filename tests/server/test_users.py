"""Users of one HTTP server (`--auth-file`, `token new`): each sees only their own runs,
an admin sees all; loopback HTTP has a token by default; `view` asks for it too. Over real
HTTP with real MCP clients, two users' tokens and an admin's."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from agents import answer_then_vote
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_harness import EXE, RunningServer, free_port, http_server, server_env, write_team
from scripted_provider import Hang, ScriptedProvider
from tasks_client import TasksClient, cancel_task, get_task

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "0"}}}
MCP_HEADERS = {"accept": "application/json, text/event-stream",
               "content-type": "application/json"}
UNKNOWN = "run_20260101T000000Z_abcdef"


def new_token(auth_file: Path, name: str, *extra: str) -> str:
    """`massgen-mcp token new NAME`: the token on stdout, its hash appended to the file."""
    done = subprocess.run([EXE, "token", "new", name, "--auth-file", str(auth_file), *extra],
                          env=server_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@asynccontextmanager
async def client_as(server: RunningServer, token: str | None, mode: str = "legacy",
                    **options: Any) -> AsyncIterator[Client]:
    import httpx2

    headers = {"authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=120)
    async with Client(streamable_http_client(server.url, http_client=http), mode=mode,
                      **options) as c:
        yield c


def error_text(result: Any) -> str:
    assert result.is_error
    return str(result.content[0].text)


@pytest.fixture
def users(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    auth = tmp_path / "conf" / "users"
    tokens = {"alice": new_token(auth, "alice"), "bob": new_token(auth, "bob"),
              "root": new_token(auth, "root", "--admin")}
    return auth, tokens


def test_token_new_appends_a_hash_to_a_private_file(users: tuple[Path, dict[str, str]]
                                                     ) -> None:
    auth, tokens = users
    assert stat.S_IMODE(auth.stat().st_mode) == 0o600
    lines = auth.read_text().splitlines()
    assert lines == [f"alice {hashlib.sha256(tokens['alice'].encode()).hexdigest()}",
                     f"bob {hashlib.sha256(tokens['bob'].encode()).hexdigest()}",
                     f"root {hashlib.sha256(tokens['root'].encode()).hexdigest()} admin"]
    assert not any(t in auth.read_text() for t in tokens.values())  # hashes only
    again = subprocess.run([EXE, "token", "new", "bob", "--auth-file", str(auth)],
                           env=server_env(), capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "already has a user 'bob'" in again.stderr


@pytest.mark.parametrize(("line", "says"), [
    ("alice", "expected 'NAME SHA256_OF_TOKEN [admin]'"),
    ("alice " + "a" * 64 + " root", "expected 'NAME SHA256_OF_TOKEN [admin]'"),
    ("alice s3cret-token", "never the token itself"),
    ("../x " + "a" * 64, "is not a user name"),
    ("local " + "a" * 64, "the server's own user"),
])
def test_a_malformed_auth_file_line_stops_the_server_naming_it(tmp_path: Path, line: str,
                                                               says: str) -> None:
    auth = tmp_path / "users"
    auth.write_text(f"# the team\n\nbob {'b' * 64}\n{line}\n")
    done = subprocess.run([EXE, "--transport", "streamable-http", "--port", str(free_port()),
                           "--auth-file", str(auth)], cwd=tmp_path, env=server_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "line 4: " in done.stderr and says in done.stderr, done.stderr


async def test_each_user_sees_only_their_own_runs_and_an_admin_sees_all(
        provider: ScriptedProvider, tmp_path: Path,
        users: tuple[Path, dict[str, str]]) -> None:
    auth, tokens = users
    provider.script("u-a", answer_then_vote("answer a", final="FINAL alice"))
    provider.script("u-stuck", Hang())
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "u-a")])
    stuck = write_team(tmp_path / "stuck.yaml", provider, [("s", "openai", "u-stuck")])
    with http_server(tmp_path, "--auth-file", str(auth), "--team", str(team),
                     "--team-dir", str(tmp_path)) as server:
        async with client_as(server, tokens["alice"]) as alice:
            done = await alice.call_tool("run_consensus", {"task": "alice's question"})
            run_id = done.structured_content["run_id"]
            started = await alice.call_tool("run_consensus", {
                "task": "alice's long one", "wait": False, "team": str(stuck)})
            live_id = started.structured_content["run_id"]
            await provider.wait_for("u-stuck", 1, timeout=30)
            mine = await alice.call_tool("list_runs", {})
            assert {r["run_id"] for r in mine.structured_content["runs"]} == {run_id, live_id}
            assert all(r["owner"] == "alice" for r in mine.structured_content["runs"])

        async with client_as(server, tokens["bob"]) as bob:
            listed = await bob.call_tool("list_runs", {})
            assert listed.structured_content["runs"] == []
            for rid in (run_id, live_id):
                # Word for word what an unknown id gets: the id tells bob nothing.
                unknown = error_text(await bob.call_tool("get_run", {"run_id": UNKNOWN}))
                hidden = error_text(await bob.call_tool("get_run", {"run_id": rid}))
                assert hidden == unknown.replace(UNKNOWN, rid)
                refused = await bob.call_tool("cancel_run", {"run_id": rid})
                unknown = error_text(await bob.call_tool("cancel_run", {"run_id": UNKNOWN}))
                assert error_text(refused) == unknown.replace(UNKNOWN, rid)
                for uri in (f"massgen://runs/{rid}", f"massgen://runs/{rid}/answer",
                            f"massgen://runs/{rid}/events", f"massgen://runs/{rid}/view",
                            f"massgen://runs/{rid}/pages/1"):
                    with pytest.raises(MCPError, match="no run"):
                        await bob.read_resource(uri)
            index = await bob.read_resource("massgen://runs")
            assert run_id not in index.contents[0].text  # type: ignore[union-attr]
            # bob's own run is his.
            own = await bob.call_tool("run_consensus", {"task": "bob's question"})
            bob_run = own.structured_content["run_id"]
            assert not own.is_error

        async with httpx.AsyncClient() as raw:
            base = server.url.rsplit("/mcp", 1)[0]
            as_bob = {"authorization": f"Bearer {tokens['bob']}"}
            page = await raw.get(f"{base}/runs/{run_id}", headers=as_bob)
            assert page.status_code == 404 and run_id not in page.text
            events = await raw.get(f"{base}/runs/{live_id}/events", headers=as_bob)
            assert events.status_code == 404
            listing = await raw.get(f"{base}/runs", headers=as_bob)
            assert bob_run in listing.text and run_id not in listing.text
            assert live_id not in listing.text
            anonymous = await raw.post(server.url, json=INIT, headers=MCP_HEADERS)
            assert anonymous.status_code == 401

        async with client_as(server, tokens["root"]) as root:
            everyone = await root.call_tool("list_runs", {})
            owners = {r["run_id"]: r["owner"] for r in everyone.structured_content["runs"]}
            assert owners == {run_id: "alice", live_id: "alice", bob_run: "bob"}
            got = await root.call_tool("get_run", {"run_id": run_id})
            assert got.structured_content["final_answer"] == "FINAL alice"
            # alice's live run is still running: bob's cancel did nothing; the admin's does.
            live = await root.call_tool("get_run", {"run_id": live_id})
            assert live.structured_content["status"] == "running"
            stopped = await root.call_tool("cancel_run", {"run_id": live_id})
            assert stopped.structured_content["cancelled"] is True


async def test_another_users_task_is_not_found(provider: ScriptedProvider, tmp_path: Path,
                                               users: tuple[Path, dict[str, str]]) -> None:
    auth, tokens = users
    provider.script("t-stuck", Hang())
    team = write_team(tmp_path / "team.yaml", provider, [("s", "openai", "t-stuck")])
    with http_server(tmp_path, "--auth-file", str(auth), "--team", str(team)) as server:
        created: list[str] = []

        async def start() -> None:
            tasks = TasksClient(timeout=120)
            async with client_as(server, tokens["alice"], mode="2026-07-28",
                                 extensions=[tasks]) as alice, anyio.create_task_group() as tg:
                tg.start_soon(alice.call_tool, "run_consensus", {"task": "q"})
                with anyio.fail_after(60):
                    while not tasks.created:
                        await anyio.sleep(0.02)
                created.append(tasks.created[0].task_id)
                tg.cancel_scope.cancel()

        await start()
        task_id = created[0]
        async with client_as(server, tokens["bob"], mode="2026-07-28",
                             extensions=[TasksClient()]) as bob:
            for call in (get_task, cancel_task):
                with pytest.raises(MCPError, match="Task not found"):
                    await call(bob.session, task_id)
        async with client_as(server, tokens["alice"], mode="2026-07-28",
                             extensions=[TasksClient()]) as alice:
            assert (await get_task(alice.session, task_id))["status"] == "working"
            await cancel_task(alice.session, task_id)


async def test_an_mcp_session_is_used_only_by_the_user_who_opened_it_and_capped(
        tmp_path: Path, users: tuple[Path, dict[str, str]]) -> None:
    auth, tokens = users
    with http_server(tmp_path, "--auth-file", str(auth), "--sessions-per-user", "2") as server:
        def as_user(name: str) -> dict[str, str]:
            return {**MCP_HEADERS, "authorization": f"Bearer {tokens[name]}"}

        async with httpx.AsyncClient() as raw:
            opened = [await raw.post(server.url, json=INIT, headers=as_user("alice"))
                      for _ in range(2)]
            assert all(r.status_code == 200 for r in opened)
            session = opened[0].headers["mcp-session-id"]
            third = await raw.post(server.url, json=INIT, headers=as_user("alice"))
            assert third.status_code == 429 and "--sessions-per-user" in third.text
            assert (await raw.post(server.url, json=INIT, headers=as_user("bob"))
                    ).status_code == 200  # a cap per user, not for everyone
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            stolen = await raw.post(server.url, json=ping, headers={
                **as_user("bob"), "mcp-session-id": session,
                "mcp-protocol-version": "2025-11-25"})
            assert stolen.status_code == 404
            closed = await raw.delete(server.url, headers={
                **as_user("alice"), "mcp-session-id": session,
                "mcp-protocol-version": "2025-11-25"})
            assert closed.status_code == 200
            again = await raw.post(server.url, json=INIT, headers=as_user("alice"))
            assert again.status_code == 200  # a closed session frees its place


async def test_loopback_http_makes_a_token_once_and_keeps_it(tmp_path: Path) -> None:
    state = tmp_path / ".massgen"
    with http_server(tmp_path, auth=True) as server:
        assert "token required" in server.stderr[-1]
        token_file = state / "http-token"
        token = token_file.read_text().strip()
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert sum(token in line for line in server.stderr) == 1  # shown once
        async with httpx.AsyncClient() as raw:
            assert (await raw.post(server.url, json=INIT, headers=MCP_HEADERS)
                    ).status_code == 401
            ok = await raw.post(server.url, json=INIT, headers={
                **MCP_HEADERS, "authorization": f"Bearer {token}"})
            assert ok.status_code == 200
    with http_server(tmp_path, auth=True) as again:
        assert not any(token in line for line in again.stderr)  # not shown a second time
        assert any(str(token_file) in line for line in again.stderr)
        async with client_as(again, token) as c:
            assert (await c.list_tools()).tools


def test_no_token_is_for_loopback_only(tmp_path: Path) -> None:
    for args in (["--host", "0.0.0.0", "--no-token"], ["--no-token", "--token", "x"]):
        done = subprocess.run([EXE, "--transport", "streamable-http",
                               "--port", str(free_port()), *args], cwd=tmp_path,
                              env=server_env(), capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and "--no-token" in done.stderr, done.stderr


async def test_no_token_on_loopback_serves_without_one(tmp_path: Path) -> None:
    with http_server(tmp_path, "--no-token") as server:
        assert "token required" not in server.stderr[-1]
        async with client_as(server, None) as c:
            assert (await c.list_tools()).tools


def test_the_view_command_asks_for_the_token(tmp_path: Path) -> None:
    import queue
    import signal
    import threading

    state = tmp_path / "state"
    proc = subprocess.Popen([EXE, "view", "--no-open", "--state-dir", str(state)],
                            env=server_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in proc.stderr or []:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        while " at http://" not in (line := lines.get(timeout=60)):
            pass
        url = line.split(" at ", 1)[1].split(" ", 1)[0]
        token = (state / "http-token").read_text().strip()
        with httpx.Client() as http:
            assert http.get(url).status_code == 401
            signed = http.get(url, params={"token": token}, follow_redirects=False)
            assert signed.status_code == 303 and "token" not in signed.headers["location"]
            cookie = signed.cookies["massgen_view"]
            # A random session value, never a function of the token.
            assert token not in cookie
            assert hashlib.sha256(b"massgen-view\0" + token.encode()).hexdigest() != cookie
            assert http.get(url).status_code == 200  # the cookie signs this client in
            again = http.get(url, params={"token": token}, follow_redirects=False)
            assert again.cookies["massgen_view"] != cookie
        forged = ("y" if cookie[0] == "x" else "x") + cookie[1:]  # one character off
        with httpx.Client(cookies={"massgen_view": forged}) as other:
            assert other.get(url).status_code == 401
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)


@pytest.mark.parametrize("path", ["/runs/<script>x</script>", f"/runs/{UNKNOWN}",
                                  f"/runs/{UNKNOWN}/events", "/nowhere/<b>x</b>"])
async def test_viewer_refusals_are_plain_text_and_echo_nothing(tmp_path: Path,
                                                               path: str) -> None:
    with http_server(tmp_path) as server:
        base = server.url.rsplit("/mcp", 1)[0]
        async with httpx.AsyncClient() as raw:
            for headers in ({}, {"host": "evil.example"}):
                r = await raw.get(base + path, headers=headers)
                assert r.status_code in (404, 421), (path, r.status_code)
                assert r.headers["content-type"].startswith("text/plain")
                assert r.headers["x-content-type-options"] == "nosniff"
                for part in ("<script>", "<b>", UNKNOWN, "evil.example", "nowhere"):
                    assert part not in r.text, (path, r.text)


async def test_idle_sessions_are_closed_and_free_their_users_place(
        tmp_path: Path, users: tuple[Path, dict[str, str]]) -> None:
    from massgen_mcp.cli.main import build_parser

    assert build_parser().parse_args([]).session_idle_timeout == 300  # the SDK's is 1800
    auth, tokens = users
    as_alice = {**MCP_HEADERS, "authorization": f"Bearer {tokens['alice']}"}
    with http_server(tmp_path, "--auth-file", str(auth), "--sessions-per-user", "1",
                     "--session-idle-timeout", "1") as server:
        async with httpx.AsyncClient() as raw:
            assert (await raw.post(server.url, json=INIT, headers=as_alice)).status_code == 200
            with anyio.fail_after(30):
                while True:  # refused while the first session lives, admitted once it idled out
                    r = await raw.post(server.url, json=INIT, headers=as_alice)
                    if r.status_code != 429:
                        break
                    await anyio.sleep(0.2)
            assert r.status_code == 200


def test_a_token_given_as_an_option_is_redacted_like_the_environment_one(
        tmp_path: Path) -> None:
    """`--token` never reaches a record or a log in full, as MASSGEN_MCP_TOKEN does not."""
    import argparse

    from massgen_mcp.redaction import redact_text, server_secrets
    from massgen_mcp.server.transports import http_users

    token = "tok-given-as-an-option-" + "q" * 24
    args = argparse.Namespace(token=token, host="127.0.0.1", auth_file=None, no_token=False)
    http_users(args, tmp_path)
    assert token not in redact_text(f"Authorization: Bearer {token}", server_secrets({}))
