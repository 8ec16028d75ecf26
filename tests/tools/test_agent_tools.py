"""Agents' MCP tool servers, driven through real server processes (tests/tool_server.py,
mcp-server-time) over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from massgen_mcp.config.team import BackendConfig, MCPServerConfig
from massgen_mcp.messages import ToolCall
from massgen_mcp.tools.session import (
    MAX_RESULT_CHARS,
    AgentToolbox,
    AgentToolConfig,
    open_toolboxes,
    render_result,
    server_environment,
    tool_name,
)

SERVER = str(Path(__file__).parents[1] / "tool_server.py")
# Generous: several Python servers importing the MCP SDK at once on a 2-core machine.
START = 20.0


def srv(name: str, *args: str, **fields: Any) -> MCPServerConfig:
    return MCPServerConfig(name=name, command=sys.executable, args=[SERVER, *args], **fields)


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=f"call-{name}", name=name, arguments=arguments)


class Events:
    def __init__(self) -> None:
        self.items: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        self.items.append((kind, data))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [d for k, d in self.items if k == kind]


# ---------------------------------------------------------------------------- processes


def processes() -> dict[int, tuple[int, int, str]]:
    """pid -> (ppid, pgid, state) for every process, read from /proc."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        out[int(entry)] = (int(fields[1]), int(fields[2]), fields[0])
    return out


def children() -> set[int]:
    me = os.getpid()
    return {pid for pid, (ppid, _, _) in processes().items() if ppid == me}


def group_members(pgid: int) -> set[int]:
    return {pid for pid, (_, g, _) in processes().items() if g == pgid}


def wait_until(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.fixture
def no_orphans() -> Iterator[None]:
    """Fails the test if it leaves a child process of the test process behind."""
    before = children()
    yield
    assert children() - before == set()


# ---------------------------------------------------------------------------- pure helpers


def test_tool_names_are_prefixed_and_safe_for_every_provider() -> None:
    assert tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert tool_name("fs", "read.file/v2") == "mcp__fs__read_file_v2"
    long = tool_name("server", "x" * 100)
    assert len(long) == 64 and long.startswith("mcp__server__xxx")
    assert long != tool_name("server", "x" * 99)  # truncation keeps names distinct


def test_server_environment_is_minimal_plus_config() -> None:
    base = {"PATH": "/bin", "HOME": "/h", "LANG": "C.UTF-8", "LC_ALL": "C", "TMPDIR": "/t",
            "OPENAI_API_KEY": "sk-secret", "AWS_SECRET_ACCESS_KEY": "x", "BASH_FUNC_f%%": "() {"}
    env = server_environment({"TOKEN": "mine", "OPENAI_API_KEY": "named"}, base)
    assert env == {"PATH": "/bin", "HOME": "/h", "LANG": "C.UTF-8", "LC_ALL": "C",
                   "TMPDIR": "/t", "TOKEN": "mine", "OPENAI_API_KEY": "named"}


def test_render_result_describes_non_text_and_bounds_size() -> None:
    result = types.CallToolResult(content=[
        types.TextContent(type="text", text="hello"),
        types.ImageContent(type="image", data="aGVsbG8h", mime_type="image/png"),
        types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
            uri="file:///a.txt", text="inside")),
        types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(
            uri="file:///b.bin", blob="AAAA", mime_type="application/octet-stream")),
        types.ResourceLink(type="resource_link", uri="file:///c", name="c"),
    ])
    text = render_result(result)
    assert text.splitlines()[0] == "hello"
    assert "[image: image/png, 6 bytes]" in text
    assert "[resource file:///a.txt]\ninside" in text
    assert "[resource file:///b.bin: application/octet-stream, 3 bytes]" in text
    assert "[resource link file:///c: c]" in text
    structured = types.CallToolResult(content=[], structured_content={"x": 1})
    assert json.loads(render_result(structured)) == {"x": 1}
    long_text = types.CallToolResult(content=[types.TextContent(type="text", text="y" * 50)])
    big = render_result(long_text, limit=10)
    assert big == "y" * 10 + "\n[truncated: showing 10 of 50 characters]"


