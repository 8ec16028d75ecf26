"""What model-written code can see and do from inside the sandboxes (the agents'
`execute_command` and eval's HumanEval runner): each probe runs real code in bubblewrap and
checks the effect. The machine these run on is root, so the root cases are the ones tested."""

from __future__ import annotations

import json
import os
import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import best_label, has_answered, presenting
from scripted_provider import Call, Reply, ScriptedProvider, ScriptRequest, ToolCalls, answer, vote
from tiers import require_program

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.eval.sandbox import run_python
from massgen_mcp.messages import ToolCall
from massgen_mcp.runs.engine import Engine
from massgen_mcp.tools.sandbox import Limits, SandboxPolicy, run_sandboxed
from massgen_mcp.tools.shell import ShellToolbox

pytestmark = pytest.mark.bubblewrap

CANARY = "canary-" + uuid.uuid4().hex

# Reads every visible process's environment, the capability sets, and tries what escapes need.
PROBE = r"""
import ctypes, json, os, socket, sys
out = {"uid": os.getuid(), "environ": [], "caps": {}, "errors": {}}
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            out["environ"].append(open(f"/proc/{pid}/environ", "rb").read().decode("latin-1"))
        except OSError as e:
            out["errors"][f"environ {pid}"] = e.strerror
for line in open("/proc/self/status"):
    if line.startswith("Cap"):
        name, value = line.split(":")
        out["caps"][name] = int(value, 16)
def attempt(name, fn):
    try:
        fn()
        out[name] = "done"
    except OSError as e:
        out[name] = e.strerror
name = open("/proc/sys/kernel/hostname").read()
attempt("proc_sys_write", lambda: open("/proc/sys/kernel/hostname", "w").write(name))
attempt("secret_read", lambda: open(sys.argv[1]).read())
def connect():
    with socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=3):
        pass
attempt("connect", connect)
libc = ctypes.CDLL(None, use_errno=True)
out["ptrace"] = libc.ptrace(0, 0, 0, 0)  # PTRACE_TRACEME: 0 when allowed
out["unshare_user"] = libc.unshare(0x10000000)  # CLONE_NEWUSER
out["mount"] = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
print("PROBE" + json.dumps(out))
"""


@pytest.fixture
def bwrap() -> str:
    return require_program("bubblewrap", "bwrap")


@pytest.fixture
def canary(monkeypatch: pytest.MonkeyPatch) -> str:
    """A secret in the server's environment (what provider keys and the token are)."""
    monkeypatch.setenv("MASSGEN_SANDBOX_CANARY", CANARY)
    return CANARY


@pytest.fixture
def root_only_file() -> Iterator[Path]:
    """A 0600 root-owned file inside a directory the sandbox mounts (the interpreter's)."""
    if os.geteuid() != 0:
        pytest.skip("the other-user case needs the tests to run as root (CI does)")
    path = Path(sys.prefix) / f"massgen-test-secret-{uuid.uuid4().hex}"
    path.write_text("root only\n")
    path.chmod(0o600)
    try:
        yield path
    finally:
        path.unlink()


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _probe_result(output: str) -> dict[str, Any]:
    line = next(x for x in output.splitlines() if x.startswith("PROBE"))
    result: dict[str, Any] = json.loads(line[len("PROBE"):])
    return result


def _check_contained(found: dict[str, Any]) -> None:
    assert found["uid"] == 65534
    assert not any(CANARY in env for env in found["environ"])
    assert found["caps"] and not any(found["caps"].values()), found["caps"]
    assert found["proc_sys_write"] != "done"
    assert found["secret_read"] != "done"
    assert found["connect"] != "done"
    assert found["ptrace"] == -1 and found["unshare_user"] == -1 and found["mount"] == -1


async def test_the_shell_tool_sees_no_secret_capability_or_host_port(
        bwrap: str, canary: str, root_only_file: Path, listener: int, tmp_path: Path) -> None:
    (tmp_path / "probe.py").write_text(PROBE)
    box = ShellToolbox(tmp_path, {"enable_mcp_command_line": True})
    text, _ = await box.call(ToolCall("1", "execute_command", {
        "command": f"python probe.py {root_only_file} {listener}"}))
    assert canary not in text
    _check_contained(_probe_result(text))


def test_the_eval_sandbox_sees_no_secret_capability_or_host_port(
        bwrap: str, canary: str, root_only_file: Path, listener: int) -> None:
    program = f"import sys\nsys.argv = ['p', {str(root_only_file)!r}, '{listener}']\n" + PROBE
    run = run_python(program)
    assert canary not in run.output
    _check_contained(_probe_result(run.output))


