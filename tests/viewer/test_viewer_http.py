"""The HTTP transport's /runs pages in headless Chromium: behind the token, live too."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest
from agents import has_answered, presenting
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_harness import http_server, write_team
from scripted_provider import Reply, ScriptRequest, answer, vote
from viewer_harness import browser_fixture  # noqa: F401  (the `browser` fixture)

pytestmark = pytest.mark.chromium


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
    # The teams are files in a --team-dir, the way an operator lets tool calls name them.
    with http_server(tmp_path, "--token", token, "--team-dir", str(tmp_path)) as server:
        root = server.url.rsplit("/mcp", 1)[0]
        import httpx2

        # a long read timeout: the first run imports the provider SDKs, slow on a busy machine
        client = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=120)
        async with Client(streamable_http_client(server.url, http_client=client),
                          mode="legacy") as c:
            done = await c.call_tool("run_consensus", {"task": "first", "team": str(first_team)})
            first = done.structured_content["run_id"]
            hint = done.content[0].text.splitlines()[-1]  # type: ignore[union-attr]
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
            assert await page.locator(".vote:not(.old) .reason",
                                        has_text="slow but right").count() == 1
    assert not any(token in line for line in server.stderr)
