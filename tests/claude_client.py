"""Claude Code (the real CLI from npm) as the MCP client of massgen-mcp, headless.

Its own model is a scripted Anthropic model on the loopback scripted provider: the first
request calls a massgen tool, the next one (which carries the tool's result) ends the turn.
What Claude Code writes to the server (initialize, tools/call, tasks/*) is copied to a file
on the way, so a test can see which path a call took.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_harness import EXE, server_env
from scripted_provider import (
    TEST_KEY,
    Call,
    Reply,
    ScriptedProvider,
    ScriptRequest,
    Text,
    ToolCalls,
)
from tiers import require_node_bin

DRIVER = "claude-driver"


def _claude() -> Path:
    """The pinned Claude Code (bash .ci/npm-setup.sh); skips locally, fails under CI."""
    return require_node_bin("claude")
DONE = "All done."


@dataclass
class ClaudeRun:
    proc: subprocess.CompletedProcess[str]
    sent: list[dict[str, Any]]  # JSON-RPC messages Claude Code sent to the server
    requests: list[ScriptRequest]  # what Claude Code sent its model

    @property
    def tool_result(self) -> str:
        """The tool result the model got back, as the text it read."""
        for req in self.requests:
            for r in req.tool_results:
                return str(r["content"])
        raise AssertionError(f"no tool result reached the model:\n{self.proc.stdout[-3000:]}"
                             f"\n{self.proc.stderr[-3000:]}")

    def methods(self) -> list[str]:
        return [m.get("method", "") for m in self.sent if "method" in m]


def _one_call(provider: ScriptedProvider, tmp_path: Path, tool: str,
              arguments: dict[str, Any], server_args: list[str]) -> tuple[Path, Path]:
    """Script the model to call `mcp__massgen__<tool>(arguments)` once, and write the MCP
    config that starts our server with what the client sends teed to a file; returns
    (that file, the config)."""

    def driver(req: ScriptRequest) -> Reply:
        if req.tool_results:
            return Text(DONE)
        return ToolCalls([Call(f"mcp__massgen__{tool}", arguments)])

    provider.script(DRIVER, driver)
    sent = tmp_path / "client-to-server.jsonl"
    serve = " ".join(shlex.quote(a) for a in [EXE, *server_args])
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"massgen": {
        "type": "stdio", "command": "/bin/sh",
        "args": ["-c", f"tee -a {shlex.quote(str(sent))} | exec {serve}"]}}}))
    return sent, config


def run_claude(provider: ScriptedProvider, tmp_path: Path, tool: str, arguments: dict[str, Any],
               server_args: list[str], env: dict[str, str] | None = None,
               timeout: float = 240) -> ClaudeRun:
    """`claude -p` that calls `mcp__massgen__<tool>(arguments)` once, with the allow rule
    for massgen's tools, and ends its turn when the result is in."""

    sent, config = _one_call(provider, tmp_path, tool, arguments, server_args)
    base = server_env()
    run_env = {**base, "HOME": str(tmp_path / "home"),
               "PATH": f"{_claude().parent}{os.pathsep}{base.get('PATH', '')}",
               "ANTHROPIC_BASE_URL": provider.anthropic_base_url, "ANTHROPIC_API_KEY": TEST_KEY,
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "MCP_CONNECTION_NONBLOCKING": "0", "MCP_CONNECT_TIMEOUT_MS": "30000",
               "CLAUDE_CODE_MAX_RETRIES": "0", **(env or {})}
    (tmp_path / "home").mkdir(exist_ok=True)
    argv = [str(_claude()), "-p", "Ask the team which queue to use.", "--bare",
            "--model", DRIVER, "--output-format", "stream-json", "--verbose",
            "--mcp-config", str(config), "--strict-mcp-config",
            "--allowedTools", "mcp__massgen__*"]
    proc = subprocess.run(argv, cwd=tmp_path, env=run_env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)
    messages = []
    if sent.exists():
        for line in sent.read_text().splitlines():
            try:
                messages.append(json.loads(line))
            except ValueError:
                continue
    return ClaudeRun(proc, messages, provider.requests_for(DRIVER))


