"""The server through the official Node MCP clients: the Inspector CLI and the TypeScript SDK.

The clients come from npm (`tests/js`, installed by `.ci/npm-setup.sh`) and run on the
Node 22 binary of the `node` npm package: its `.bin` directory goes first on PATH, so the
clients' `#!/usr/bin/env node` picks it, as `npx --prefix tests/js` would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from agents import answer_then_vote
from mcp_harness import EXE, server_env, write_team
from tiers import require_node_bin

pytestmark = pytest.mark.npm

JS = Path(__file__).parents[1] / "js"
BIN = JS / "node_modules" / ".bin"
TOOLS = {"run_consensus", "get_run", "list_runs", "cancel_run", "list_backends", "plan",
         "checkpoint_init", "checkpoint"}



@pytest.fixture(autouse=True)
def _npm_tier() -> None:
    """The npm tier (skips locally without it, fails under CI)."""
    for name in ("node", "mcp-inspector"):
        require_node_bin(name)


def node_env() -> dict[str, str]:
    """The server's clean environment (no provider keys), with the npm Node 22 first on PATH."""
    env = server_env()
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def run_node(args: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=node_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (f"{args[0]} exited {proc.returncode}\n--- stdout\n"
                                  f"{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}")
    return proc


def inspector(cwd: Path, *args: str) -> Any:
    """`mcp-inspector --cli massgen-mcp <args>` (stdio), parsed from its JSON stdout."""
    proc = run_node([str(BIN / "mcp-inspector"), "--cli", "--cwd", str(cwd), EXE, *args], cwd)
    return json.loads(proc.stdout)


def test_node_is_22() -> None:
    out = run_node([str(BIN / "node"), "--version"], JS).stdout
    assert out.startswith("v22."), out


def test_inspector_lists_the_tools(tmp_path: Path) -> None:
    listed = inspector(tmp_path, "--method", "tools/list")
    tools = {t["name"]: t for t in listed["tools"]}
    assert set(tools) >= TOOLS
    assert tools["run_consensus"]["inputSchema"]["required"] == ["task"]
    assert "final_answer" in tools["run_consensus"]["outputSchema"]["properties"]


def test_inspector_calls_run_consensus(provider, tmp_path: Path) -> None:
    for model in ("n-a", "n-b", "n-c"):
        provider.script(model, answer_then_vote(f"answer {model}", "agent2",
                                                final="FINAL: from the inspector"))
    # One wire format: each provider SDK costs seconds to import in a fresh server, and the
    # three wires are covered by the Python client tests.
    team = write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "n-a"), ("b", "openai", "n-b"), ("c", "openai", "n-c")])
    result = inspector(tmp_path, "--team", str(team), "--method", "tools/call",
                       "--tool-name", "run_consensus", "--tool-arg", "task=Which queue?")
    assert not result.get("isError"), result
    data = result["structuredContent"]
    assert data["status"] == "completed"
    assert data["final_answer"] == "FINAL: from the inspector"
    assert data["winner"]["agent_id"] == "b"
    assert data["task"] == "Which queue?"
    # 3 of 3, or 2 of 2 (and who did not vote) when the last vote was still running when
    # the final answer was out (it could not change the winner)
    text = result["content"][0]["text"]
    assert re.search(r"^Winner: b \(n-b\), with (3 of 3|2 of 2) votes cast", text, re.M)
    assert len(provider.requests_for("n-b")) >= 2  # the real providers were really called


def test_typescript_client_answers_sampling_with_progress(tmp_path: Path) -> None:
    # No keys and no team: the server falls back to a team on the client's own model.
    opts = {"command": EXE, "args": [], "cwd": str(tmp_path), "task": "Tabs or spaces?",
            "final": "FINAL: spaces, via sampling", "model": "ts-scripted-model"}
    proc = run_node([str(BIN / "node"), str(JS / "sampling_client.mjs"), json.dumps(opts)],
                    tmp_path)
    out = json.loads(proc.stdout)
    assert set(out["tools"]) >= TOOLS
    assert out["protocolVersion"] == "2025-11-25"

    result = out["result"]
    assert not result.get("isError"), result
    data = result["structuredContent"]
    assert data["status"] == "completed", data
    assert data["final_answer"] == "FINAL: spaces, via sampling"
    assert data["team"] == "sampling"
    assert all("(sampling/" in a for a in data["agents"])
    assert len(data["agents"]) == 3
    assert data["totals"]["answers"] == 3
    assert all(v["reason"] == "agent1 is the clearest" for v in data["votes"])

    sampling = out["sampling"]
    assert sampling["answers"] == 3 and sampling["presentations"] == 1
    assert sampling["votes"] >= 2  # the third vote may be cancelled (early stop)
    assert sampling["systemPrompts"] == sampling["requests"]  # the JSON tool protocol

    assert out["errors"] == []
    # The handler saw a prefix of the notifications; the TypeScript SDK hands the ones that
    # shared a read with the result to onerror (`late`, see sampling_client.mjs). Together
    # they are every notification the server sent, in order, all before the result.
    received = [p["progress"] for p in out["progress"]]
    assert len(received) >= 2 and received == list(range(1, len(received) + 1))
    sent = out["progress"] + out["late"]
    assert [p["progress"] for p in sent] == list(range(1, len(sent) + 1))
    messages = [p.get("message") or "" for p in sent]
    assert any("answered (" in m for m in messages[:len(received)])
    assert any("(2 of 3 votes cast)" in m for m in messages)
    assert messages[-1] == "finished: completed"