# ---------------------------------------------------------------------------- stdio sessions


async def test_calls_results_errors_and_timeouts(tmp_path: Path, no_orphans: None) -> None:
    events = Events()
    async with open_toolboxes({"a": [srv("t")]}, run_dir=tmp_path, startup_timeout=START,
                              call_timeout=1.0, on_event=events) as boxes:
        box = boxes["a"]
        names = {t.name for t in box.tools}
        assert {"mcp__t__echo", "mcp__t__add", "mcp__t__hang"} <= names
        add = next(t for t in box.tools if t.name == "mcp__t__add")
        assert add.description == "Add two integers."
        assert add.parameters["properties"].keys() == {"a", "b"}
        assert box.owns("mcp__t__echo") and box.owns("mcp__other__x") and not box.owns("vote")
        assert events.of("tool_server_started")[0]["server"] == "t"

        assert await box.call(call("mcp__t__echo", text="hi")) == ("hi", False)
        assert await box.call(call("mcp__t__add", a=2, b=3)) == ("5", False)
        assert await box.call(call("mcp__t__fail", message="no disk")) == (
            "Error executing tool fail: no disk", True)
        text, err = await box.call(call("mcp__t__add", a="x", b=1))
        assert err and "valid integer" in text
        text, err = await box.call(ToolCall(id="1", name="mcp__t__add",
                                            arguments_error="not JSON: {a:"))
        assert err and "invalid arguments: not JSON" in text
        text, err = await box.call(call("mcp__t__nope"))
        assert err and text.startswith("unknown tool mcp__t__nope") and "mcp__t__echo" in text
        assert json.loads((await box.call(call("mcp__t__point", x=1, y=2)))[0]) == {"x": 1, "y": 2}
        assert await box.call(call("mcp__t__picture")) == ("[image: image/png, 12 bytes]", False)
        text, err = await box.call(call("mcp__t__big", size=MAX_RESULT_CHARS + 5))
        assert not err and text.endswith(
            f"[truncated: showing {MAX_RESULT_CHARS} of {MAX_RESULT_CHARS + 5} characters]")

        with anyio.fail_after(60):  # an outer bound: the 1 s call timeout ends it
            text, err = await box.call(call("mcp__t__hang"))
        assert err and "timed out after 1s" in text
        assert await box.call(call("mcp__t__echo", text="alive")) == ("alive", False)

        # Calls from one model reply run concurrently on the same session: three calls
        # that each wait for the other two all return (one at a time, the first would wait
        # alone until the call timeout).
        results = await asyncio.gather(*(box.call(call("mcp__t__meet", n=3))
                                         for _ in range(3)))
        assert results == [("met 3", False)] * 3
        assert box.notes == []


async def test_real_pypi_time_server(tmp_path: Path, no_orphans: None) -> None:
    time_server = MCPServerConfig(name="time", command=sys.executable,
                                  args=["-m", "mcp_server_time", "--local-timezone", "UTC"])
    async with open_toolboxes({"a": [time_server]}, run_dir=tmp_path, startup_timeout=START,
                              call_timeout=10) as boxes:
        box = boxes["a"]
        assert {t.name for t in box.tools} == {"mcp__time__get_current_time",
                                                "mcp__time__convert_time"}
        text, err = await box.call(call("mcp__time__get_current_time", timezone="UTC"))
        assert not err
        now = json.loads(text)
        assert now["timezone"] == "UTC"
        stamp = datetime.fromisoformat(now["datetime"])
        assert abs((stamp - datetime.now(UTC)).total_seconds()) < 60


