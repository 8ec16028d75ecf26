"""Big teams read k answers each, not all (issue 31, item 5), through the real MCP client.

MassGen's own 50-agent file (`fifty_gemini_agents.yaml`: 30 gemini-2.5-flash and 20
gemini-2.5-pro agents) runs on the scripted provider's Gemini wire: 2N+1 calls, every answer
read by exactly k agents, votes only among what an agent read, and no request that grows
with the team. Figures (characters, span) are in bench/big_teams.py.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp_harness import memory_client
from scripted_provider import (
    Delay,
    Reply,
    ScriptedProvider,
    ScriptRequest,
    answer,
    own_label,
    vote,
)

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.coordination.reviewers import assign
from massgen_mcp.errors import ConfigError

TASK = "Which message queue should we use for 10k events per second?"


def big_team_agent(req: ScriptRequest) -> Reply:
    """Answer once, then vote for the first answer it may vote for; present when it won."""
    if "Present the best final" in req.last_user_text:
        return answer("FINAL: use a partitioned log")
    if own_label(req) is None:
        return answer(f"Use a partitioned log; {req.model} checked the throughput. " * 8)
    return vote(sorted(req.tool_enum("vote", "agent_id"))[0], "the clearest design")


def fifty_gemini_agents(provider: ScriptedProvider, path: Path, **orchestrator: Any) -> Path:
    """A team file of MassGen's `fifty_gemini_agents.yaml` shape, on the loopback provider."""
    agents = []
    for kind, n in (("flash", 30), ("pro", 20)):
        for i in range(1, n + 1):
            features = ({"enable_web_search": True} if i <= 10 else
                        {"enable_code_execution": True} if i <= 20 else
                        {"enable_web_search": True, "enable_code_execution": True})
            agents.append({"id": f"{kind}_agent_{i}", "backend": provider.backend(
                "gemini", f"gemini-2.5-{kind}", temperature=round(0.1 * (1 + (i - 1) % 10), 1),
                max_retries=0, **features)})
    # MassGen's own orchestrator keys ride along (accepted with a warning)
    data = {"agents": agents, "orchestrator": {"max_duration": 7200,
                                               "consensus_threshold": 0.67,
                                               "max_debate_rounds": 2, **orchestrator},
            "ui": {"display_type": "rich_terminal", "logging_enabled": True}}
    path.write_text(yaml.safe_dump(data))
    return path


async def run_file(tmp_path: Path, team: Path) -> dict[str, Any]:
    async with memory_client(tmp_path, team=team) as client:  # the operator's team
        result = await client.call_tool("run_consensus", {"task": TASK})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def largest_request(provider: ScriptedProvider) -> int:
    return max(len(r.text) for m in ("gemini-2.5-flash", "gemini-2.5-pro")
               for r in provider.requests_for(m))