def claude_settings_home(home: Path, cwd: Path) -> None:
    """A HOME where interactive Claude Code starts straight at its prompt: onboarding done,
    the working directory trusted, the test key approved."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True, "theme": "dark",
        "customApiKeyResponses": {"approved": [TEST_KEY[-20:]], "rejected": []},
        "projects": {str(cwd): {"hasTrustDialogAccepted": True,
                                "hasCompletedProjectOnboarding": True}}}))


def _in_terminal(argv: list[str], env: dict[str, str], cwd: Path, timeout: float, sent: Path,
                 prompt: bytes, answer: Callable[[str], bytes | None],
                 done: Callable[[], bool]) -> bytes:
    """Run `argv` (Claude Code) in a pseudo-terminal in `cwd`: type `prompt` once the input
    box is drawn and the server has been asked for its tools (`sent`), then type whatever
    `answer` gives for the screen drawn since (escape sequences and white space left out:
    the terminal redraws only what changed); stop when `done()` or at `timeout`, killing
    it. Returns everything it drew."""
    import pty
    import re
    import select
    import signal
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: becomes Claude Code
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    screen, after = b"", 0
    typed = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)  # waits on the terminal's output
            if ready:
                try:
                    screen += os.read(fd, 65536)
                except OSError:
                    break
            if not typed and "❯".encode() in screen and sent.exists() \
                    and "tools/list" in sent.read_text():
                os.write(fd, prompt)
                typed, after = True, len(screen)
            if typed:
                shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\s+", "",
                               screen[after:].decode(errors="replace"))
                keys = answer(shown)
                if keys is not None:
                    os.write(fd, keys)
                    after = len(screen)
            if done():
                break
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    return screen


def run_claude_interactive(provider: ScriptedProvider, tmp_path: Path, tool: str,
                           arguments: dict[str, Any], server_args: list[str],
                           until: str, env: dict[str, str] | None = None,
                           timeout: float = 180) -> ClaudeRun:
    """Interactive Claude Code in a pseudo-terminal (the `cli` entrypoint, where MCP Tasks
    are on by default; `-p` runs as `sdk-cli`, where they are off). The prompt is typed
    once the tools are listed and the input box is drawn; it stops once a request to its
    model contains `until`."""

    sent, config = _one_call(provider, tmp_path, tool, arguments, server_args)
    home = tmp_path / "home"
    claude_settings_home(home, tmp_path)
    base = server_env()
    extra = env or {}
    env = {**base, "HOME": str(home), "TERM": "xterm",
           "PATH": f"{_claude().parent}{os.pathsep}{base.get('PATH', '')}",
           "ANTHROPIC_BASE_URL": provider.anthropic_base_url, "ANTHROPIC_API_KEY": TEST_KEY,
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
           "MCP_CONNECTION_NONBLOCKING": "0", "MCP_CONNECT_TIMEOUT_MS": "30000",
           "CLAUDE_CODE_MAX_RETRIES": "0", **extra}
    argv = [str(_claude()), "--bare", "--model", DRIVER, "--mcp-config", str(config),
            "--strict-mcp-config", "--allowedTools", "mcp__massgen__*"]
    prompt = b"Ask the team which queue to use.\r"
    screen = _in_terminal(argv, env, tmp_path, timeout, sent, prompt, lambda shown: None,
                          lambda: any(until in json.dumps(r.raw)
                                      for r in provider.requests_for(DRIVER)))
    messages = [json.loads(line) for line in sent.read_text().splitlines()] \
        if sent.exists() else []
    proc = subprocess.CompletedProcess(argv, 0, screen.decode(errors="replace")[-4000:], "")
    return ClaudeRun(proc, messages, provider.requests_for(DRIVER))



def _calls_in_turn(provider: ScriptedProvider, cwd: Path, home: Path,
                   calls: list[tuple[str, dict[str, Any]]], server_args: list[str],
                   env: dict[str, str] | None) -> tuple[Path, Path, dict[str, str]]:
    """Script the model to call each `mcp__massgen__<tool>(arguments)` of `calls` in turn,
    one per reply, then end its turn; write the MCP config beside `cwd` (what the client
    sends the server teed to a file); returns (that file, the config, Claude Code's env)."""

    def driver(req: ScriptRequest) -> Reply:
        done = len(req.tool_results)  # every result so far: the next call is the next one
        if done >= len(calls):
            return Text(DONE)
        tool, arguments = calls[done]
        return ToolCalls([Call(f"mcp__massgen__{tool}", arguments)])

    provider.script(DRIVER, driver)
    sent = cwd.parent / "client-to-server.jsonl"
    serve = " ".join(shlex.quote(a) for a in [EXE, *server_args])
    config = cwd.parent / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"massgen": {
        "type": "stdio", "command": "/bin/sh",
        "args": ["-c", f"tee -a {shlex.quote(str(sent))} | exec {serve}"]}}}))
    home.mkdir(parents=True, exist_ok=True)
    base = server_env()
    run_env = {**base, "HOME": str(home),
               "PATH": f"{_claude().parent}{os.pathsep}{base.get('PATH', '')}",
               "ANTHROPIC_BASE_URL": provider.anthropic_base_url, "ANTHROPIC_API_KEY": TEST_KEY,
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
               "MCP_CONNECTION_NONBLOCKING": "0", "MCP_CONNECT_TIMEOUT_MS": "30000",
               "CLAUDE_CODE_MAX_RETRIES": "0", **(env or {})}
    return sent, config, run_env


def _sent_messages(sent: Path) -> list[dict[str, Any]]:
    messages = []
    if sent.exists():
        for line in sent.read_text().splitlines():
            try:
                messages.append(json.loads(line))
            except ValueError:
                continue
    return messages


