"""The run viewer as a person uses it: pages in headless Chromium (Debian's `chromium`,
driven by Playwright), for a recorded run, a live scripted run, the report file and the HTTP
transport's /runs behind its token."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from agents import has_answered, presenting
from helpers import make_team
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_harness import EXE, http_server, server_env, write_team
from scripted_provider import Call, Reply, ScriptRequest, ToolCalls, answer, vote

from massgen_mcp.config.env import Environment
from massgen_mcp.runs.engine import Engine
from massgen_mcp.runs.view import report_html
from massgen_mcp.runs.view.markdown import render_markdown

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT_MS = 20_000
MARKDOWN_TAGS = {"p", "br", "h3", "h4", "h5", "h6", "ul", "ol", "li", "pre", "code", "em",
                 "strong", "del", "a", "blockquote", "hr", "div", "table", "thead", "tbody",
                 "tr", "th", "td"}
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
FINAL = ("# Use Redis Streams\n\nConsumer groups give **at-least-once** delivery.\n\n"
         "| Option | p99 |\n|---|---:|\n| Redis | 2 ms |\n| Kafka | 9 ms |\n\n"
         f"- see [the docs](https://redis.io/docs/)\n- [not a link](javascript:alert(1))\n\n"
         f"{HOSTILE}")


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    """Chromium with a fresh profile (Playwright gives every launch a new --user-data-dir);
    the machine has no internet, and these flags keep Chromium from trying."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (bash .ci/viewer-setup.sh)")
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        chromium = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        context = await chromium.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(WAIT_MS)
        try:
            yield context
        finally:
            await chromium.close()


@contextmanager
def viewer(state: Path, *args: str) -> Iterator[str]:
    """`massgen-mcp view --no-open` on a free port; yields the URL it prints."""
    proc = subprocess.Popen([EXE, "view", "--no-open", "--state-dir", str(state), *args],
                            env=server_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        seen = []
        while True:
            line = lines.get(timeout=30)
            if line is None:
                raise RuntimeError("viewer did not start:\n" + "".join(seen))
            seen.append(line)
            if " at http://" in line:
                yield line.split(" at ", 1)[1].split(" ", 1)[0]
                break
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
        assert proc.stdout is not None
        assert proc.stdout.read() == "", "the viewer wrote to stdout"


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
                                ("carol", "gemini", "v-carol")])
    prepared = Engine(state, Environment({})).prepare_run(team, "Which queue should we use?")
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
        assert "3/3 votes" in await page.locator("#outcome").inner_text()

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
        assert await page.locator(".vote .reason", has_text="fewer moving parts").is_visible()
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
    prepared = Engine(state, Environment({})).prepare_run(team, "Pick a design")
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
            await page.locator(".vote .reason", has_text="beta covers the failure cases") \
                .wait_for()
            await page.locator("#status", has_text="completed").wait_for()
            assert await page.locator("#winner").inner_text() == "bob"
            assert await page.locator("[data-live]").count() == 0
            assert "FINAL: beta, with retries" in await page.locator("#final-answer").inner_text()
            assert await page.evaluate("window.__same_page") is True  # updated, not reloaded
    finally:
        gate.set()
        result = await asyncio.wait_for(running, 30)
    assert result.status == "completed"