async def test_massgens_fifty_agent_file_runs_with_k_reviewers(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    for model in ("gemini-2.5-flash", "gemini-2.5-pro"):
        provider.script(model, big_team_agent)
    out = await run_file(tmp_path, fifty_gemini_agents(provider, tmp_path / "fifty.yaml"))
    assert out["status"] == "completed"
    assert out["totals"]["provider_calls"] == 2 * 50 + 1
    reviews = out["reviews"]
    assert reviews["per_agent"] == 4
    reads: dict[str, list[str]] = reviews["reads"]
    assert len(reads) == 50 and all(len(set(r)) == 4 for r in reads.values())
    assert all(agent not in r for agent, r in reads.items())
    read_by = Counter(b for r in reads.values() for b in r)
    assert set(read_by.values()) == {4}  # every answer read by exactly k agents
    for v in out["votes"]:
        assert v["voted_for"] in [*reads[v["voter"]], v["voter"]]
    # every vote turn offered its own answer and the k it read, nothing else
    offered = [r.tool_enum("vote", "agent_id") for m in ("gemini-2.5-flash", "gemini-2.5-pro")
               for r in provider.requests_for(m) if "vote" in r.tool_names]
    assert offered and max(len(o) for o in offered) == 5
    bounded = largest_request(provider)

    # the same file, all-to-all: its largest request carries all 50 answers
    provider.reset()
    for model in ("gemini-2.5-flash", "gemini-2.5-pro"):
        provider.script(model, big_team_agent)
    out = await run_file(tmp_path, fifty_gemini_agents(
        provider, tmp_path / "fifty-all.yaml", all_to_all_max_agents=64))
    assert out.get("reviews") is None
    assert out["totals"]["provider_calls"] == 2 * 50 + 1
    assert largest_request(provider) > 5 * bounded


async def test_one_agents_prompt_does_not_grow_with_the_team(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    largest = {}
    for n in (8, 24):
        provider.reset()
        provider.script("m", big_team_agent)
        data = {"agents": [{"id": f"a{i:02d}", "backend": provider.backend(
            "openai", "m", max_retries=0)} for i in range(n)]}
        path = tmp_path / f"team{n}.yaml"
        path.write_text(yaml.safe_dump(data))
        out = await run_file(tmp_path, path)
        assert out["totals"]["provider_calls"] == 2 * n + 1
        largest[n] = max(len(r.text) for r in provider.requests_for("m"))
    # three times the team, the same prompt (labels get one digit longer at most)
    assert largest[24] <= largest[8] * 1.05


async def test_a_vote_for_an_answer_it_did_not_read_is_refused(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    strays: list[str] = []

    def stray_voter(req: ScriptRequest) -> Reply:
        if "Present the best final" in req.last_user_text:
            return answer("FINAL")
        me = own_label(req)
        if me is None:
            return answer(f"answer of {req.model}")
        offered = req.tool_enum("vote", "agent_id")
        unread = sorted(f"agent{i}" for i in range(1, 8) if f"agent{i}" not in offered)
        if not req.tool_results:  # first try: an answer it was not shown
            strays.append(unread[0])
            return vote(unread[0], "I have heard it is good")
        return vote(offered[0], "the best of what I read")

    provider.script("stray", stray_voter)
    provider.script("m", big_team_agent)
    agents = [("a1", "stray")] + [(f"a{i}", "m") for i in range(2, 8)]
    data = {"agents": [{"id": aid, "backend": provider.backend("anthropic", model,
                                                               max_retries=0)}
                       for aid, model in agents],
            "orchestrator": {"reviewers_per_agent": 2}}
    path = tmp_path / "seven.yaml"
    path.write_text(yaml.safe_dump(data))
    out = await run_file(tmp_path, path)
    assert strays, "the stray voter never voted"
    errors = [t for r in provider.requests_for("stray") for t in r.tool_results if t["is_error"]]
    assert errors and strays[0] in errors[0]["content"]
    assert "valid choices" in errors[0]["content"]
    vote_of_a1 = next(v for v in out["votes"] if v["voter"] == "a1")
    assert vote_of_a1["voted_for"] in [*out["reviews"]["reads"]["a1"], "a1"]


async def test_teams_up_to_five_review_all_to_all(provider: ScriptedProvider,
                                                  tmp_path: Path) -> None:
    provider.script("m", big_team_agent)
    data = {"agents": [{"id": f"a{i}", "backend": provider.backend("gemini", "m",
                                                                    max_retries=0)}
                       for i in range(5)]}
    path = tmp_path / "five.yaml"
    path.write_text(yaml.safe_dump(data))
    out = await run_file(tmp_path, path)
    assert out.get("reviews") is None and out["totals"]["provider_calls"] == 11
    votes = [r for r in provider.requests_for("m") if "vote" in r.tool_names]
    assert votes and all(len(r.tool_enum("vote", "agent_id")) == 5 for r in votes)


def test_the_rotation_has_every_answer_read_by_exactly_k() -> None:
    ids = [f"agent_{i}" for i in range(50)]
    for k in (1, 4, 9):
        for seed in (0, 7, 2**31 - 1):
            reads = assign(ids, k, seed)
            assert reads == assign(ids, k, seed)  # rebuilt from the recorded seed
            assert all(len(set(r)) == k and a not in r for a, r in reads.items())
            assert set(Counter(b for r in reads.values() for b in r).values()) == {k}
    assert assign(ids, 4, 1) != assign(ids, 4, 2)


def test_a_team_over_64_agents_is_refused_with_the_cap() -> None:
    data = {"agents": [{"id": f"a{i}", "backend": {"type": "function", "model": "x"}}
                       for i in range(65)]}
    with pytest.raises(ConfigError, match="64"):
        team_from_data(data, "huge.yaml", Environment({}))
    data["agents"] = data["agents"][:64]
    assert len(team_from_data(data, "big.yaml", Environment({})).agents) == 64


async def test_a_new_answer_restarts_only_the_agents_that_read_it(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    def late(req: ScriptRequest) -> Reply:
        text = req.last_user_text
        if "Present the best final" in text:
            return answer("FINAL")
        if own_label(req) is None:
            return answer("a first draft")
        mine = text.split("Your own latest answer is ", 1)[1].split()[0].rstrip(".")
        if mine.endswith(".1"):  # revises once, after its peers have voted
            return Delay(0.3, answer("a second, better draft"))
        return vote(own_label(req) or "", "mine")

    provider.script("late", late)
    provider.script("m", big_team_agent)
    data = {"agents": [{"id": "late", "backend": provider.backend("openai", "late",
                                                                   max_retries=0)}]
            + [{"id": f"a{i}", "backend": provider.backend("openai", "m", max_retries=0)}
               for i in range(1, 8)],
            "orchestrator": {"reviewers_per_agent": 2, "early_stop": False}}
    path = tmp_path / "eight.yaml"
    path.write_text(yaml.safe_dump(data))
    async with memory_client(tmp_path, team=path) as client:
        result = await client.call_tool("run_consensus", {"task": TASK})
        out = result.structured_content
        assert out is not None and out["status"] == "completed"
        events = (await client.call_tool("get_run", {"run_id": out["run_id"],
                                                     "detail": "events"})).structured_content
    readers = {agent for agent, r in out["reviews"]["reads"].items() if "late" in r}
    restarts = [e for e in events["events"] if e["kind"] == "restart"]
    assert restarts, "the revision restarted nobody"
    for e in restarts:
        assert e["cause"] == "late" and set(e["agents"]) <= readers
    assert len(readers) == 2
