"""`massgen-mcp eval` live on the real-model tier: SmolLM2-135M on llama.cpp's server, a short
easy arith slice. The figures say nothing about teams in general (the model is tiny); the
test asserts the eval runs to its end on a model that misbehaves and reports consistent
figures."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from mcp_harness import EXE, server_env
from test_real_model import smollm2  # noqa: F401  (the module's llama.cpp server fixture)

pytestmark = pytest.mark.real_model


def test_a_live_eval_on_the_tiny_model_reports_consistent_figures(
        smollm2: str, tmp_path: Path) -> None:  # noqa: F811
    agents = [{"id": f"smol{i}", "backend": {
        "type": "chatcompletion", "model": "smollm2", "base_url": smollm2, "max_tokens": 48,
        "temperature": 0.7, "max_retries": 1, "request_timeout_seconds": 120}}
        for i in range(2)]
    team = tmp_path / "smol.yaml"
    team.write_text(yaml.safe_dump({"agents": agents, "orchestrator": {
        "orchestrator_timeout_seconds": 240, "max_new_answers_per_agent": 1}}))
    done = subprocess.run(
        [EXE, "eval", "arith", "--team", str(team), "--limit", "2", "--levels", "1",
         "--arms", "solo,team,oracle", "--json", "--quiet", "--record", str(tmp_path / "rec")],
        cwd=tmp_path, env=server_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout)
    assert figures["items_scored"] == 2 and figures["stopped"] is None
    arms = figures["arms"]
    assert set(arms) == {"solo:smol0", "solo:smol1", "team", "oracle"}
    for name in ("solo:smol0", "solo:smol1"):
        assert arms[name]["calls"] == 2  # one call per item, whatever the model said
    assert arms["team"]["calls"] >= 2 * 2  # at least an answer from each member per item
    oracle_right = sum(
        any(item["arms"][f"solo:smol{i}"]["right"] for i in range(2))
        for item in figures["items"])
    assert arms["oracle"]["right"] == oracle_right
    assert arms["oracle"]["accuracy"] >= max(arms["solo:smol0"]["accuracy"],
                                             arms["solo:smol1"]["accuracy"])
    assert figures["selection_gap"] == round(arms["oracle"]["accuracy"]
                                             - arms["team"]["accuracy"], 4)
    # A replay of the live recording reproduces the figures without the model.
    again = subprocess.run(
        [EXE, "eval", "arith", "--limit", "2", "--levels", "1", "--arms", "solo,team,oracle",
         "--json", "--quiet", "--replay", str(tmp_path / "rec")],
        cwd=tmp_path, env=server_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout == done.stdout