def run_claude_calls(provider: ScriptedProvider, cwd: Path, home: Path,
                     calls: list[tuple[str, dict[str, Any]]], server_args: list[str],
                     settings: dict[str, Any], env: dict[str, str] | None = None,
                     timeout: float = 300) -> ClaudeRun:
    """`claude -p` in `cwd` that makes `calls` in turn, NOT `--bare` (which skips the hooks
    in settings), with `settings` (hooks, say) passed by `--settings` and HOME `home`."""
    sent, config, run_env = _calls_in_turn(provider, cwd, home, calls, server_args, env)
    settings_file = cwd.parent / "claude-settings.json"
    settings_file.write_text(json.dumps(settings))
    argv = [str(_claude()), "-p", "Ask the reviewers for a plan.", "--model", DRIVER,
            "--output-format", "stream-json", "--verbose", "--settings", str(settings_file),
            "--mcp-config", str(config), "--strict-mcp-config",
            "--allowedTools", "mcp__massgen__*", "--max-turns", str(len(calls) + 2)]
    proc = subprocess.run(argv, cwd=cwd, env=run_env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)
    return ClaudeRun(proc, _sent_messages(sent), provider.requests_for(DRIVER))


def run_claude_host(provider: ScriptedProvider, cwd: Path, home: Path,
                    calls: list[tuple[str, dict[str, Any]]], server_args: list[str],
                    answer: Callable[[dict[str, Any]], dict[str, Any]],
                    env: dict[str, str] | None = None, timeout: float = 300
                    ) -> tuple[ClaudeRun, list[dict[str, Any]]]:
    """Claude Code hosted the way the Agent SDK hosts it: `claude -p --input-format
    stream-json` that makes `calls` in turn, the prompt written to its stdin and each
    `control_request` it prints answered there; an `elicitation` request gets
    `answer(request)`. Returns the run and every control request it printed."""
    import selectors
    import time

    sent, config, run_env = _calls_in_turn(provider, cwd, home, calls, server_args, env)
    argv = [str(_claude()), "-p", "--bare", "--model", DRIVER, "--input-format", "stream-json",
            "--output-format", "stream-json", "--verbose", "--mcp-config", str(config),
            "--strict-mcp-config", "--allowedTools", "mcp__massgen__*",
            "--max-turns", str(len(calls) + 2)]
    proc = subprocess.Popen(argv, cwd=cwd, env=run_env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None

    def say(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()

    say({"type": "user", "session_id": "", "parent_tool_use_id": None,
         "message": {"role": "user", "content": "Ask the reviewers for a plan."}})
    asked: list[dict[str, Any]] = []
    printed: list[str] = []
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as watch:
        watch.register(proc.stdout, selectors.EVENT_READ)
        try:
            while time.monotonic() < deadline:
                if not watch.select(timeout=1.0):  # waits on Claude Code's output
                    continue
                line = proc.stdout.readline()
                if not line:
                    break
                printed.append(line)
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if message.get("type") == "control_request":
                    request = message["request"]
                    asked.append(request)
                    reply = answer(request) if request.get("subtype") == "elicitation" else {}
                    say({"type": "control_response", "response": {
                        "subtype": "success", "request_id": message["request_id"],
                        "response": reply}})
                elif message.get("type") == "result":
                    break
        finally:
            proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    stderr = proc.stderr.read() if proc.stderr else ""
    done = subprocess.CompletedProcess(argv, proc.returncode, "".join(printed), stderr)
    return ClaudeRun(done, _sent_messages(sent), provider.requests_for(DRIVER)), asked


def run_claude_interactive_calls(provider: ScriptedProvider, cwd: Path, home: Path,
                                 calls: list[tuple[str, dict[str, Any]]],
                                 server_args: list[str], keys: list[tuple[str, bytes]],
                                 until: str, env: dict[str, str] | None = None,
                                 timeout: float = 240) -> ClaudeRun:
    """Interactive Claude Code in a pseudo-terminal that makes `calls` in turn: the prompt
    is typed once the tools are listed; then, for each `(text, keystrokes)` of `keys` in
    order, the keystrokes are typed once `text` is on the screen (escape sequences left
    out). Stops once a request to its model contains `until`."""
    import re

    sent, config, run_env = _calls_in_turn(provider, cwd, home, calls, server_args,
                                           {"TERM": "xterm", **(env or {})})
    claude_settings_home(home, cwd)
    argv = [str(_claude()), "--bare", "--model", DRIVER, "--mcp-config", str(config),
            "--strict-mcp-config", "--allowedTools", "mcp__massgen__*"]
    pending = list(keys)

    def answer(shown: str) -> bytes | None:
        """The keystrokes for the next expected text, once it is on the screen."""
        if pending and re.sub(r"\s+", "", pending[0][0]) in shown:
            return pending.pop(0)[1]
        return None

    screen = _in_terminal(argv, run_env, cwd, timeout, sent,
                          b"Ask the reviewers for a plan.\r", answer,
                          lambda: any(until in json.dumps(r.raw)
                                      for r in provider.requests_for(DRIVER)))
    proc = subprocess.CompletedProcess(argv, 0, screen.decode(errors="replace"), "")
    return ClaudeRun(proc, _sent_messages(sent), provider.requests_for(DRIVER))
