"""Follow-ups (issue 31, item 7): a run that continues an earlier one, through the real MCP
client and the real `massgen-mcp run` command on the scripted provider.

The team of the follow-up is given the earlier task, final answer and dissent; both runs
record the chain and their pages link each other. A follow-up of a run the caller cannot see
is refused exactly as get_run refuses an unknown run, before any model is called.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from agents import answer_then_vote, has_answered, presenting
from mcp import Client
from mcp.types import TextContent
from mcp_harness import EXE, memory_client, server_env, write_team
from scripted_provider import Reply, ScriptedProvider, ScriptRequest, answer, vote

from massgen_mcp.runs.view import report_html

FIRST_TASK = "Which message queue should the billing service use?"
WINNING = "Use Kafka: the billing events must be replayable for audits."
DISSENT_REASON = "NATS is far lighter to operate for a team of two"


def script_team(provider: ScriptedProvider) -> None:
    """a and b vote for a's answer (agent1); c keeps its own, with a reason (dissent)."""
    provider.script("a", answer_then_vote(WINNING, "agent1", final=WINNING))
    provider.script("b", answer_then_vote("Kafka, for replay.", "agent1"))

    def c(req: ScriptRequest) -> Reply:
        if presenting(req) or not has_answered(req):
            return answer("Use NATS.")
        return vote("agent3", DISSENT_REASON)

    provider.script("c", c)


def team_file(provider: ScriptedProvider, tmp_path: Path) -> Path:
    return write_team(tmp_path / "team.yaml", provider, [
        ("a", "openai", "a"), ("b", "anthropic", "b"), ("c", "gemini", "c")], early_stop=False)


async def call(client: Client, **arguments: Any) -> Any:
    return await client.call_tool("run_consensus", arguments)


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def test_a_follow_up_gives_the_team_the_earlier_decision_and_links_the_runs(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    script_team(provider)
    async with memory_client(tmp_path, team=team_file(provider, tmp_path)) as client:
        first = (await call(client, task=FIRST_TASK)).structured_content
        assert first["status"] == "completed" and first["dissent"]
        provider.reset()
        script_team(provider)
        second = await call(client, task="How many partitions should it start with?",
                            follow_up_of=first["run_id"])
        assert not second.is_error, text_of(second)
        out = second.structured_content
        assert out["follow_up_of"] == first["run_id"]
        again = await client.call_tool("get_run", {"run_id": out["run_id"]})
        assert again.structured_content["follow_up_of"] == first["run_id"]
    prompts = [r.last_user_text for m in ("a", "b", "c") for r in provider.requests_for(m)]
    assert prompts and all(f"<PREVIOUS RUN {first['run_id']}>" in p for p in prompts)
    shown = prompts[0]
    assert FIRST_TASK in shown and WINNING in shown and DISSENT_REASON in shown
    assert "How many partitions" in shown
    # the pages link the two runs both ways
    state = tmp_path / ".massgen"
    page = report_html(state, out["run_id"])
    assert f"Follows up run <span class=\"mono\">{first['run_id']}</span>" in page
    assert f"Followed up by <span class=\"mono\">{out['run_id']}</span>" in \
        report_html(state, first["run_id"])


async def test_a_follow_up_of_an_unknown_run_is_refused_like_get_run(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    script_team(provider)
    async with memory_client(tmp_path, team=team_file(provider, tmp_path)) as client:
        for ghost in ("r-20260101-000000-abcdef", "../../etc/passwd"):
            looked_up = await client.call_tool("get_run", {"run_id": ghost})
            followed = await call(client, task="Go on.", follow_up_of=ghost)
            assert looked_up.is_error and followed.is_error
            assert text_of(followed).split(":", 1)[1] == text_of(looked_up).split(":", 1)[1]
        assert (await client.call_tool("list_runs", {})).structured_content["runs"] == []
    assert not any(provider.requests_for(m) for m in ("a", "b", "c"))


def test_the_run_command_follows_up_the_latest_run(provider: ScriptedProvider,
                                                    tmp_path: Path) -> None:
    script_team(provider)
    team = team_file(provider, tmp_path)
    state = tmp_path / "state"

    def run(*args: str) -> dict[str, Any]:
        done = subprocess.run([EXE, "run", *args, "--team", str(team), "--json", "--quiet",
                               "--state-dir", str(state)], cwd=tmp_path, env=server_env(),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        data: dict[str, Any] = json.loads(done.stdout)
        return data

    first = run(FIRST_TASK)
    provider.reset()
    script_team(provider)
    second = run("And the retention?", "--follow-up", "latest")
    assert second["follow_up_of"] == first["run_id"]
    assert all(WINNING in r.last_user_text for r in provider.requests_for("b"))
    missing = subprocess.run([EXE, "run", "Go on.", "--team", str(team), "--follow-up",
                              "r-20260101-000000-abcdef", "--state-dir", str(state)],
                             cwd=tmp_path, env=server_env(), capture_output=True, text=True,
                             timeout=120)
    assert missing.returncode == 2 and "r-20260101-000000-abcdef" in missing.stderr
