"""The run viewer as an MCP App, rendered in headless Chromium inside a minimal host page
that speaks the Apps protocol (JSON-RPC over postMessage) and forwards the app's requests to
the real server through the SDK's client. The app must show the run live, escape what the
run record holds exactly as the report does, and make no outside request."""

from __future__ import annotations

import asyncio
import html
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from agents import has_answered, presenting
from mcp.types import TextResourceContents
from mcp_harness import memory_client, write_team
from scripted_provider import Reply, ScriptedProvider, ScriptRequest, answer, vote
from tiers import require
from viewer_harness import CHROMIUM, browser_fixture  # noqa: F401  (the fixture)

from massgen_mcp.server.apps import APP_URI

HOSTILE = '<img src=x onerror="window.pwned=1">Which queue?'
FINAL = "FINAL: **SQS** is simplest, with a dead-letter queue"  # keeps the winning answer

HOST = """<!doctype html><html><body><iframe id="app" sandbox="allow-scripts"
 style="width:1200px;height:900px" srcdoc="{srcdoc}"></iframe><script>
const toolResult = {result};
const frame = document.getElementById("app");
window.hostLog = [];
function send(message) {{ frame.contentWindow.postMessage(message, "*"); }}
window.addEventListener("message", async (event) => {{
  if (event.source !== frame.contentWindow) return;
  const m = event.data;
  window.hostLog.push(m.method || "response");
  if (m.method === "ui/initialize") {{
    send({{jsonrpc: "2.0", id: m.id, result: {{protocolVersion: "2026-01-26",
      hostInfo: {{name: "test-host", version: "1"}}, hostCapabilities: {{}},
      hostContext: {{}}}}}});
  }} else if (m.method === "ui/notifications/initialized") {{
    send({{jsonrpc: "2.0", method: "ui/notifications/tool-result", params: toolResult}});
  }} else if (m.method && m.id !== undefined) {{
    try {{ send({{jsonrpc: "2.0", id: m.id, result: await window.mcpBridge(m.method,
                                                                             m.params)}}); }}
    catch (e) {{ send({{jsonrpc: "2.0", id: m.id, error: {{code: -32603,
                                                          message: String(e)}}}}); }}
  }}
}});
</script></body></html>"""


def gated(text: str, gate: threading.Event) -> Any:
    async def script(req: ScriptRequest) -> Reply:
        if presenting(req):
            return answer(FINAL)
        if not has_answered(req):
            if "t-b" in req.model:
                await asyncio.to_thread(gate.wait, 60)
            return answer(text)
        return vote("agent1", "agent1 is right")

    return script


@pytest.mark.chromium
async def test_the_app_shows_the_run_live_escaped_and_offline(
        provider: ScriptedProvider, tmp_path: Path, browser: Any) -> None:
    require("chromium", Path(CHROMIUM).exists())
    gate = threading.Event()
    provider.script("t-a", gated("SQS is simplest", gate))
    provider.script("t-b", gated("Kafka scales", gate))
    team = write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "t-a"), ("b", "openai", "t-b")])
    async with memory_client(tmp_path, team=team) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert (listed["run_consensus"].meta or {})["ui"] == {"resourceUri": APP_URI}
        shell = await client.read_resource(APP_URI)
        content = shell.contents[0]
        assert content.mime_type == "text/html;profile=mcp-app"
        assert isinstance(content, TextResourceContents)
        started = await client.call_tool("run_consensus", {"task": HOSTILE, "wait": False})
        assert started.structured_content["app_resource"] == APP_URI

        async def bridge(method: str, params: dict[str, Any]) -> Any:
            if method != "resources/read":
                raise ValueError(f"the test host does not forward {method}")
            read = await client.read_resource(params["uri"])
            return read.model_dump(by_alias=True, mode="json", exclude_none=True)

        outside: list[str] = []

        async def refuse(route: Any) -> None:
            outside.append(route.request.url)
            await route.abort()

        await browser.route("**/*", refuse)
        page = await browser.new_page()
        await page.expose_function("mcpBridge", bridge)
        result = json.dumps(started.model_dump(by_alias=True, mode="json",
                                               exclude_none=True)).replace("</", "<\\/")
        await page.set_content(HOST.format(srcdoc=html.escape(content.text, quote=True),
                                           result=result))
        app = page.frame_locator("#app")
        # Live: a has answered, b is still working.
        await app.locator('[data-state="live"]').wait_for()
        await app.locator("#agents").get_by_text("SQS is simplest").wait_for()
        assert await app.locator("#final-answer").count() == 0
        gate.set()
        # Then the end: the winner's final answer, rendered as the report renders it.
        await app.locator('[data-state="done"]').wait_for()
        final = app.locator("#final-answer")
        await final.get_by_text("SQS", exact=True).wait_for()
        assert await final.locator("strong").count() == 1  # the answer's Markdown
        body = await app.locator("body").inner_text()
        assert "Kafka scales" in body and HOSTILE in body  # the task, as text
        frame = page.frames[1]
        assert await frame.evaluate("typeof window.pwned") == "undefined"
        assert await frame.evaluate("document.querySelectorAll('img').length") == 0
        log = await page.evaluate("window.hostLog")
        assert log[:2] == ["ui/initialize", "ui/notifications/initialized"]
        assert "resources/read" in log
        assert outside == []
        await page.close()


@pytest.mark.parametrize("uri", ["massgen://runs/run_20261130T183300Z_a1b2c3/view"])
async def test_the_view_of_an_unknown_run_is_not_found(tmp_path: Path, uri: str) -> None:
    from mcp.shared.exceptions import MCPError

    async with memory_client(tmp_path) as client:
        with pytest.raises(MCPError):
            await client.read_resource(uri)
