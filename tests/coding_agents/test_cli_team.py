"""A team with no API key: `doctor` points at the logged-in coding CLIs, the bundled `clis`
team runs on them, and a tool call may use it only with the operator's --allow-cli-agents."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from agents import answer_then_vote, best_label
from cli_agents import BIN, cli_agent, cli_env, cli_path, no_leftovers
from mcp import Client
from mcp_harness import EXE, server_env
from scripted_provider import ScriptedProvider

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import load_team
from massgen_mcp.config.trust import TeamPolicy
from massgen_mcp.runs.engine import Engine
from massgen_mcp.server import build_server

STORED_KEY = "sk-test-stored-by-codex-login-67890"


def _codex_login(home: Path) -> None:
    """Log Codex in the way a user does with a key: its own `codex login --with-api-key`."""
    subprocess.run([cli_path("codex"), "login", "--with-api-key"], input=STORED_KEY,
                   text=True, env=cli_env(HOME=str(home)), capture_output=True, check=True,
                   timeout=60)


@pytest.mark.npm
def test_doctor_says_a_team_can_run_on_the_logged_in_clis(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    _codex_login(home)
    env = server_env({"HOME": str(home), "PATH": f"{BIN}:/usr/bin:/bin",
                      "XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    out = subprocess.run([EXE, "doctor", "--dir", str(tmp_path)], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert "codex" in text and "`codex login status`: logged in (API key)" in text, text
    assert "`claude auth status`: not logged in" in text
    # the verdict first: what can run now names the clis team and who is logged in
    assert "--team clis\n      the coding-agent CLIs you are logged in to (codex)" in text, text
    assert "67890" not in text  # codex's own status shows part of the key: never repeated


@pytest.mark.npm
async def test_the_clis_team_runs_on_what_is_logged_in(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    """Claude Code on a key from the environment (pointed at the scripted provider), Codex
    and Gemini CLI not logged in: they are dropped with the fix, the run goes on."""
    provider.script("cc-default", cli_agent(answer_then_vote("Claude on my login", best_label)))
    home = tmp_path / "home"
    home.mkdir()
    cli_path("claude")
    env = Environment(cli_env(HOME=str(home), ANTHROPIC_API_KEY="k-from-env",
                              ANTHROPIC_BASE_URL=provider.anthropic_base_url,
                              ANTHROPIC_MODEL="cc-default"))
    team = load_team("clis", env)
    assert [a.provider.name for a in team.agents] == ["claude_code", "codex", "gemini_cli"]
    result = await Engine(tmp_path / ".massgen", env).prepare(team, "Which queue?").start()
    assert result.status == "degraded", result.error
    errors = {a.agent_id: a.error for a in result.agents}
    assert errors["claude-code"] is None
    assert "Codex is not logged in" in str(errors["codex"]) and "codex login" in str(
        errors["codex"])
    assert errors["gemini-cli"] is not None
    assert "Claude on my login" in (result.final_answer or "")
    assert not no_leftovers(str(tmp_path))


@pytest.mark.parametrize("allowed", [False, True])
async def test_a_tool_call_needs_allow_cli_agents_for_the_clis_team(
        tmp_path: Path, allowed: bool) -> None:
    app = App(tmp_path / ".massgen", env=Environment({"PATH": str(tmp_path)},
                                                      dotenv_dir=tmp_path),
              cwd=tmp_path, team_policy=TeamPolicy.create(None, None),
              allow_cli_agents=allowed)
    server, _ = build_server(app)
    async with Client(server) as client:
        r = await client.call_tool("run_consensus", {"task": "x", "team": "clis",
                                                     "wait": False})
    text = r.content[0].text  # type: ignore[union-attr]
    if allowed:
        assert "--allow-cli-agents" not in text
    else:
        assert r.is_error and "--allow-cli-agents" in text and "coding-agent CLI" in text
        assert not (tmp_path / ".massgen" / "runs").exists()
