"""Caps that fit the model (issue 31, item 3), through the real MCP client.

Local model servers (tests/model_servers.py: llama.cpp's /props, vLLM's /v1/models, Ollama's
/api/show, answered as the real servers answer them) say how much context they hold; the
default output cap never asks for more than half of it, and a cap the server cannot
generate inside one call's deadline is lowered. Each lowered cap is a note in the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp.types import TextContent
from mcp_harness import memory_client
from model_servers import LocalServer

TYPES = {"llama.cpp": "chatcompletion", "vllm": "vllm", "ollama": "ollama",
         "unknown": "chatcompletion"}
SOURCES = {"llama.cpp": "llama.cpp /props", "vllm": "vLLM /v1/models max_model_len",
           "ollama": "Ollama /api/show num_ctx"}


def team_on(server: LocalServer, tmp_path: Path, agents: int = 2,
            **orchestrator: Any) -> Path:
    data = {"agents": [{"id": f"local{i}", "backend": {
        "type": TYPES[server.kind], "model": server.model, "base_url": server.base_url,
        "api_key": "not-needed", "max_retries": 0}} for i in range(agents)],
        "orchestrator": {"early_stop": False, **orchestrator}}
    path = tmp_path / "local.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


async def call(tmp_path: Path, team: Path, tool: str, **arguments: Any) -> Any:
    async with memory_client(tmp_path, team=team) as client:
        return await client.call_tool(tool, arguments)


@pytest.mark.parametrize("kind", ["llama.cpp", "vllm", "ollama"])
async def test_the_cap_leaves_the_prompt_its_share_of_the_context(kind: str,
                                                                  tmp_path: Path) -> None:
    with LocalServer(kind, context=4096) as server:
        result = await call(tmp_path, team_on(server, tmp_path), "run_consensus",
                            task="What is the capital of France?")
    out = result.structured_content
    assert out["status"] == "completed", out
    assert server.caps and set(server.caps) == {2048}  # not the default 4,096
    notes = [n for n in out["notes"] if "output cap lowered" in n]
    assert len(notes) == 2 and all("from 4096 to 2048" in n and "4096 tokens" in n and
                                   SOURCES[kind] in n for n in notes)


async def test_a_plan_on_a_small_context_does_not_ask_for_16k(tmp_path: Path) -> None:
    # measured: plan on a 4,096-token local server asked for 16,384 completion tokens
    with LocalServer("llama.cpp", context=4096) as server:
        await call(tmp_path, team_on(server, tmp_path), "plan", goal="Ship a small web app.")
    assert server.caps and max(c or 0 for c in server.caps) == 2048


async def test_a_cap_the_server_cannot_generate_in_time_is_lowered(tmp_path: Path) -> None:
    # a slow server: about 100 tokens/s, and a 20 s deadline per call
    with LocalServer("llama.cpp", context=32768, tokens_per_second=100) as server:
        result = await call(tmp_path, team_on(server, tmp_path, call_timeout_seconds=20),
                            "run_consensus", task="What is the capital of France?")
    out = result.structured_content
    assert out["status"] == "completed", out
    caps = {c or 0 for c in server.caps}
    assert len(caps) == 1 and MIN_FITTED <= caps.pop() <= 100 * 20 * 0.8
    note = next(n for n in out["notes"] if "tokens/s" in n)
    assert "from 4096 to" in note and "20s deadline" in note
    assert "completion" in server.probes  # one timed completion measured the speed


MIN_FITTED = 256


async def test_a_team_files_own_max_tokens_and_silent_servers_are_left_alone(
        tmp_path: Path) -> None:
    with LocalServer("llama.cpp", context=4096) as server:
        team = team_on(server, tmp_path)
        data = yaml.safe_load(team.read_text())
        data["agents"][0]["backend"]["max_tokens"] = 3000
        team.write_text(yaml.safe_dump(data))
        result = await call(tmp_path, team, "run_consensus", task="Capital of France?")
    assert 3000 in server.caps and 2048 in server.caps
    # a server that says nothing about itself (no /props, no max_model_len, no /api/show)
    with LocalServer("unknown", context=None) as quiet:
        result = await call(tmp_path, team_on(quiet, tmp_path), "run_consensus",
                            task="Capital of France?")
    # (fast enough for the default cap: its speed was measured, nothing lowered)
    assert set(quiet.caps) == {4096} and "completion" in quiet.probes
    text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
    assert "output cap lowered" not in text
