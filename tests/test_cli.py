"""`massgen-mcp run` and the Python API, as a user runs them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from agents import answer_then_vote
from mcp_harness import EXE, server_env, write_team
from scripted_provider import Error

import massgen_mcp


def test_run_prints_the_answer_on_stdout_and_progress_on_stderr(provider, tmp_path: Path):
    provider.script("c1", answer_then_vote("cli answer", "agent1", final="CLI FINAL"))
    provider.script("c2", answer_then_vote("other", "agent1", final="CLI FINAL"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "c1"),
                                                        ("b", "anthropic", "c2")])
    done = subprocess.run([EXE, "run", "Which queue?", "--team", str(team)], cwd=tmp_path,
                          env=server_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "CLI FINAL"
    assert "a answered (" in done.stderr and "votes 2/2" in done.stderr
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
