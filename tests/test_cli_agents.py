"""Coding-agent CLIs as team members: the real claude / codex / gemini binaries, headless,
against the loopback scripted provider (no real model, no network)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents import answer_then_vote, best_label
from cli_agents import claude_backend, cli_agent, cli_env, leftover_processes
from scripted_provider import ScriptedProvider

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.runs.engine import Engine


def _team(provider: ScriptedProvider, agents: list[dict[str, Any]], **orch: Any) -> Any:
    return team_from_data({"agents": agents, "orchestrator": orch}, "cli-team.yaml",
                          Environment({}))


def _api(provider: ScriptedProvider, aid: str, model: str) -> dict[str, Any]:
    return {"id": aid, "backend": provider.backend("anthropic", model, max_retries=0)}


async def test_mixed_team_with_claude_code_reaches_consensus(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("cc", cli_agent(answer_then_vote("CLI answer: use a queue", best_label)))
    provider.script("api1", answer_then_vote("API answer one", best_label))
    provider.script("api2", answer_then_vote("API answer two", best_label))
    team = _team(provider, [
        {"id": "coder", "backend": claude_backend(provider, "cc")},
        _api(provider, "b-api", "api1"), _api(provider, "c-api", "api2")],
        orchestrator_timeout_seconds=120)
    events: list[dict[str, Any]] = []
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.run(team, "Which queue?", listener=events.append)
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    coder = next(a for a in result.agents if a.agent_id == "coder")
    assert coder.error is None and coder.answers >= 1
    assert any(a.agent_id == "coder" and "CLI answer" in a.text for a in result.answers)
    assert {v.voter for v in result.votes} == {"coder", "b-api", "c-api"}
    # The CLI really went through the provider with its own tool names.
    cc_requests = provider.requests_for("cc")
    assert any("mcp__massgen__new_answer" in r.tool_names for r in cc_requests)
    assert cc_requests[0].headers.get("x-api-key") == "test-key"
    assert coder.usage.provider_calls >= 2
    assert not leftover_processes(str(tmp_path))