async def test_filters_accept_raw_and_prefixed_names(tmp_path: Path) -> None:
    # The team file's shape: servers keyed by name, filters at server and backend level.
    backend = BackendConfig(type="openai", model="m", exclude_tools=["add"], mcp_servers={  # type: ignore[arg-type]
        "t": {"command": sys.executable, "args": [SERVER],
              "allowed_tools": ["echo", "mcp__t__add", "counter", "point", "missing"],
              "exclude_tools": ["mcp__t__counter"]}})
    only_add = AgentToolConfig(servers=(srv("t", allowed_tools=["mcp__t__add"]),))
    async with open_toolboxes({"a": backend, "b": only_add}, run_dir=tmp_path,
                              startup_timeout=START, call_timeout=5) as boxes:
        box = boxes["a"]
        assert [t.name for t in box.tools] == ["mcp__t__echo", "mcp__t__point"]
        text, err = await box.call(call("mcp__t__add", a=1, b=1))
        assert err and text.startswith("unknown tool")
        assert any("11 of 13 tools hidden" in n for n in box.notes)
        assert any("'missing' matches no tool" in n for n in box.notes)
        assert [t.name for t in boxes["b"].tools] == ["mcp__t__add"]
        assert await boxes["b"].call(call("mcp__t__add", a=1, b=1)) == ("2", False)


async def test_env_hygiene_and_stderr_capture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-should-not-leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-should-not-leak")
    monkeypatch.setenv("GEMINI_API_KEY", "gem-named-by-config")
    server = srv("t", "--name", "hygiene", env={"MY_SETTING": "1",
                                                 "GEMINI_API_KEY": "gem-named-by-config"})
    async with open_toolboxes({"agent/1": [server]}, run_dir=tmp_path, startup_timeout=START,
                              call_timeout=5) as boxes:
        text, err = await boxes["agent/1"].call(call("mcp__t__env_keys"))
    assert not err
    seen = set(text.split(","))
    assert {"PATH", "MY_SETTING", "GEMINI_API_KEY"} <= seen
    assert "OPENAI_API_KEY" not in seen and "ANTHROPIC_API_KEY" not in seen
    # What the MCP SDK itself always passes (HOME, LOGNAME, PATH, SHELL, TERM, USER) and ours.
    allowed = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LANGUAGE", "TMPDIR",
               "MY_SETTING", "GEMINI_API_KEY"}
    assert {k for k in seen if not k.startswith("LC_")} <= allowed
    log = tmp_path / "tools" / "agent_1-t.stderr.log"
    assert "tool_server hygiene starting" in log.read_text()
    out, err_text = capfd.readouterr()
    assert "hygiene starting" not in out + err_text


async def test_two_agents_with_the_same_config_get_separate_sessions(tmp_path: Path) -> None:
    async with open_toolboxes({"a": [srv("t")], "b": [srv("t")]}, run_dir=tmp_path,
                              startup_timeout=START, call_timeout=5) as boxes:
        a, b = boxes["a"], boxes["b"]
        assert await a.call(call("mcp__t__counter")) == ("1", False)
        assert await a.call(call("mcp__t__counter")) == ("2", False)
        assert await b.call(call("mcp__t__counter")) == ("1", False)
        assert (await a.call(call("mcp__t__pid")))[0] != (await b.call(call("mcp__t__pid")))[0]


async def test_crash_mid_run_drops_only_that_server(tmp_path: Path, no_orphans: None) -> None:
    events = Events()
    async with open_toolboxes({"a": [srv("one"), srv("two")]}, run_dir=tmp_path,
                              startup_timeout=START, call_timeout=5, on_event=events) as boxes:
        box = boxes["a"]
        pid = int((await box.call(call("mcp__one__pid")))[0])
        text, err = await box.call(call("mcp__one__crash"))
        assert err and "MCP server 'one' stopped" in text
        assert not any(t.name.startswith("mcp__one__") for t in box.tools)
        assert any(t.name == "mcp__two__echo" for t in box.tools)
        assert box.server_states == {"one": "dead", "two": "ready"}
        assert [e["server"] for e in events.of("tool_server_died")] == ["one"]
        assert any("'one' stopped during the run" in n for n in box.notes)
        text, err = await box.call(call("mcp__one__echo", text="x"))
        assert err and "unavailable" in text
        assert await box.call(call("mcp__two__echo", text="fine")) == ("fine", False)
        assert wait_until(lambda: pid not in processes(), 5)


