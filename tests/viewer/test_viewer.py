"""The run viewer as a person uses it: pages in headless Chromium (Debian's `chromium`,
driven by Playwright), for a recorded run, a live scripted run, plan and checkpoint runs and
the report file. The HTTP transport's /runs is in test_viewer_http.py."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from agents import has_answered, presenting
from helpers import make_team
from mcp_harness import EXE, server_env
from scripted_provider import Call, Reply, ScriptRequest, ToolCalls, answer, vote
from viewer_harness import browser_fixture, viewer  # noqa: F401  (browser_fixture: `browser`)

from massgen_mcp.config.env import Environment
from massgen_mcp.runs.engine import Engine
from massgen_mcp.runs.view import report_html

HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
FINAL = ("# Use Redis Streams\n\nConsumer groups give **at-least-once** delivery.\n\n"
         "| Option | p99 |\n|---|---:|\n| Redis | 2 ms |\n| Kafka | 9 ms |\n\n"
         f"- see [the docs](https://redis.io/docs/)\n- [not a link](javascript:alert(1))\n\n"
         f"{HOSTILE}")


def _events(state: Path, run_id: str) -> list[dict[str, Any]]:
    path = state / "runs" / run_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _alice(req: ScriptRequest) -> Reply:
    if presenting(req):
        return answer(FINAL)
    if not has_answered(req):
        return answer(f"Redis Streams. {HOSTILE}")
    return vote("agent1", "alice names the delivery guarantee")


def _bob(req: ScriptRequest) -> Reply:
    if not has_answered(req):
        return answer("Kafka, for durability.")
    if "idempotent" not in req.last_user_text:
        return answer("Kafka with idempotent producers, for durability and ordering.")
    return vote("agent1", "redis is simpler to operate <b onmouseover=alert(1)>here</b>")


def _carol(req: ScriptRequest) -> Reply:
    if not has_answered(req):
        return answer("RabbitMQ quorum queues.")
    return vote("agent1", "carol agrees: fewer moving parts")


async def _recorded_run(provider: Any, state: Path) -> str:
    provider.script("v-alice", _alice)
    provider.script("v-bob", _bob)
    provider.script("v-carol", _carol)
    team = make_team(provider, [("alice", "openai", "v-alice"), ("bob", "anthropic", "v-bob"),
                                ("carol", "gemini", "v-carol")], early_stop=False)
    prepared = Engine(state, Environment({})).prepare(team, "Which queue should we use?")
    result = await prepared.start()
    assert result.status == "completed" and result.winner and result.winner.agent_id == "alice"
    return prepared.run_id


async def test_a_finished_run_shows_columns_votes_winner_and_escaped_answers(
        provider, tmp_path: Path, browser: Any) -> None:
    state = tmp_path / "state"
    run_id = await _recorded_run(provider, state)
    with viewer(state) as url:
        page = await browser.new_page()
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        await page.goto(url)  # the list of runs
        await page.click(f'a[href="/runs/{run_id}"]')
        await page.wait_for_url(f"**/runs/{run_id}")

        columns = page.locator("article.agent")
        assert await columns.count() == 3
        for agent, model in (("alice", "v-alice"), ("bob", "v-bob"), ("carol", "v-carol")):
            column = page.locator(f'article[data-agent="{agent}"]')
            assert model in await column.locator(".model").inner_text()
            assert "calls" in await column.locator(".usage").inner_text()
        assert await page.locator("#winner").inner_text() == "alice"
        assert "winner" in (await page.locator('article[data-agent="alice"]')
                            .get_attribute("class") or "")
        assert "3 of 3 votes cast" in await page.locator("#outcome").inner_text()

        bob = page.locator('article[data-agent="bob"]')
        assert await bob.locator(".version").count() == 2  # both answer versions, in order
        restarts = [e for e in _events(state, run_id) if e["kind"] == "restart"]
        assert restarts  # the last of four answers always finds others to restart
        shown = page.locator(".restart")
        assert await shown.count() == sum(len(e["agents"]) for e in restarts)
        first = restarts[0]
        column = page.locator(f'article[data-agent="{first["agents"][0]}"] .restart').first
        assert f"{first['cause']} submitted" in await column.inner_text()
        await bob.locator("summary", has_text="What changed").click()
        assert "idempotent" in await bob.locator(".diff ins").first.inner_text()
        reasons = await page.locator(".vote .reason").all_inner_texts()
        assert "alice names the delivery guarantee" in reasons
        assert "carol agrees: fewer moving parts" in reasons
        assert "redis is simpler to operate <b onmouseover=alert(1)>here</b>" in reasons

        final = page.locator("#final-answer")
        assert await final.locator("h3", has_text="Use Redis Streams").count() == 1
        assert await final.locator("strong", has_text="at-least-once").count() == 1
        assert await final.locator("td", has_text="9 ms").count() == 1
        assert await final.locator('a[href="https://redis.io/docs/"]').count() == 1
        assert await final.locator("a", has_text="not a link").count() == 0
        assert "<script>window.__pwned = 1</script>" in await final.inner_text()
        assert await page.locator("#run script, #run img").count() == 0
        assert await page.evaluate("typeof window.__pwned") == "undefined"

        assert await page.locator("#timeline tr").count() == len(_events(state, run_id))
        assert await page.locator("script").count() == 0  # a finished run needs no script
        assert all(u.startswith(url.split("/runs")[0]) for u in requests), requests


async def test_without_javascript_a_finished_run_reads_the_same(provider, tmp_path: Path,
                                                                browser: Any) -> None:
    state = tmp_path / "state"
    run_id = await _recorded_run(provider, state)
    with viewer(state, run_id) as url:
        assert url.endswith(f"/runs/{run_id}")
        context = await browser.browser.new_context(java_script_enabled=False)
        page = await context.new_page()
        await page.goto(url)
        assert await page.locator("#winner").inner_text() == "alice"
        assert await page.locator("article.agent").count() == 3
        assert await page.locator(".vote:not(.old) .reason",
                                    has_text="fewer moving parts").is_visible()
        assert await page.locator("#final-answer h3").is_visible()
        # the newest version of every answer is open without a script
        assert await page.locator('article[data-agent="bob"] details[open] .body').is_visible()


async def test_the_report_is_one_file_without_scripts_or_fetches(provider, tmp_path: Path,
                                                                 browser: Any) -> None:
    state = tmp_path / "state"
    run_id = await _recorded_run(provider, state)
    out = tmp_path / "run.html"
    done = subprocess.run([EXE, "report", "latest", "-o", str(out), "--state-dir", str(state)],
                          env=server_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    html = out.read_text()
    assert run_id in html and "<script" not in html.replace("&lt;script", "")
    assert "http-equiv=\"Content-Security-Policy\"" in html
    page = await browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    await page.goto(out.as_uri())
    assert requests == [out.as_uri()]
    assert await page.locator("#winner").inner_text() == "alice"
    assert await page.evaluate("typeof window.__pwned") == "undefined"

    bad = subprocess.run([EXE, "report", "run_nope", "--state-dir", str(state)],
                         env=server_env(), capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "is not a run id" in bad.stderr


async def test_a_live_run_updates_the_page_while_it_moves(provider, tmp_path: Path,
                                                          browser: Any) -> None:
    gate = threading.Event()

    def alice(req: ScriptRequest) -> Reply:
        if presenting(req):
            return answer("FINAL: beta wins")
        if not has_answered(req):
            return answer("alpha answer")
        return vote(req.tool_enum("vote", "agent_id")[-1], "the newest answer is better")

    async def bob(req: ScriptRequest) -> Reply:
        if presenting(req):
            return answer("FINAL: beta, with retries")
        if not has_answered(req):
            await asyncio.to_thread(gate.wait, 30)
            return answer("beta answer")
        return vote("agent2", "beta covers the failure cases")

    provider.script("l-alice", alice)
    provider.script("l-bob", bob)
    team = make_team(provider, [("alice", "openai", "l-alice"), ("bob", "anthropic", "l-bob")])
    state = tmp_path / "state"
    prepared = Engine(state, Environment({})).prepare(team, "Pick a design")
    running = asyncio.create_task(prepared.start())
    try:
        with viewer(state, "latest") as url:
            assert url.endswith(prepared.run_id)
            page = await browser.new_page()
            await page.goto(url)
            await page.evaluate("window.__same_page = true")
            await page.wait_for_selector('article[data-agent="alice"] .version')
            assert await page.locator("[data-live]").count() == 1
            working = page.locator('article[data-agent="bob"] .now')
            assert "thinking" in await working.inner_text()
            assert "bob" in await page.locator("#working").inner_text()
            assert await page.locator('article[data-agent="bob"] .version').count() == 0

            gate.set()
            await page.wait_for_selector('article[data-agent="bob"] .version')
            await page.locator(".vote:not(.old) .reason",
                               has_text="beta covers the failure cases").first.wait_for()
            await page.locator("#status", has_text="completed").wait_for()
            assert await page.locator("#winner").inner_text() == "bob"
            assert await page.locator("[data-live]").count() == 0
            assert "FINAL: beta, with retries" in await page.locator("#final-answer").inner_text()
            assert await page.evaluate("window.__same_page") is True  # updated, not reloaded
    finally:
        gate.set()
        result = await asyncio.wait_for(running, 30)
    assert result.status == "completed"

def _task(tid: str, chunk: str, deps: list[str]) -> dict[str, Any]:
    return {"id": tid, "chunk": chunk, "description": f"Do {tid}.", "depends_on": deps,
            "priority": "medium", "task_type": "deterministic",
            "success_criteria": [f"{tid} works"], "verification": f"pytest -k {tid}"}


PLAN = {"summary": "Design, build, ship.", "tasks": [
    _task("design", "design", []), _task("schema", "build", ["design"]),
    _task("api", "build", ["schema"]), _task("ui", "build", ["schema"]),
    _task("docs", "ship", ["api", "ui"])]}
STEPS = {"steps": [
    {"step": 1, "kind": "verify", "description": "Staging is healthy", "preconditions": [],
     "touches": [], "recovery": "terminate"},
    {"step": 2, "kind": "action", "description": "Deploy v2 to prod",
     "preconditions": ["step:1.proceed"], "touches": ["prod"], "recovery": "recheckpoint",
     "approved_action": {"goal_id": "deploy", "tool": "Bash",
                         "args": {"command": "deploy --env prod --version v2"},
                         "rollback": {"tool": "Bash",
                                      "args": {"command": "deploy --env prod --version v1"}}}}]}


@pytest.mark.parametrize("mode", ["plan", "checkpoint"])
async def test_plan_and_checkpoint_runs_show_their_structure(provider, tmp_path: Path,
                                                             browser: Any, mode: str) -> None:
    from massgen_mcp.modes.checkpoint.answer_format import CheckpointAnswerFormat
    from massgen_mcp.modes.planning.answer_format import PlanAnswerFormat

    payload = PLAN if mode == "plan" else STEPS

    def reviewer(req: ScriptRequest) -> Reply:
        if presenting(req) or not has_answered(req):
            return ToolCalls([Call("new_answer", {"plan": payload})])
        return vote("agent1", "complete and in order")

    provider.script(f"{mode}-1", reviewer)
    provider.script(f"{mode}-2", reviewer)
    team = make_team(provider, [("r1", "openai", f"{mode}-1"), ("r2", "gemini", f"{mode}-2")])
    fmt = (PlanAnswerFormat("dynamic") if mode == "plan"
           else CheckpointAnswerFormat(["Bash"], [{"id": "deploy", "description": "ship v2"}]))
    state = tmp_path / "state"
    prepared = Engine(state, Environment({})).prepare(team, "Ship v2", mode=mode,
                                                          answer_format=fmt)
    assert (await prepared.start()).status == "completed"
    out = tmp_path / "report.html"
    out.write_text(report_html(state, prepared.run_id))
    page = await browser.new_page()
    await page.goto(out.as_uri())
    if mode == "plan":
        assert await page.locator("#plan .chunk h3").all_inner_texts() == [
            "design", "build", "ship"]
        level_of = "el => el.closest('.level').querySelector('.level-n').textContent"
        levels = {t: await page.locator(f'[data-task="{t}"]').evaluate(level_of)
                  for t in ("design", "api", "ui", "docs")}
        assert levels == {"design": "level 1", "api": "level 3", "ui": "level 3",
                          "docs": "level 4"}
        assert "after api, ui" in await page.locator('[data-task="docs"]').inner_text()
    else:
        steps = page.locator("#steps li")
        assert await steps.count() == 2
        action = await steps.nth(1).inner_text()
        assert "Bash: deploy --env prod --version v2" in action
        assert "rollback: Bash: deploy --env prod --version v1" in action


def test_view_explains_a_missing_run(tmp_path: Path) -> None:
    done = subprocess.run([EXE, "view", "latest", "--no-open", "--state-dir", str(tmp_path)],
                          env=server_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "no runs" in done.stderr
