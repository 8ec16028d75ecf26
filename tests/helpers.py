"""Small builders shared by the tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.types import TextContent
from scripted_provider import ScriptedProvider

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.config.team import Team
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.runs.engine import Engine


def make_team(provider: ScriptedProvider, agents: list[tuple[str, str, str]],
              **orchestrator: Any) -> Team:
    """agents: (agent id, wire, scripted model name)."""
    data = {"agents": [{"id": aid, "backend": provider.backend(wire, model, max_retries=0)}
                       for aid, wire, model in agents],
            "orchestrator": orchestrator}
    return team_from_data(data, "test-team.yaml", Environment({}))


async def run_team(team: Team, state: Path, task: str = "What is the best queue?",
                   events: list[dict[str, Any]] | None = None, **kwargs: Any) -> RunResult:
    engine = Engine(state / ".massgen", Environment({}))
    listener = events.append if events is not None else None
    return await engine.prepare(team, task, listener=listener, **kwargs).start()


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["kind"] for e in events]


def text_of(result: Any) -> str:
    """The text of a tool result (its first content block)."""
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text
