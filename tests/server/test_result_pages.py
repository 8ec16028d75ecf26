"""A run's record bigger than what an MCP client takes in one HTTP message is still readable:
the shortened result's link leads to an index, and the pages add up to the whole record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import ResourceLink
from mcp_harness import http_server

from massgen_mcp.coordination.result import AnswerInfo, RunResult, WinnerInfo
from massgen_mcp.server.result_pages import PAGE_CHARS

RUN = "run_20261130T183300Z_b2c3d4"


def _big_run(state: Path) -> RunResult:
    """A finished run whose record is ~2.4 MB (three long answers, some non-ASCII, some
    characters JSON must escape)."""
    text = ("Kafka is the queue. ü \"quoted\" \\ ☃ \u0001\n" * 20_000)
    result = RunResult(
        run_id=RUN, status="completed", task="Which queue?", final_answer=text,
        winner=WinnerInfo(agent_id="a", model="m", label="agent1.1", votes=2),
        tally={"a": 2},
        answers=[AnswerInfo(label=f"agent{i}.1", agent_id=a, model="m", text=text)
                 for i, a in enumerate("ab", 1)],
        log_dir=str(state / "runs" / RUN))
    run = state / "runs" / RUN
    run.mkdir(parents=True)
    (run / "result.json").write_text(result.model_dump_json())
    (run / "meta.json").write_text(json.dumps({"task": "Which queue?", "mode": "consensus"}))
    (run / "events.jsonl").write_text("".join(
        json.dumps({"seq": i, "kind": "answer", "text": "x" * 1000}) + "\n"
        for i in range(1, 2001)))
    return result


async def _text(client: Client, uri: str) -> str:
    got = await client.read_resource(uri)
    content = got.contents[0]
    assert hasattr(content, "text")
    text: str = content.text
    return text


async def _whole(client: Client, index: dict[str, Any]) -> str:
    assert index["paged"] is True and index["page_chars"] == PAGE_CHARS
    parts = [await _text(client, uri) for uri in index["pages"]]
    assert all(len(p) <= PAGE_CHARS for p in parts)
    return "".join(parts)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_record_past_one_mib_is_read_in_pages_over_http(tmp_path: Path,
                                                                mode: str) -> None:
    """`legacy` (protocol 2025-11-25) answers over SSE, whose events the SDK client reads up
    to 1 MiB: reading the whole record there failed."""
    result = _big_run(tmp_path / ".massgen")
    with http_server(tmp_path) as server:
        async with Client(server.url, mode=mode) as client:
            r = await client.call_tool("get_run", {"run_id": RUN})
            assert not r.is_error
            links = [str(c.uri) for c in r.content if isinstance(c, ResourceLink)]
            assert f"massgen://runs/{RUN}" in links
            index = json.loads(await _text(client, f"massgen://runs/{RUN}"))
            assert index["chars"] > 1024 * 1024
            whole = json.loads(await _whole(client, index))
            assert whole["final_answer"] == result.final_answer
            assert [a["text"] for a in whole["answers"]] == [a.text for a in result.answers]
            events = json.loads(await _text(client, f"massgen://runs/{RUN}/events"))
            lines = (await _whole(client, events)).splitlines()
            assert len(lines) == 2000 and json.loads(lines[-1])["seq"] == 2000


@pytest.mark.parametrize("page", ["999", "-1", "x", "٣", "1" * 30])
async def test_pages_that_do_not_exist_are_resource_errors(tmp_path: Path, page: str) -> None:
    _big_run(tmp_path / ".massgen")
    with http_server(tmp_path) as server:
        async with Client(server.url, mode="legacy") as client:
            with pytest.raises(Exception, match=r"page|not found|Unknown"):
                await client.read_resource(f"massgen://runs/{RUN}/pages/{page}")
            assert await _text(client, f"massgen://runs/{RUN}/pages/0")  # still serving


async def test_small_records_are_served_whole(tmp_path: Path) -> None:
    run = tmp_path / ".massgen" / "runs" / RUN
    run.mkdir(parents=True)
    (run / "result.json").write_text(RunResult(run_id=RUN, status="completed", task="t",
                                               final_answer="short").model_dump_json())
    with http_server(tmp_path) as server:
        async with Client(server.url) as client:
            record = json.loads(await _text(client, f"massgen://runs/{RUN}"))
            assert record["final_answer"] == "short" and "paged" not in record
