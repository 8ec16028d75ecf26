"""What a team file named by a tool call cannot do: name a directory outside the run through an
agent id, turn on a shell or the network for its models, or raise limits past what the tool's
own arguments allow. Each is tried through a real MCP client against the server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client
from scripted_provider import ScriptedProvider

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.config.shorthand import team_from_models
from massgen_mcp.config.trust import TeamPolicy
from massgen_mcp.paths import name_problem
from massgen_mcp.server import build_server


@pytest.fixture(autouse=True)
def _own_config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def make_app(cwd: Path, env: dict[str, str], path_access: str | None = "restricted") -> App:
    return App(cwd / ".massgen", env=Environment(env, dotenv_dir=cwd), cwd=cwd,
               team_policy=TeamPolicy.create(None, path_access))


async def call(app: App, tool: str, args: dict[str, Any]) -> Any:
    server, _ = build_server(app)
    async with Client(server) as client:
        return await client.call_tool(tool, args)


def team_file(path: Path, backend: dict[str, Any] | None = None,
              orchestrator: dict[str, Any] | None = None, agent_id: str = "a") -> Path:
    path.write_text(yaml.safe_dump({
        "agents": [{"id": agent_id, "backend": {"type": "ollama", "model": "m1",
                                                **(backend or {})}}],
        "orchestrator": orchestrator or {}}))
    return path


@pytest.mark.parametrize("agent_id", ["../../../victim", "..", ".", "a/b", "x\x00y", "a b"])
@pytest.mark.parametrize("access", ["restricted", "full"])
async def test_an_agent_id_that_is_not_a_plain_name_is_refused(
        provider: ScriptedProvider, tmp_path: Path, agent_id: str, access: str) -> None:
    victim = tmp_path.parent / "victim"
    team_file(tmp_path / "t.yaml", agent_id=agent_id)
    app = make_app(tmp_path, {"OLLAMA_BASE_URL": provider.openai_base_url}, access)
    r = await call(app, "run_consensus", {"task": "x", "team": "t.yaml"})
    text = r.content[0].text
    assert r.is_error and "agent id" in text
    assert "letters, digits" in text or "may not be '.' or '..'" in text
    assert provider.requests == [] and not victim.exists()


@pytest.mark.parametrize("models", ["openai/..", "openai/.", "../..", "openai/a/..."])
def test_models_shorthand_gives_safe_ids(models: str) -> None:
    env = Environment({"OPENAI_API_KEY": "sk-test-0123456789", "X_API_KEY": "k"})
    try:
        team = team_from_models(models, env)
    except Exception as e:  # a provider that does not exist is refused, never a bad id
        assert "agent id" not in str(e)
        return
    for agent in team.agents:
        assert name_problem(agent.id) is None, agent.id


@pytest.mark.parametrize(("backend", "key"), [
    ({"enable_mcp_command_line": True}, "enable_mcp_command_line"),
    ({"command_line_docker_network_mode": "host"}, "command_line_docker_network_mode"),
    ({"command_line_network": True}, "command_line_network"),
])
async def test_a_restricted_file_cannot_give_its_models_a_shell_or_the_network(
        provider: ScriptedProvider, tmp_path: Path, backend: dict[str, Any], key: str) -> None:
    team_file(tmp_path / "t.yaml", backend)
    app = make_app(tmp_path, {"OLLAMA_BASE_URL": provider.openai_base_url})
    r = await call(app, "run_consensus", {"task": "x", "team": "t.yaml"})
    text = r.content[0].text
    assert r.is_error and f"agents[0].backend.{key}" in text
    assert "--allow-team-path=full" in text and provider.requests == []


@pytest.mark.parametrize(("key", "value"), [
    ("max_new_answers_per_agent", 100), ("max_new_answers_per_agent", None),
    ("orchestrator_timeout_seconds", 200000)])
async def test_a_restricted_file_cannot_raise_limits_past_the_tools(
        provider: ScriptedProvider, tmp_path: Path, key: str, value: Any) -> None:
    team_file(tmp_path / "t.yaml", orchestrator={key: value})
    app = make_app(tmp_path, {"OLLAMA_BASE_URL": provider.openai_base_url})
    r = await call(app, "run_consensus", {"task": "x", "team": "t.yaml"})
    text = r.content[0].text
    assert r.is_error and f"orchestrator.{key}" in text and "--allow-team-path=full" in text
    assert provider.requests == []