async def test_the_http_transport_serves_runs_behind_its_token_live_too(
        provider, tmp_path: Path, browser: Any) -> None:
    gate = threading.Event()

    async def slow(req: ScriptRequest) -> Reply:
        if presenting(req):
            return answer("FINAL from the slow agent")
        if not has_answered(req):
            await asyncio.to_thread(gate.wait, 30)
            return answer("slow answer")
        return vote("agent2", "slow but right")

    def quick(req: ScriptRequest) -> Reply:
        if presenting(req):
            return answer("FINAL from the quick agent")
        if not has_answered(req):
            return answer("quick answer")
        return vote(req.tool_enum("vote", "agent_id")[-1], "the other one is better")

    provider.script("t-quick", quick)
    provider.script("t-slow", slow)
    provider.script("t-other", quick)
    first_team = write_team(tmp_path / "first.yaml", provider,
                            [("a", "openai", "t-quick"), ("b", "gemini", "t-other")])
    gated_team = write_team(tmp_path / "gated.yaml", provider,
                            [("quick", "openai", "t-quick"), ("slow", "anthropic", "t-slow")])
    token = "viewer-token-for-tests"
    with http_server(tmp_path, "--token", token) as server:
        root = server.url.rsplit("/mcp", 1)[0]
        import httpx2

        # a long read timeout: the first run imports the provider SDKs, slow on a busy machine
        client = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=120)
        async with Client(streamable_http_client(server.url, http_client=client),
                          mode="legacy") as c:
            done = await c.call_tool("run_consensus", {"task": "first", "team": str(first_team)})
            first = done.structured_content["run_id"]
            hint = done.content[-1].text.splitlines()[-1]  # type: ignore[union-attr]
            assert hint.startswith("— Watch: http://127.0.0.1:") and first in hint
            started = await c.call_tool("run_consensus", {"task": "second", "wait": False,
                                                          "team": str(gated_team)})
            live = started.structured_content["run_id"]

            async with httpx.AsyncClient() as raw:
                denied = await raw.get(f"{root}/runs/{first}")
                assert denied.status_code == 401 and "?token=" in denied.text
                assert token not in denied.text
                ok = await raw.get(f"{root}/runs", headers={"authorization": f"Bearer {token}"})
                assert ok.status_code == 200 and first in ok.text
                assert "script-src 'nonce-" in ok.headers["content-security-policy"]
                rebound = await raw.get(f"{root}/runs", headers={
                    "authorization": f"Bearer {token}", "host": "evil.example:80"})
                assert rebound.status_code == 421
                missing = await raw.get(f"{root}/runs/run_20260101T000000Z_abcdef",
                                        headers={"authorization": f"Bearer {token}"})
                assert missing.status_code == 404 and "no run" in missing.text

            page = await browser.new_page()
            await page.goto(f"{root}/runs?token={token}")
            assert token not in page.url  # swapped for a cookie
            links = await page.locator("#runs tbody a").evaluate_all(
                "links => links.map(a => a.getAttribute('href'))")
            assert links == [f"/runs/{live}", f"/runs/{first}"]  # newest first
            assert "live" in await page.locator("#runs tbody tr").first.inner_text()
            await page.click(f'a[href="/runs/{live}"]')
            await page.locator('article[data-agent="quick"] .version').wait_for()
            assert await page.locator("[data-live]").count() == 1
            assert "thinking" in await page.locator('article[data-agent="slow"] .now') \
                .inner_text()
            gate.set()
            await page.locator("#status", has_text="completed").wait_for()
            assert await page.locator("#winner").inner_text() == "slow"
            assert await page.locator(".vote .reason", has_text="slow but right").count() == 1
    assert not any(token in line for line in server.stderr)


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
    prepared = Engine(state, Environment({})).prepare_run(team, "Ship v2", mode=mode,
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


@pytest.mark.parametrize("hostile", [
    "<script>alert(1)</script>", '<img src=x onerror="alert(1)">', "[x](javascript:alert(1))",
    "[x](https://a.example/\" onmouseover=\"alert(1))", "```\n</code><script>x</script>\n```",
    "`<b>`", "**<i>bold</i>**", "<a href='javascript:alert(1)'>x</a>", "# <svg/onload=alert(1)>",
    "| <script> | b |\n|---|---|\n| c | <iframe> |", "- <style>*{}</style>\n  - nested",
    "> <script>quote</script>", "![img](https://a.example/x.png)", "&lt;script&gt;",
])
def test_markdown_keeps_model_output_as_text(hostile: str) -> None:
    """Only the renderer's own tags and attributes come out, and links are http(s) only."""
    from html.parser import HTMLParser

    found: list[tuple[str, list[tuple[str, str | None]]]] = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, attrs))

    Tags().feed(render_markdown(hostile))
    for tag, attrs in found:
        assert tag in MARKDOWN_TAGS, (hostile, tag)
        for name, value in attrs:
            assert name in ("href", "rel", "class", "start"), (hostile, name)
            if name == "href":
                assert (value or "").startswith(("https://", "http://")), (hostile, value)
                assert '"' not in (value or ""), (hostile, value)


def test_markdown_renders_the_common_subset() -> None:
    html = render_markdown("## Plan\n\n1. first *step*\n2. `code` and ~~old~~\n   - nested\n\n"
                           "```python\nprint('<hi>')\n```\n\n> quoted\n\n---\nplain https://x.example/a")
    assert "<h4>Plan</h4>" in html
    assert "<ol><li>first <em>step</em></li><li><code>code</code> and <del>old</del>" in html
    assert "<ul><li>nested</li></ul>" in html
    assert '<pre><code class="lang-python">print(&#x27;&lt;hi&gt;&#x27;)</code></pre>' in html
    assert "<blockquote><p>quoted</p></blockquote>" in html and "<hr>" in html
    assert '<a href="https://x.example/a" rel="noopener noreferrer nofollow">' in html