async def test_startup_crash_is_dropped_with_its_stderr(tmp_path: Path, no_orphans: None) -> None:
    events = Events()
    bad = srv("bad", "--startup", "crash", env={"TOOL_TOKEN": "tok-1234567890"})
    async with open_toolboxes({"a": [srv("ok"), bad]},
                              run_dir=tmp_path, startup_timeout=START, call_timeout=5,
                              on_event=events) as boxes:
        box = boxes["a"]
        assert {t.name.split("__")[1] for t in box.tools} == {"ok"}
        (failed,) = events.of("tool_server_failed")
        assert failed["server"] == "bad"
        assert "told to crash before serving (token ***)" in failed["reason"]
        assert any("'bad' failed to start: exited during start-up" in n for n in box.notes)
        assert await box.call(call("mcp__ok__echo", text="on")) == ("on", False)


async def test_missing_command_and_unreachable_url_are_dropped(tmp_path: Path) -> None:
    port = _free_port()
    servers = [MCPServerConfig(name="nocmd", command="/nonexistent/mcp-server"),
               MCPServerConfig(name="nourl", type="streamable-http",
                               url=f"http://127.0.0.1:{port}/mcp")]
    async with open_toolboxes({"a": servers}, run_dir=tmp_path, startup_timeout=START,
                              call_timeout=5) as boxes:
        box = boxes["a"]
        assert box.tools == []
        assert box.server_states == {"nocmd": "failed", "nourl": "failed"}
        assert "command not found: /nonexistent/mcp-server" in box.notes[0]


async def test_startup_hang_is_dropped_within_the_timeout(tmp_path: Path,
                                                          no_orphans: None) -> None:
    """A server that never answers and ignores SIGTERM: dropped at the start-up deadline,
    then killed (stdin closed, SIGTERM, SIGKILL: the SDK's bounded escalation)."""
    events = Events()
    before = children()
    hung = srv("hung", "--startup", "hang", "--ignore-sigterm")
    with anyio.fail_after(60):  # an outer bound: the 2 s start-up deadline ends the wait
        async with open_toolboxes({"a": [hung]}, run_dir=tmp_path, startup_timeout=2.0,
                                  call_timeout=5, on_event=events) as boxes:
            assert boxes["a"].tools == []
            assert "did not start within 2s" in events.of("tool_server_failed")[0]["reason"]
            (pgid,) = children() - before
    assert group_members(pgid) == set()


# ---------------------------------------------------------------------------- no orphans


async def _open_and_report(tmp_path: Path, pgids: list[int], *, hang: bool) -> None:
    # Launched through a shell so the tool server is a grandchild of the test process.
    shelled = MCPServerConfig(name="sh", command="/bin/sh",
                              args=["-c", f"'{sys.executable}' '{SERVER}' --name shelled; exit 0"])
    async with open_toolboxes({"a": [srv("t")], "b": [shelled]}, run_dir=tmp_path,
                              startup_timeout=START, call_timeout=60) as boxes:
        for agent, name in (("a", "mcp__t__pid"), ("b", "mcp__sh__pid")):
            pid = int((await boxes[agent].call(call(name)))[0])
            pgids.append(processes()[pid][1])
        assert len(group_members(pgids[1])) == 2  # the shell and its python
        if hang:
            await boxes["a"].call(call("mcp__t__hang"))


@pytest.mark.parametrize("how", ["normal", "exception", "cancel_scope", "task_cancel",
                                 "cancel_during_startup"])
