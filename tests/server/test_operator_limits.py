"""The operator's limits bind every run a tool call starts: the per-run caps (the --team file's
and the server's --max-run-* options) whatever team the call builds, how many runs go at once
(server-wide and per user), and each user's daily spend, counted on the shared store. Over
real HTTP, with the scripted provider behind the real SDKs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from agents import answer_then_vote
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_harness import RunningServer, http_server, write_team
from scripted_provider import Hang, ScriptedProvider
from test_users import new_token

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.runs.quota import Quota, RunLimits


@asynccontextmanager
async def as_user(server: RunningServer, token: str | None = None) -> AsyncIterator[Client]:
    import httpx2

    headers = {"authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=120)
    async with Client(streamable_http_client(server.url, http_client=http),
                      mode="legacy") as c:
        yield c


def refusal(result: Any) -> str:
    assert result.is_error, result.structured_content
    return str(result.content[0].text)


async def test_a_models_team_keeps_the_operators_call_cap(provider: ScriptedProvider,
                                                          tmp_path: Path) -> None:
    """Finding: with --team setting max_provider_calls: 3, a call with `models` ran 7."""
    for model in ("m1", "m2", "m3", "op"):
        provider.script(model, answer_then_vote(f"answer {model}", final="FINAL"))
    operator = write_team(tmp_path / "operator.yaml", provider, [("o", "openai", "op")],
                          max_provider_calls=3)
    with http_server(tmp_path, "--team", str(operator),
                     env={"OLLAMA_BASE_URL": provider.openai_base_url}) as server:
        async with as_user(server) as c:
            r = await c.call_tool("run_consensus", {"task": "Which queue?",
                                                    "models": "ollama/m1,ollama/m2,ollama/m3"})
    assert r.structured_content["status"] == "budget_exceeded", r.structured_content
    assert len(provider.requests) == 3  # 3 answers would be followed by 3 votes and a final


async def test_a_call_gets_at_most_the_operators_agents_answers_and_time(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    operator = write_team(tmp_path / "operator.yaml", provider, [("o", "openai", "op")],
                          max_new_answers_per_agent=2, orchestrator_timeout_seconds=600)
    env = Environment({"OLLAMA_BASE_URL": provider.openai_base_url}, dotenv_dir=tmp_path)
    app = App(tmp_path / ".massgen", default_team=str(operator), env=env, cwd=tmp_path,
              quota=Quota(run=RunLimits(max_agents=3, timeout_s=3600)))
    team = await app.team_for(models="ollama/m1,ollama/m2", max_answers_per_agent=20,
                              timeout_s=86400, from_tool=True)
    assert team.orchestrator.max_new_answers_per_agent == 2
    assert team.orchestrator.orchestrator_timeout_seconds == 600
    with pytest.raises(Exception, match=r"4 agents.*at most 3 per run \(--max-agents\)"):
        await app.team_for(models="ollama/a,ollama/b,ollama/c,ollama/d", from_tool=True)
    # The command line is the operator's own: not capped.
    own = await app.team_for(models="ollama/m1", timeout_s=86400)
    assert own.orchestrator.orchestrator_timeout_seconds == 86400


async def test_runs_at_once_are_capped_per_user_and_for_the_server(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("stuck", Hang())
    team = write_team(tmp_path / "team.yaml", provider, [("s", "openai", "stuck")])
    auth = tmp_path / "users"
    alice, bob = new_token(auth, "alice"), new_token(auth, "bob")
    with http_server(tmp_path, "--team", str(team), "--auth-file", str(auth),
                     "--max-runs-per-user", "1", "--max-concurrent-runs", "2") as server:
        async with as_user(server, alice) as a, as_user(server, bob) as b:
            first = await a.call_tool("run_consensus", {"task": "one", "wait": False})
            assert not first.is_error
            again = refusal(await a.call_tool("run_consensus", {"task": "two", "wait": False}))
            assert "--max-runs-per-user 1" in again and "when one of them ends" in again
            assert not (await b.call_tool("run_consensus", {"task": "b", "wait": False})
                        ).is_error  # a cap per user: bob is not alice
            # Two runs go: the server's own cap now refuses anyone.
            full = refusal(await b.call_tool("plan", {"goal": "g", "wait": False}))
            assert "--max-concurrent-runs 2" in full
            stopped = await a.call_tool("cancel_run",
                                        {"run_id": first.structured_content["run_id"]})
            assert stopped.structured_content["cancelled"]
            assert not (await a.call_tool("run_consensus", {"task": "three", "wait": False})
                        ).is_error  # its run ended: alice may start another


@pytest.mark.parametrize("store", ["files", pytest.param("redis", marks=pytest.mark.redis)])
async def test_a_users_daily_spend_is_capped_on_the_shared_counters(
        provider: ScriptedProvider, tmp_path: Path, store: str,
        request: pytest.FixtureRequest) -> None:
    provider.script("gpt-5", answer_then_vote("Use SQS", final="FINAL: SQS"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "responses", "gpt-5")])  # priced
    auth = tmp_path / "users"
    alice, bob = new_token(auth, "alice"), new_token(auth, "bob")
    extra = ["--store", request.getfixturevalue("redis_url"), "--run-here"] \
        if store == "redis" else []
    args = ("--team", str(team), "--auth-file", str(auth),
            "--max-daily-usd-per-user", "0.000001", *extra)
    with http_server(tmp_path, *args) as server:
        async with as_user(server, alice) as a:
            spent = await a.call_tool("run_consensus", {"task": "Which queue?"})
            assert spent.structured_content["status"] == "completed"
            over = refusal(await a.call_tool("run_consensus", {"task": "Again?"}))
            assert "daily limit per user (--max-daily-usd-per-user" in over
            assert "resets at 00:00 UTC (in " in over
    # Another process on the same store knows what alice spent today.
    with http_server(tmp_path, *args) as again:
        async with as_user(again, alice) as a, as_user(again, bob) as b:
            assert "daily limit" in refusal(await a.call_tool("run_consensus", {"task": "3"}))
            assert not (await b.call_tool("run_consensus", {"task": "mine"})).is_error


def test_a_worker_keeps_the_front_ends_caps(provider: ScriptedProvider, tmp_path: Path,
                                            redis_url: str) -> None:
    """A queued call carries the caps its front end applied: the worker, started without
    them, resolves the team again and still stops at the front end's three calls."""
    import anyio
    from test_workers import worker

    for model in ("w-a", "w-b"):
        provider.script(model, answer_then_vote(f"answer {model}", final="FINAL"))
    team = write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "w-a"), ("b", "openai", "w-b")])

    async def call(server: RunningServer) -> dict[str, Any]:
        async with as_user(server) as c:
            r = await c.call_tool("run_consensus", {"task": "Which queue?"})
            return dict(r.structured_content or {})

    with worker(tmp_path, redis_url, team), \
            http_server(tmp_path, "--store", redis_url, "--team", str(team),
                        "--max-run-calls", "3") as server:
        data = anyio.run(call, server)
    assert data["status"] == "budget_exceeded", data
    assert len(provider.requests) <= 3  # uncapped: 2 answers, 2 votes and the final
