"""Make docs/run-viewer.png: a scripted three-agent run, rendered by the viewer in Chromium.

    .venv/bin/python docs/screenshot.py    (needs /usr/bin/chromium and the test extras)
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from agents import has_answered, presenting  # noqa: E402
from scripted_provider import Reply, ScriptedProvider, ScriptRequest, answer, vote  # noqa: E402

from massgen_mcp.config.env import Environment  # noqa: E402
from massgen_mcp.config.load import team_from_data  # noqa: E402
from massgen_mcp.runs.engine import Engine  # noqa: E402
from massgen_mcp.runs.view.model import load_run_view  # noqa: E402
from massgen_mcp.runs.view.page import run_page  # noqa: E402

TASK = ("Our order pipeline drops messages when a consumer restarts. Which queue should we "
        "move to, and what must the migration get right?")
FINAL = """Move the order pipeline to **Redis Streams with consumer groups**.

- **Delivery**: at-least-once; pending entries survive a consumer restart and are claimed
  with `XAUTOCLAIM` after 30 s.
- **Idempotency**: key every order event by `order_id` + `version` so a replay is harmless.
- **Migration**: dual-write for a week, compare counts daily, then cut readers over.

| Option | Ops cost | Replay | Verdict |
|---|---|---|---|
| Redis Streams | low (already run) | yes | adopt |
| Kafka | high | yes | later, if volume grows 10x |
| RabbitMQ quorum queues | medium | no | no |
"""


def _script(first: str, second: str | None, target: str, reason: str):
    def script(req: ScriptRequest) -> Reply:
        if presenting(req):
            return answer(FINAL)
        if not has_answered(req):
            return answer(first)
        if second and second[-30:] not in req.last_user_text:
            return answer(second)
        return vote(target, reason)
    return script


async def main(out: Path, scheme: str = "light") -> None:
    with ScriptedProvider() as p, tempfile.TemporaryDirectory() as tmp:
        p.script("gpt-5", _script(
            "Redis Streams with consumer groups: pending entries survive restarts.",
            None, "agent2", "Names the restart failure mode and the exact recovery command."))
        p.script("claude-sonnet-4-5", _script(
            "Kafka: durable log, replay, consumer offsets.",
            "Redis Streams, since we already run Redis; Kafka only if volume grows 10x. Key "
            "events by order_id and version so replays are harmless.",
            "agent2", "Simplest option that fixes the bug; the idempotency point is mine."))
        p.script("gemini-2.5-pro", _script(
            "RabbitMQ quorum queues with publisher confirms.", None, "agent2",
            "Agree: fewer moving parts than Kafka and a real migration plan."))
        team = team_from_data({"agents": [
            {"id": aid, "backend": p.backend(wire, model, max_retries=0)}
            for aid, wire, model in (("planner", "openai", "gpt-5"),
                                     ("reviewer", "anthropic", "claude-sonnet-4-5"),
                                     ("operator", "gemini", "gemini-2.5-pro"))]},
            "queue-review.yaml", Environment({}))
        state = Path(tmp)
        prepared = Engine(state, Environment({})).prepare(team, TASK)
        await prepared.start()
        html = run_page(load_run_view(state, prepared.run_id), standalone=True)
        page_file = state / "run.html"
        page_file.write_text(html)
        from playwright.async_api import async_playwright

        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path="/usr/bin/chromium", args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"])
            page = await browser.new_page(viewport={"width": 1360, "height": 900},
                                          device_scale_factor=1,
                                          color_scheme=scheme)  # type: ignore[arg-type]
            await page.goto(page_file.as_uri())
            timeline = await page.locator("#timeline").bounding_box()
            height = int(timeline["y"]) + 40 if timeline else 1800
            clip = {"x": 0, "y": 0, "width": 1360, "height": height}
            await page.screenshot(path=str(out), full_page=True, clip=clip)  # type: ignore[arg-type]
            await browser.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "run-viewer.png",
                     *sys.argv[2:3]))
