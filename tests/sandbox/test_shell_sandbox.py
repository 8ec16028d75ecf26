"""MassGen's command-line tool for API agents: real commands in the bubblewrap sandbox, escapes
that must fail, and an API agent whose `execute_command` output becomes its answer's files."""

from __future__ import annotations

from pathlib import Path

import pytest
from agents import best_label, has_answered, presenting
from scripted_provider import Call, Reply, ScriptedProvider, ScriptRequest, ToolCalls, answer, vote
from tiers import require_program

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.messages import ToolCall
from massgen_mcp.runs.engine import Engine
from massgen_mcp.tools.sandbox import INSTALL_HINT, SandboxPolicy, run_sandboxed
from massgen_mcp.tools.shell import ShellToolbox


@pytest.fixture
def bwrap() -> str:
    return require_program("bubblewrap", "bwrap")


async def _run(ws: Path, command: str, **policy: object) -> tuple[int | None, str]:
    result = await run_sandboxed(command, ws, SandboxPolicy(**policy))  # type: ignore[arg-type]
    return result.exit_code, result.output


@pytest.mark.bubblewrap
async def test_python_runs_in_the_workspace(bwrap: str, tmp_path: Path) -> None:
    code, out = await _run(tmp_path, "python -c 'import os; print(6 * 7, os.getcwd())'")
    assert code == 0 and out.strip() == f"42 {tmp_path.resolve()}"


@pytest.mark.bubblewrap
async def test_pytest_on_a_tiny_project(bwrap: str, tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\n"
        "def test_wrong():\n    assert add(2, 2) == 5\n")
    code, out = await _run(tmp_path, "python -m pytest -q -p no:cacheprovider")
    assert code == 1 and "1 failed, 1 passed" in out


@pytest.mark.bubblewrap
async def test_writes_outside_the_workspace_fail(bwrap: str, tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    code, out = await _run(ws, f"echo x > {outside}/f; touch /usr/evil; echo y > ../f2; "
                               "echo z > /tmp/scratch && cat /tmp/scratch")
    assert "z" in out  # /tmp is the sandbox's own, empty and thrown away
    assert not (outside / "f").exists() and not Path("/usr/evil").exists()
    assert not (tmp_path / "f2").exists()
    code, _ = await _run(ws, "echo ok > mine.txt")
    assert code == 0 and (ws / "mine.txt").read_text() == "ok\n"


@pytest.mark.bubblewrap
async def test_home_and_ssh_keys_are_not_there(bwrap: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    ssh = tmp_path / "home" / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "id_ed25519").write_text("PRIVATE KEY\n")
    code, out = await _run(ws, f"cat {ssh}/id_ed25519; cat ~/.ssh/id_ed25519; "
                               "ls /root/.ssh; cat /etc/shadow")
    assert code != 0 and "PRIVATE KEY" not in out
    assert "No such file" in out


@pytest.mark.bubblewrap
async def test_no_network_unless_the_file_allows_it(
        bwrap: str, provider: ScriptedProvider, tmp_path: Path) -> None:
    url = provider.openai_base_url + "/models"
    probe = (f"python -c \"import urllib.request; urllib.request.urlopen('{url}', timeout=5); "
             "print('reached')\"")
    code, out = await _run(tmp_path, probe)
    assert code != 0 and "reached" not in out
    code, out = await _run(tmp_path, probe, network=True)
    assert "reached" in out or "HTTP Error" in out  # the loopback server answered


@pytest.mark.bubblewrap
async def test_time_and_output_limits(bwrap: str, tmp_path: Path) -> None:
    result = await run_sandboxed("sleep 30", tmp_path, SandboxPolicy(timeout=0.5))
    assert result.exit_code is None and "time limit" in result.text(SandboxPolicy(timeout=0.5))
    policy = SandboxPolicy(max_output=1000)
    result = await run_sandboxed("yes | head -c 100000", tmp_path, policy)
    assert result.truncated and len(result.output) == 1000
    assert "output cut at 1000" in result.text(policy)


async def test_without_bwrap_the_tool_is_refused_with_how_to_get_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    box = ShellToolbox(tmp_path, {"enable_mcp_command_line": True})
    assert box.tools == [] and "apt-get install bubblewrap" in box.notes[0]
    text, is_error = await box.call(ToolCall("1", "execute_command", {"command": "id"}))
    assert is_error and INSTALL_HINT in text
    with pytest.raises(RuntimeError, match="never runs an agent's commands outside"):
        await run_sandboxed("id", tmp_path, SandboxPolicy())


@pytest.mark.bubblewrap
async def test_allowed_and_blocked_commands(bwrap: str, tmp_path: Path) -> None:
    box = ShellToolbox(tmp_path, {"command_line_allowed_commands": ["python", "echo"],
                                  "command_line_blocked_commands": [r"echo\s+secret"]})
    ok, err = await box.call(ToolCall("1", "execute_command", {"command": "echo hi"}))
    assert not err and "hi" in ok
    text, err = await box.call(ToolCall("2", "execute_command", {"command": "rm -rf ."}))
    assert err and "not in the allowed commands" in text
    text, err = await box.call(ToolCall("3", "execute_command", {"command": "echo secret"}))
    assert err and "blocked" in text


def _coder(req: ScriptRequest) -> Reply:
    """Runs a command that edits app.py in its workspace, then answers; votes after."""
    if presenting(req):
        return answer("FINAL: VALUE is 2")
    if has_answered(req):
        return vote(best_label(req))
    ran = [r for r in req.tool_results if r["name"] == "execute_command"]
    if not ran:
        assert "execute_command" in req.tool_names
        return ToolCalls([Call("execute_command", {"command": (
            "python -c \"import pathlib; p = pathlib.Path('app.py'); "
            "p.write_text(p.read_text().replace('1', '2')); print('edited')\"")})])
    assert "exit code 0" in ran[0]["content"] and "edited" in ran[0]["content"]
    return answer("I set VALUE to 2 with a command")


@pytest.mark.bubblewrap
async def test_api_agent_shell_output_is_its_answers_workspace(
        bwrap: str, provider: ScriptedProvider, tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "app.py").write_text("VALUE = 1\n")
    provider.script("coder", _coder)
    backend = provider.backend("anthropic", "coder", max_retries=0,
                               enable_mcp_command_line=True,
                               command_line_execution_mode="local")
    team = team_from_data({"agents": [{"id": "coder", "backend": backend}], "orchestrator": {
        "context_paths": [{"path": str(proj), "permission": "write"}]}}, "t.yaml",
        Environment({}))
    assert not any("shell" in w for w in team.warnings), team.warnings
    engine = Engine(tmp_path / ".massgen", Environment({}))
    result = await engine.prepare(team, "Set VALUE to 2").start()
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    assert (proj / "app.py").read_text() == "VALUE = 2\n"
    assert result.workspace is not None and result.workspace.applied == [str(proj / "app.py")]
