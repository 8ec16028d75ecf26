"""The command line reads options as typed: no prefix guessing, no silent overrides, errors
in the subcommand's own words with "did you mean"."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agents import answer_then_vote
from mcp_harness import EXE, server_env, write_team
from test_ship import clean_env


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env=clean_env(cwd))


def test_a_prefix_of_an_option_is_an_error_that_names_the_option(tmp_path: Path) -> None:
    done = cli(tmp_path, "run", "x", "--model", "openai/gpt-5")
    assert done.returncode == 2
    assert "--model: did you mean --models?" in done.stderr
    # run's own usage, not the server's
    assert done.stderr.startswith("usage: massgen-mcp run ")
    assert "--transport" not in done.stderr
    assert not list(tmp_path.glob(".massgen/runs/*"))  # nothing ran


def test_a_prefix_is_not_taken_by_any_subcommand_or_the_server(tmp_path: Path) -> None:
    for args in (["plan", "g", "--dep", "shallow"], ["doctor", "--no-client"],
                 ["--transp", "stdio"]):
        done = cli(tmp_path, *args)
        assert done.returncode == 2, (args, done.stderr)
    plan = cli(tmp_path, "plan", "g", "--dep", "shallow")
    assert "--dep: did you mean --depth?" in plan.stderr
    assert plan.stderr.startswith("usage: massgen-mcp plan ")


def test_models_and_team_together_is_an_error(tmp_path: Path) -> None:
    done = cli(tmp_path, "run", "x", "--models", "test/a,test/b", "--team", "demo")
    assert done.returncode == 2
    assert "--models and --team were both given" in done.stderr
    assert done.stderr.startswith("usage: massgen-mcp run ")
    assert not list(tmp_path.glob(".massgen/runs/*"))


def test_a_mistyped_subcommand_gets_did_you_mean(tmp_path: Path) -> None:
    done = cli(tmp_path, "rnu", "x")
    assert done.returncode == 2
    assert "did you mean run?" in done.stderr
    doc = cli(tmp_path, "docter")
    assert "did you mean doctor?" in doc.stderr


def test_eval_help_prints_percent_signs_once(tmp_path: Path) -> None:
    done = cli(tmp_path, "eval", "--help")
    assert done.returncode == 0
    assert "%%" not in done.stdout


def test_run_and_plan_take_max_tokens(provider, tmp_path: Path) -> None:
    """--max-tokens caps each call's output: the provider receives it."""
    provider.script("capped", answer_then_vote("capped answer", "agent1", final="CAPPED"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "anthropic", "capped"),
                                                        ("b", "anthropic", "capped")])
    done = subprocess.run([EXE, "run", "x", "--team", str(team), "--max-tokens", "321"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=server_env())
    assert done.returncode == 0, done.stderr
    sent = {r.raw.get("max_tokens") for r in provider.requests_for("capped")}
    assert sent == {321}
    bad = cli(tmp_path, "plan", "g", "--team", "demo", "--max-tokens", "0")
    assert bad.returncode == 2
    assert "--max-tokens: '0' is not a positive whole number" in bad.stderr