async def test_no_orphans_however_the_block_ends(tmp_path: Path, no_orphans: None,
                                                 how: str) -> None:
    pgids: list[int] = []
    with anyio.fail_after(START):  # an outer bound: every way out ends the servers
        await _end_block(tmp_path, pgids, how)
    assert pgids and all(group_members(g) == set() for g in pgids)


async def _end_block(tmp_path: Path, pgids: list[int], how: str) -> None:
    if how == "normal":
        await _open_and_report(tmp_path, pgids, hang=False)
    elif how == "exception":
        with pytest.raises(RuntimeError, match="agent failed"):
            async with open_toolboxes({"a": [srv("t")]}, run_dir=tmp_path,
                                      startup_timeout=START, call_timeout=5) as boxes:
                pgids.append(processes()[int((await boxes["a"].call(call("mcp__t__pid")))[0])][1])
                raise RuntimeError("agent failed")
    elif how == "cancel_scope":
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(functools.partial(_open_and_report, tmp_path, pgids, hang=True))
                await _wait_for(lambda: len(pgids) == 2)
                scope.cancel()
    elif how == "cancel_during_startup":
        before = children()
        task = asyncio.ensure_future(_open_and_report(tmp_path, pgids, hang=False))
        # Each stdio server leads its own process group, so its pid is the group id.
        await _wait_for(lambda: len(children() - before) == 2)
        pgids += children() - before
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        task = asyncio.ensure_future(_open_and_report(tmp_path, pgids, hang=True))
        await _wait_for(lambda: len(pgids) == 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def _wait_for(predicate: Callable[[], bool], timeout: float = START) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.05)


def test_tool_servers_exit_when_our_process_is_killed(tmp_path: Path) -> None:
    """SIGKILL gives us no chance to clean up: the servers must exit on stdin EOF."""
    script = f"""
import anyio, sys
from pathlib import Path
from massgen_mcp.tools.session import open_toolboxes
from massgen_mcp.config.team import BackendConfig, MCPServerConfig
from massgen_mcp.messages import ToolCall

async def main():
    servers = [MCPServerConfig(name="t", command=sys.executable, args=[{SERVER!r}])]
    async with open_toolboxes({{"a": servers}}, run_dir=Path({str(tmp_path)!r}),
                              startup_timeout=30, call_timeout=5) as boxes:
        text, _ = await boxes["a"].call(ToolCall(id="1", name="mcp__t__pid"))
        print(text, flush=True)
        await anyio.sleep_forever()

anyio.run(main)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        server_pid = int(proc.stdout.readline())
        assert server_pid in processes()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert wait_until(lambda: server_pid not in processes(), 10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------------------- streamable HTTP


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, SERVER, "--http", str(port), "--name", "web"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def accepting() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            return proc.poll() is not None

    try:
        assert wait_until(accepting, START) and proc.poll() is None
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.kill()
        proc.wait()


async def test_streamable_http_server(
    tmp_path: Path, http_server: tuple[str, subprocess.Popen[bytes]]
) -> None:
    url, proc = http_server
    events = Events()
    config = MCPServerConfig(name="web", type="streamable-http", url=url,
                             headers={"X-Test": "1"})
    async with open_toolboxes({"a": [config], "b": [config]}, run_dir=tmp_path,
                              startup_timeout=START, call_timeout=5, on_event=events) as boxes:
        a: AgentToolbox = boxes["a"]
        assert await a.call(call("mcp__web__echo", text="over http")) == ("over http", False)
        assert await a.call(call("mcp__web__counter")) == ("1", False)
        assert await a.call(call("mcp__web__counter")) == ("2", False)
        # Same process, but its own MCP session; state here is per process, so it is shared.
        assert await boxes["b"].call(call("mcp__web__echo", text="b")) == ("b", False)
        proc.kill()
        proc.wait()
        text, err = await a.call(call("mcp__web__echo", text="gone"))
        assert err and "MCP server 'web' stopped" in text
        assert a.tools == [] and events.of("tool_server_died")[0]["agent"] == "a"
