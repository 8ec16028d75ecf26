"""Pages and reports are titled with the user's words (the task, a plan's goal, a checkpoint's
objective), not the prompt built from them; `/runs/latest` serves the newest run."""

from __future__ import annotations

import html
import re
from pathlib import Path

import httpx
import pytest
from agents import answer_then_vote
from helpers import make_team
from scripted_provider import ScriptedProvider
from test_modes import EXECUTOR_TOOLS, GOALS, GOOD, ckpt_plan, planner, reviewer

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.modes.checkpoint.store import init_session
from massgen_mcp.runs.view import report_html
from massgen_mcp.runs.view.web import viewer_app

GOAL = "Add SSO to the admin app"
OBJECTIVE = "deploy v2 to production"
TASK = "Which queue should we use?"


def heading(page: str) -> tuple[str, str]:
    """The page's <title> and <h1>, as text."""
    title = re.search(r"<title>(.*?)</title>", page, re.S)
    h1 = re.search(r'<h1 id="task">(.*?)</h1>', page, re.S)
    assert title and h1, page[:500]
    return html.unescape(title.group(1)), html.unescape(h1.group(1))


@pytest.fixture
async def runs(provider: ScriptedProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
         ) -> tuple[App, dict[str, str]]:
    """One run of each mode through `App`, as the server and the CLI start them."""
    monkeypatch.setenv("MASSGEN_MCP_KEY_FILE", str(tmp_path / "keys" / "plan.key"))
    app = App(tmp_path / "state", env=Environment({}), cwd=tmp_path)
    ids: dict[str, str] = {}
    provider.script("c1", answer_then_vote("Redis Streams", "agent1"))
    provider.script("c2", answer_then_vote("Kafka", "agent1"))
    team = make_team(provider, [("a", "openai", "c1"), ("b", "gemini", "c2")])
    run = app.consensus(team, TASK)
    ids["consensus"] = (await run.start()).run_id

    provider.script("p1", planner(GOOD))
    run = app.plan(make_team(provider, [("solo", "openai", "p1")]), GOAL)
    ids["plan"] = (await run.start()).run_id

    workspace = tmp_path / "project"
    workspace.mkdir()
    init_session(app.state, workspace, "ship v2", EXECUTOR_TOOLS)
    provider.script("r1", reviewer(ckpt_plan()))
    run, _ = app.checkpoint(make_team(provider, [("r", "openai", "r1")]),
                            objective=OBJECTIVE, action_goals=GOALS)
    result = await run.start()
    assert result.status == "completed", result.error
    ids["checkpoint"] = result.run_id
    return app, ids


async def test_reports_are_titled_with_the_users_words_and_keep_the_prompt(
        runs: tuple[App, dict[str, str]]) -> None:
    app, ids = runs
    expected = {"consensus": (TASK, "run"), "plan": (GOAL, "plan"),
                "checkpoint": (OBJECTIVE, "checkpoint")}
    for mode, (words, noun) in expected.items():
        page = report_html(app.state, ids[mode])
        title, h1 = heading(page)
        assert h1 == words, (mode, h1)
        assert title == f"{words} \u2014 massgen {noun}"
        prompt = re.search(r'<details id="prompt">(.*?)</details>', page, re.S)
        if mode == "consensus":
            assert prompt is None  # the task is the user's text: nothing else to show
        else:
            assert prompt, mode
            assert words in html.unescape(prompt.group(1))
    plan_prompt = report_html(app.state, ids["plan"]).split('<details id="prompt">', 1)[1]
    assert "Make an implementation plan for this goal" in plan_prompt
    checkpoint_page = report_html(app.state, ids["checkpoint"])
    assert "##" not in heading(checkpoint_page)[1]


async def test_the_runs_list_and_latest(runs: tuple[App, dict[str, str]]) -> None:
    app, ids = runs
    transport = httpx.ASGITransport(app=viewer_app(app.state))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        listing = (await client.get("/runs")).text
        for words in (TASK, GOAL, OBJECTIVE):
            assert html.escape(words) in listing
        assert "Make an implementation plan" not in listing

        latest = await client.get("/runs/latest")
        assert latest.status_code == 307
        assert latest.headers["location"] == f"/runs/{ids['checkpoint']}"
        page = await client.get("/runs/latest", follow_redirects=True)
        assert page.status_code == 200 and heading(page.text)[1] == OBJECTIVE
        part = await client.get("/runs/latest?part=main")
        assert part.headers["location"] == f"/runs/{ids['checkpoint']}?part=main"


async def test_latest_without_runs_says_so(tmp_path: Path) -> None:
    transport = httpx.ASGITransport(app=viewer_app(tmp_path / "empty"))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        missing = await client.get("/runs/latest")
    assert missing.status_code == 404 and "there are no runs" in missing.text
