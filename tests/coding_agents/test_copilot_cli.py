"""GitHub Copilot CLI (`@github/copilot`) as a team member: the real CLI, headless, on the
loopback scripted provider (its "BYOK" endpoint mode), and its login and error paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import answer_then_vote, best_label, has_answered
from cli_agents import cli_agent, cli_env, cli_path, copilot_backend, no_leftovers
from scripted_provider import Reply, ScriptedProvider, ScriptRequest, Text

from massgen_mcp.backends.cli.availability import cli_statuses
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.runs.engine import Engine

pytestmark = pytest.mark.npm


def _team(agents: list[dict[str, Any]], **orch: Any) -> Any:
    return team_from_data({"agents": agents, "orchestrator": orch}, "t.yaml", Environment({}))


async def test_copilot_in_a_mixed_team(provider: ScriptedProvider, tmp_path: Path) -> None:
    inner = answer_then_vote("Copilot answer", best_label)

    def copilot(req: ScriptRequest) -> Reply:
        # Seen under load: a request before Copilot had loaded the workflow server's tools
        # (none of them, or a vote with no targets yet). The model then says so in text, as a
        # real one would; the orchestrator's reminder starts the next request.
        if "new_answer" not in req.tool_names or (
                has_answered(req) and not req.tool_enum("vote", "agent_id")):
            return Text("I do not see the massgen tools yet.")
        return inner(req)

    provider.script("cp", cli_agent(copilot))
    provider.script("api1", answer_then_vote("API answer one", best_label))
    team = _team([{"id": "a-copilot", "backend": copilot_backend(provider, "cp")},
                  {"id": "b-api", "backend": provider.backend("anthropic", "api1",
                                                               max_retries=0)}],
                 orchestrator_timeout_seconds=300, skip_final_presentation=True)
    assert not team.warnings, team.warnings
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.prepare(team, "Which?").start()
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    assert any(a.agent_id == "a-copilot" and a.text == "Copilot answer"
               for a in result.answers)
    assert {v.voter for v in result.votes} == {"a-copilot", "b-api"}
    first = provider.requests_for("cp")[0]
    assert "massgen-new_answer" in first.tool_names
    assert first.headers.get("x-api-key") == "test-key"
    assert not no_leftovers(str(tmp_path))


async def test_copilot_without_a_login_is_one_clear_agent_error(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("api1", answer_then_vote("API answer one", best_label))
    home = tmp_path / "home"
    home.mkdir()
    team = _team([{"id": "a-copilot", "backend": {"type": "copilot",
                                                  "command": cli_path("copilot"),
                                                  "request_timeout_seconds": 120}},
                  {"id": "b-api", "backend": provider.backend("anthropic", "api1",
                                                               max_retries=0)}],
                 orchestrator_timeout_seconds=300, skip_final_presentation=True)
    engine = Engine(tmp_path / ".massgen", Environment(cli_env(HOME=str(home))))
    result = await engine.prepare(team, "Which?").start()
    assert result.status == "degraded", result.error
    error = str({a.agent_id: a.error for a in result.agents}["a-copilot"])
    assert "GitHub Copilot CLI failed" in error and "copilot login" in error
    assert not no_leftovers(str(tmp_path))


async def test_doctor_lists_copilot_and_its_token(tmp_path: Path) -> None:
    cli_path("copilot")
    none = {s.type: s for s in await cli_statuses(Environment(cli_env(HOME=str(tmp_path))),
                                                  ask=True)}
    assert none["copilot"].usable and not none["copilot"].login_found
    assert "cannot tell" in none["copilot"].login
    keyed = {s.type: s for s in await cli_statuses(Environment(cli_env(
        HOME=str(tmp_path), GH_TOKEN="gho_secret_value")), ask=True)}
    assert keyed["copilot"].login_found and keyed["copilot"].login == "GH_TOKEN set"