FORK_BOMB = """
import os, time
n = 0
try:
    while n < 600:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError:
    pass
print("FORKED", n)
"""


async def test_a_fork_bomb_stops_at_the_process_limit(bwrap: str, tmp_path: Path) -> None:
    (tmp_path / "bomb.py").write_text(FORK_BOMB)
    result = await run_sandboxed("python bomb.py", tmp_path, SandboxPolicy(timeout=60))
    forked = int(result.output.split("FORKED")[1].split()[0])
    assert forked < Limits().processes, result.output
    run = run_python(FORK_BOMB)
    assert int(run.output.split("FORKED")[1].split()[0]) < 64, run.output


async def test_file_memory_and_tmp_sizes_are_bounded(bwrap: str, tmp_path: Path) -> None:
    limits = Limits()
    # A file past the size limit (sparse: it costs nothing when the limit is missing).
    seek = limits.file_bytes // (1024 * 1024) + 16
    result = await run_sandboxed(f"dd if=/dev/zero of=big bs=1M count=1 seek={seek}",
                                 tmp_path, SandboxPolicy())
    assert result.exit_code != 0  # SIGXFSZ ("File size limit exceeded") or EFBIG
    assert "File size limit exceeded" in result.output or "File too large" in result.output
    assert (tmp_path / "big").stat().st_size <= limits.file_bytes
    # More memory than the limit, asked for at once.
    result = await run_sandboxed(
        f"python -c 'bytearray({limits.memory_bytes + 2**30})'", tmp_path, SandboxPolicy())
    assert result.exit_code != 0 and "MemoryError" in result.output
    # /tmp is memory: it fills at its size (a small one here, the default is finite too).
    small = SandboxPolicy(limits=Limits(tmp_bytes=8 * 1024 * 1024))
    result = await run_sandboxed("dd if=/dev/zero of=/tmp/fill bs=1M count=32; "
                                 "du -k /tmp/fill", tmp_path, small)
    assert "No space left" in result.output
    assert int(result.output.split()[-2]) <= 8 * 1024
    assert limits.tmp_bytes <= 1024 ** 3


@pytest.mark.parametrize("line", ["ls; rm -f keep.txt", "echo hi && /bin/rm -f keep.txt",
                                  "echo $(rm -f keep.txt)", "sh -c 'rm -f keep.txt'",
                                  "ls | xargs rm -f"])
async def test_allowed_and_blocked_lists_hold_for_every_command_of_a_line(
        bwrap: str, tmp_path: Path, line: str) -> None:
    (tmp_path / "keep.txt").write_text("keep\n")
    allow = ShellToolbox(tmp_path, {"command_line_allowed_commands": ["ls", "echo"]})
    block = ShellToolbox(tmp_path, {"command_line_blocked_commands": [r"rm\b", r"xargs\b"]})
    for box in (allow, block):
        text, is_error = await box.call(ToolCall("1", "execute_command", {"command": line}))
        assert is_error and "team file" in text, text
        assert (tmp_path / "keep.txt").exists()


def _sparse_writer(req: ScriptRequest) -> Reply:
    """Edits app.py and leaves a 900 MB sparse file in its workspace, then answers."""
    if presenting(req):
        return answer("FINAL: VALUE is 2")
    if has_answered(req):
        return vote(best_label(req))
    if not [r for r in req.tool_results if r["name"] == "execute_command"]:
        return ToolCalls([Call("execute_command", {
            "command": "sed -i s/1/2/ app.py && truncate -s 900M big.bin && ls -l"})])
    return answer("VALUE is 2 now")


async def test_a_sparse_file_in_the_winners_workspace_is_not_read_or_written_back(
        bwrap: str, provider: ScriptedProvider, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "app.py").write_text("VALUE = 1\n")
    provider.script("coder", _sparse_writer)
    backend = provider.backend("anthropic", "coder", max_retries=0,
                               enable_mcp_command_line=True)
    team = team_from_data({"agents": [{"id": "coder", "backend": backend}], "orchestrator": {
        "context_paths": [{"path": str(proj), "permission": "write"}]}}, "t.yaml",
        Environment({}))
    engine = Engine(tmp_path / ".massgen", Environment({}))
    result = await engine.prepare(team, "Set VALUE to 2").start()
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    assert (proj / "app.py").read_text() == "VALUE = 2\n"  # the real change still lands
    assert not (proj / "big.bin").exists()
    assert result.workspace is not None
    assert any("big.bin" in s and "not written back" in s for s in result.workspace.skipped)
