"""MCP Tasks with the real Claude Code CLI 2.1.332 (npm) as the client.

Interactive Claude Code (the `cli` entrypoint) declares `io.modelcontextprotocol/tasks` on
every request: a `run_consensus` call then goes through the task path (a `CreateTaskResult`,
moved to the background, `tasks/get` polls) and the result reaches its model as a task
notification. Headless `claude -p` runs as the `sdk-cli` entrypoint, where 2.1.332 leaves
the feature off (its gate `tengu_glowing_lark` defaults to entrypoint == "cli"): it never
declares the extension, and neither does any Claude Code with CLAUDE_CODE_DISABLE_MCP_TASKS=1;
those calls take the synchronous path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agents import answer_then_vote
from claude_client import run_claude, run_claude_interactive
from mcp_harness import write_team
from scripted_provider import ScriptedProvider

pytestmark = pytest.mark.npm

EXT = "io.modelcontextprotocol/tasks"
CAPS = "io.modelcontextprotocol/clientCapabilities"
FINAL = "FINAL: SQS, decided by the team"


def small_team(provider: ScriptedProvider, tmp_path: Path) -> Path:
    for model in ("cc-a", "cc-b"):
        provider.script(model, answer_then_vote(f"answer {model}", final=FINAL))
    return write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "cc-a"), ("b", "openai", "cc-b")])


def declares_tasks(message: dict) -> bool:
    caps = ((message.get("params") or {}).get("_meta") or {}).get(CAPS) or {}
    return EXT in (caps.get("extensions") or {})


def test_interactive_claude_code_runs_the_consensus_as_a_task(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    team = small_team(provider, tmp_path)
    run = run_claude_interactive(provider, tmp_path, "run_consensus", {"task": "Which queue?"},
                                 ["--team", str(team)], until=FINAL)
    calls = [m for m in run.sent if m.get("method") == "tools/call"]
    assert calls and declares_tasks(calls[0]), run.proc.stdout
    assert "tasks/get" in run.methods()
    seen = [json.dumps(r.raw) for r in run.requests]
    # The call answered with a task at once, and Claude Code moved it to the background...
    assert any("started server-side task mgt_" in s for s in seen), seen[-1][-3000:]
    # ...then the task's result (the decision and the final answer) reached its model.
    final = next(s for s in seen if FINAL in s)
    assert "<task-notification>" in final and "<status>completed</status>" in final
    assert '\\"winner\\"' in final and "<persisted-output>" not in final


def test_interactive_claude_code_with_tasks_disabled_waits_for_the_result(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    team = small_team(provider, tmp_path)
    run = run_claude_interactive(provider, tmp_path, "run_consensus", {"task": "Which queue?"},
                                 ["--team", str(team)], until=FINAL,
                                 env={"CLAUDE_CODE_DISABLE_MCP_TASKS": "1"})
    calls = [m for m in run.sent if m.get("method") == "tools/call"]
    assert calls and not declares_tasks(calls[0]), run.proc.stdout
    assert "tasks/get" not in run.methods()
    assert FINAL in run.tool_result and "server-side task" not in run.tool_result


def test_with_tasks_disabled_claude_code_takes_the_synchronous_path(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    team = small_team(provider, tmp_path)
    run = run_claude(provider, tmp_path, "run_consensus", {"task": "Which queue?"},
                     ["--team", str(team)], env={"CLAUDE_CODE_DISABLE_MCP_TASKS": "1"})
    calls = [m for m in run.sent if m.get("method") == "tools/call"]
    assert calls and not declares_tasks(calls[0])
    assert "tasks/get" not in run.methods()
    assert FINAL in run.tool_result and "server-side task" not in run.tool_result


def test_headless_claude_code_does_not_declare_the_extension(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    """The evidence: `claude -p` 2.1.332 speaks 2026-07-28 and sends roots and elicitation
    capabilities, no extensions; its call is answered synchronously, result inline."""
    team = small_team(provider, tmp_path)
    run = run_claude(provider, tmp_path, "run_consensus", {"task": "Which queue?"},
                     ["--team", str(team)])
    first = run.sent[0]
    meta = first["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["io.modelcontextprotocol/clientInfo"]["version"] == "2.1.332"
    assert "extensions" not in meta[CAPS]
    assert not any(declares_tasks(m) for m in run.sent)
    assert FINAL in run.tool_result
