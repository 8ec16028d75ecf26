"""`massgen-mcp run` and the Python API, as a user runs them."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from agents import answer_then_vote
from mcp_harness import EXE, server_env, write_team
from scripted_provider import Error, Hang
from test_ship import clean_env

import massgen_mcp
from massgen_mcp.app import App
from massgen_mcp.config.choose import MCP, PYTHON, resolve_team
from massgen_mcp.config.env import Environment
from massgen_mcp.errors import ConfigError, MassgenError


def test_run_prints_the_answer_on_stdout_and_progress_on_stderr(provider, tmp_path: Path):
    provider.script("c1", answer_then_vote("cli answer", "agent1", final="CLI FINAL"))
    provider.script("c2", answer_then_vote("other", "agent1", final="CLI FINAL"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "c1"),
                                                        ("b", "anthropic", "c2")])
    done = subprocess.run([EXE, "run", "Which queue?", "--team", str(team)], cwd=tmp_path,
                          env=server_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "CLI FINAL"
    assert "a answered (" in done.stderr and "(2 of 2 votes cast): " in done.stderr
    assert "Winner: a" in done.stderr

    as_json = subprocess.run([EXE, "run", "Which queue?", "--team", str(team), "--json",
                              "--quiet"], cwd=tmp_path, env=server_env(), capture_output=True,
                             text=True, timeout=120)
    data = json.loads(as_json.stdout)
    assert data["status"] == "completed" and data["final_answer"] == "CLI FINAL"
    assert as_json.stderr == ""


def test_run_exit_codes_for_bad_config_and_failed_runs(provider, tmp_path: Path) -> None:
    bad = subprocess.run([EXE, "run", "x", "--models", "opnai/gpt-5"], cwd=tmp_path,
                         env=server_env(), capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert "did you mean 'openai'" in bad.stderr
    provider.script("down", Error(401, "no"))
    team = write_team(tmp_path / "t.yaml", provider, [("a", "openai", "down")])
    failed = subprocess.run([EXE, "run", "x", "--team", str(team)], cwd=tmp_path,
                            env=server_env(), capture_output=True, text=True, timeout=60)
    assert failed.returncode == 1
    assert "authentication failed" in failed.stderr
    assert "test-key" not in failed.stderr + failed.stdout


async def test_python_api(provider, workdir: Path) -> None:
    provider.script("p1", answer_then_vote("api answer", "agent1", final="API FINAL"))
    team = write_team(workdir / "team.yaml", provider, [("solo", "gemini", "p1")])
    result = await massgen_mcp.run("Which queue?", team=str(team), timeout_s=60)
    assert result.status == "completed" and result.final_answer == "API FINAL"
    assert Path(result.log_dir).is_relative_to(workdir / ".massgen")
    assert massgen_mcp.load_team(str(team)).agents[0].id == "solo"


def _start(cmd: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(cmd, cwd=cwd, env=server_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stderr_until(proc: subprocess.Popen[str], needle: str, seen: list[str]) -> str:
    """Read stderr lines until one contains `needle` (the process's own timeout bounds it)."""
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        if needle in line:
            return line
    raise AssertionError(f"{needle!r} never came; stderr was:\n{''.join(seen)}")


def test_a_silent_provider_gets_a_heartbeat_and_a_killed_run_keeps_its_times(
        provider, tmp_path: Path) -> None:
    """An endpoint that accepts the request and never answers: the CLI says who is still
    working after `--heartbeat` seconds of silence (10 by default); killed, the run is listed
    interrupted with its start time and how long it ran (the heartbeats are its signs of
    life)."""
    provider.script("mute1", Hang())
    provider.script("mute2", Hang())
    team = write_team(tmp_path / "team.yaml", provider, [("slow", "openai", "mute1"),
                                                        ("slower", "anthropic", "mute2")])
    proc = _start([EXE, "run", "Which queue?", "--team", str(team), "--timeout", "120",
                   "--heartbeat", "1"], tmp_path)
    seen: list[str] = []
    try:
        first = _stderr_until(proc, "still working", seen)
        beat = _stderr_until(proc, "still working", seen)
    finally:
        proc.kill()
        proc.wait(30)
    assert "started:" in "".join(seen)
    assert re.search(r"still working: slow \(\w+/mute1\) for \d+ s, slower \(claude/mute2\) "
                     r"for \d+ s", beat), beat
    assert "0 answers, 0 votes so far" in beat
    (run,) = App(tmp_path / ".massgen").list_runs()
    assert run.status == "interrupted"
    assert run.started_at.startswith(run.run_id[4:8] + "-")

    def at(line: str) -> float:
        return float(line.split("]", 1)[0].strip("[ s"))

    # The run began before the first heartbeat and was alive at the second: its recorded
    # time covers at least the span between them (printed to 0.1 s).
    assert run.elapsed_seconds >= at(beat) - at(first) - 0.2, (run.elapsed_seconds, first, beat)


def test_a_timeout_with_no_answer_says_so_in_sentences(provider, tmp_path: Path) -> None:
    provider.script("mute", Hang())
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "mute"),
                                                        ("b", "gemini", "mute")])
    done = subprocess.run([EXE, "run", "Which queue?", "--team", str(team), "--timeout", "2"],
                          cwd=tmp_path, env=server_env(), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stdout == ""
    assert "time limit reached: the run stops after 2 s" in done.stderr
    assert "no answer: the run reached its time limit after 2 s before any agent answered" \
        in done.stderr
    assert "best answer" not in done.stderr and '{"seconds"' not in done.stderr
    assert "(no answer)" not in done.stderr


def test_messages_speak_the_callers_language(tmp_path: Path) -> None:
    """No key anywhere: the CLI names its flags and not sampling; Python names keyword
    arguments; MCP names tool arguments and sampling."""
    cli = subprocess.run([EXE, "run", "x"], cwd=tmp_path, env=clean_env(tmp_path),
                         capture_output=True, text=True, timeout=60)
    assert cli.returncode == 2
    assert "run x --team demo" in cli.stderr  # what can run now (test_cli_demo.py)
    assert "--team frontier" not in cli.stderr  # its keys are all missing
    assert "models=" not in cli.stderr and "sampling" not in cli.stderr
    bad = subprocess.run([EXE, "run", "x", "--models", "gpt5", "--timeout", "0"],
                         cwd=tmp_path, env=clean_env(tmp_path), capture_output=True, text=True,
                         timeout=60)
    assert "--timeout must be a positive number" in bad.stderr

    env = Environment({}, dotenv_dir=tmp_path)
    with pytest.raises(ConfigError) as py:
        resolve_team(env=env, vocabulary=PYTHON)
    assert 'models="openai/gpt-5,anthropic/claude-sonnet-4-5"' in str(py.value)
    assert "--models" not in str(py.value) and "sampling" not in str(py.value)
    with pytest.raises(ConfigError, match=r"^models: 'gpt5' should be provider/model"):
        resolve_team(models="gpt5", env=env, vocabulary=PYTHON)
    with pytest.raises(ConfigError) as mcp:
        resolve_team(env=env, vocabulary=MCP)
    assert "models='openai/gpt-5" in str(mcp.value) and "models='sampling'" in str(mcp.value)


def test_python_api_errors_name_keyword_arguments(workdir: Path) -> None:
    with pytest.raises(MassgenError) as e:
        massgen_mcp.run_sync("x", models="gpt5")
    assert str(e.value).startswith("models: 'gpt5'") and "--models" not in str(e.value)
    with pytest.raises(MassgenError, match="timeout_s must be a positive number"):
        massgen_mcp.run_sync("x", models="openai/gpt-5", timeout_s=-1)
