"""How independent the majority was (issue 31, item 6), through the real MCP client.

Three agents of one model family (gpt-5-mini, gpt-5, gpt-5-nano) outvote one claude: the
share is 3/4, but counting each family's votes once it is 1/2, and the winner's votes come
from one family. `min_agreement: {independent_share: ...}` can require more.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import answer_then_vote
from mcp_harness import memory_client, write_team
from scripted_provider import ScriptedProvider

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.coordination.families import family
from massgen_mcp.errors import ConfigError
from massgen_mcp.runs.view import report_html

GPT_TEAM = [("a", "openai", "gpt-5-mini"), ("b", "openai", "gpt-5"),
            ("c", "openai", "gpt-5-nano"), ("d", "anthropic", "claude-sonnet-4-5")]


def script_gpt_majority(provider: ScriptedProvider) -> None:
    """a, b and c (one family) vote for a's answer (agent1); d votes for its own (agent4)."""
    for model in ("gpt-5-mini", "gpt-5", "gpt-5-nano"):
        provider.script(model, answer_then_vote(f"Use Kafka ({model}).", "agent1"))
    provider.script("claude-sonnet-4-5", answer_then_vote("Use NATS.", "agent4"))


async def run(tmp_path: Path, provider: ScriptedProvider, **arguments: Any) -> dict[str, Any]:
    team = write_team(tmp_path / "team.yaml", provider, GPT_TEAM, early_stop=False)
    async with memory_client(tmp_path, team=team) as client:
        result = await client.call_tool("run_consensus", {"task": "Which queue?",
                                                          **arguments})
    assert result.structured_content is not None, result.content
    return result.structured_content


async def test_a_one_family_majority_is_reported_as_one_independent_vote(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    script_gpt_majority(provider)
    out = await run(tmp_path, provider)
    assert out["status"] == "completed" and out["winner"]["agent_id"] == "a"
    assert out["agreement"]["share"] == 0.75
    assert out["winner"]["families"] == 1
    assert out["agreement"]["independent_share"] == 0.5  # openai/gpt-5 for, claude against
    # the viewer's run page (the same page the HTML report is) says it
    page = report_html(tmp_path / ".massgen", out["run_id"])
    assert "independent share 50% (1 model family)" in page


async def test_min_agreement_can_ask_for_an_independent_share(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    script_gpt_majority(provider)
    out = await run(tmp_path, provider, min_agreement={"independent_share": 0.6})
    assert out["status"] == "no_consensus" and out.get("final_answer") is None
    assert "independent share of 50%" in out["error"]
    assert "0.6" in out["error"]
    # the plain share alone is met by the same votes
    provider.reset()
    script_gpt_majority(provider)
    out = await run(tmp_path, provider, min_agreement={"share": 0.7})
    assert out["status"] == "completed"


async def test_families_that_differ_count_separately(provider: ScriptedProvider,
                                                     tmp_path: Path) -> None:
    provider.script("gpt-5-mini", answer_then_vote("Use Kafka.", "agent1"))
    provider.script("claude-sonnet-4-5", answer_then_vote("Kafka, yes.", "agent1"))
    provider.script("gemini-2.5-pro", answer_then_vote("Kafka too.", "agent1"))
    team = write_team(tmp_path / "team.yaml", provider, [
        ("a", "openai", "gpt-5-mini"), ("b", "anthropic", "claude-sonnet-4-5"),
        ("c", "gemini", "gemini-2.5-pro")], early_stop=False)
    async with memory_client(tmp_path, team=team) as client:
        result = await client.call_tool("run_consensus", {"task": "Which queue?"})
    out = result.structured_content
    assert out is not None
    assert out["winner"]["families"] == 3 and out["agreement"]["independent_share"] == 1.0
    assert "3 model families" in result.content[0].text  # type: ignore[union-attr]


def test_the_team_file_spelling_of_an_independent_share() -> None:
    agents = [{"id": "a", "backend": {"type": "function", "model": "x"}}]
    team = team_from_data({"agents": agents, "orchestrator": {
        "min_agreement": {"share": 0.5, "independent_share": 0.5}}}, "t.yaml", Environment({}))
    assert team.orchestrator.min_agreement == 0.5
    assert team.orchestrator.min_independent_share == 0.5
    with pytest.raises(ConfigError, match="independent_share"):
        team_from_data({"agents": agents, "orchestrator": {
            "min_agreement": {"independant_share": 0.5}}}, "t.yaml", Environment({}))


@pytest.mark.parametrize("provider_name,model,expected", [
    ("openai", "gpt-5-mini", "openai/gpt-5"),
    ("openai", "gpt-5", "openai/gpt-5"),
    ("openrouter", "openai/gpt-5", "openai/gpt-5"),
    ("openai", "gpt-4o-mini", "openai/gpt-4o"),
    ("claude", "claude-sonnet-4-5", "anthropic/claude-sonnet"),
    ("claude", "claude-sonnet-4-20250514", "anthropic/claude-sonnet"),
    ("gemini", "gemini-2.5-flash", "google/gemini-2.5"),
    ("gemini", "gemini-2.5-pro", "google/gemini-2.5"),
    ("ollama", "llama3.2:3b", "meta/llama3.2"),
    ("together", "meta-llama/Llama-3.3-70B-Instruct-Turbo", "meta/llama-3.3"),
    ("openrouter", "openai/o3-mini", "openai/o3"),
])
def test_a_family_is_the_vendor_and_the_model_line(provider_name: str, model: str,
                                                    expected: str) -> None:
    assert family(provider_name, model) == expected
