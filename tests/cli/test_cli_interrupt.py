"""Ctrl-C during `run` and `plan` prints what a time limit prints: the best answer so far,
the run id and where to watch it; exit 130. Real subprocesses, a real SIGINT, a scripted
agent that answers and one that never replies."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
from mcp_harness import EXE, server_env, write_team
from scripted_provider import Hang, answer, sequence

from massgen_mcp.app import App


def _stderr_until(proc: subprocess.Popen[str], needle: str, seen: list[str]) -> None:
    assert proc.stderr is not None
    for line in proc.stderr:
        seen.append(line)
        if needle in line:
            return
    raise AssertionError(f"{needle!r} never came; stderr was:\n{''.join(seen)}")


@pytest.mark.parametrize("command", ["run", "plan"])
def test_ctrl_c_prints_the_best_answer_so_far_the_run_id_and_exits_130(
        provider, tmp_path: Path, command: str) -> None:
    provider.script("quick", sequence(answer("BEST SO FAR: use Kafka"), Hang()))
    provider.script("stuck", Hang())
    team = write_team(tmp_path / "team.yaml", provider, [("quick", "anthropic", "quick"),
                                                        ("stuck", "anthropic", "stuck")])
    proc = subprocess.Popen([EXE, command, "Which queue?", "--team", str(team), "--timeout",
                             "300"], cwd=tmp_path, env=server_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[str] = []
    try:
        # a plan's answer is a plan (this one is refused): stop it once it started
        _stderr_until(proc, "quick answered" if command == "run" else "started:", seen)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    err = "".join(seen) + err
    assert proc.returncode == 130, err
    (run,) = App(tmp_path / ".massgen").list_runs()
    assert run.status == "cancelled"
    assert "Ctrl-C: stopping the run" in err
    assert f"the run is kept as {run.run_id}" in err
    assert f"view {run.run_id}" in err and "— Watch: " in err
    if command == "run":
        assert out.strip() == "BEST SO FAR: use Kafka"
        assert "best answer so far" in err
    else:
        assert "No plan (cancelled)" in out and "Traceback" not in err


def test_a_second_ctrl_c_quits_at_once(provider, tmp_path: Path) -> None:
    provider.script("stuck", Hang())
    team = write_team(tmp_path / "team.yaml", provider, [("a", "anthropic", "stuck"),
                                                        ("b", "anthropic", "stuck")])
    proc = subprocess.Popen([EXE, "run", "x", "--team", str(team)], cwd=tmp_path,
                            env=server_env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[str] = []
    try:
        _stderr_until(proc, "started:", seen)
        proc.send_signal(signal.SIGINT)
        _stderr_until(proc, "Ctrl-C: stopping the run", seen)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == 130
    assert "Traceback" not in err
