"""Coding-agent CLIs as team members: the real claude / codex / gemini binaries, headless,
against the loopback scripted provider (no real model, no network)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agents import answer_then_vote, best_label, has_answered, presenting
from cli_agents import claude_backend, cli_agent, cli_env, leftover_processes
from scripted_provider import (
    Call,
    Reply,
    ScriptedProvider,
    ScriptRequest,
    ToolCalls,
    answer,
    vote,
)

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.runs.engine import Engine


def _team(provider: ScriptedProvider, agents: list[dict[str, Any]], **orch: Any) -> Any:
    return team_from_data({"agents": agents, "orchestrator": orch}, "cli-team.yaml",
                          Environment({}))


def _api(provider: ScriptedProvider, aid: str, model: str) -> dict[str, Any]:
    return {"id": aid, "backend": provider.backend("anthropic", model, max_retries=0)}


async def test_mixed_team_with_claude_code_reaches_consensus(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("cc", cli_agent(answer_then_vote("CLI answer: use a queue", best_label)))
    provider.script("api1", answer_then_vote("API answer one", best_label))
    provider.script("api2", answer_then_vote("API answer two", best_label))
    team = _team(provider, [
        {"id": "coder", "backend": claude_backend(provider, "cc")},
        _api(provider, "b-api", "api1"), _api(provider, "c-api", "api2")],
        orchestrator_timeout_seconds=120)
    events: list[dict[str, Any]] = []
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.run(team, "Which queue?", listener=events.append)
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    coder = next(a for a in result.agents if a.agent_id == "coder")
    assert coder.error is None and coder.answers >= 1
    assert any(a.agent_id == "coder" and "CLI answer" in a.text for a in result.answers)
    assert {v.voter for v in result.votes} == {"coder", "b-api", "c-api"}
    # The CLI really went through the provider with its own tool names.
    cc_requests = provider.requests_for("cc")
    assert any("mcp__massgen__new_answer" in r.tool_names for r in cc_requests)
    assert cc_requests[0].headers.get("x-api-key") == "test-key"
    assert coder.usage.provider_calls >= 2
    assert not leftover_processes(str(tmp_path))


def _editing_coder(edits: dict[str, tuple[str, str]]) -> Any:
    """A Claude Code agent that Reads and Edits `edits` (file -> (old, new)) in its workspace
    with Claude Code's own tools, then answers; later it votes for the first label."""
    plan = [(tool, name) for name in edits for tool in ("Read", "Edit")]

    def script(req: ScriptRequest) -> Reply:
        if presenting(req):
            return answer("FINAL: edited the project")
        if has_answered(req):
            return vote(best_label(req))
        done = [r for r in req.tool_results if r["name"] in ("Read", "Edit")]
        if len(done) >= len(plan):
            return answer("I changed VALUE to 2")
        cwd = re.search(r"CWD: (\S+)", req.system)
        assert cwd, "Claude Code's system prompt names its working directory"
        tool, name = plan[len(done)]
        path = f"{cwd.group(1)}/{name}"
        if tool == "Read":
            return ToolCalls([Call("Read", {"file_path": path})])
        old, new = edits[name]
        return ToolCalls([Call("Edit", {"file_path": path, "old_string": old,
                                        "new_string": new})])

    return cli_agent(script)


def _project(root: Path) -> Path:
    proj = root / "proj"
    proj.mkdir()
    (proj / "app.py").write_text("VALUE = 1\n")
    (proj / "secret.env").write_text("TOKEN=original\n")
    (proj / "README.md").write_text("untouched\n")
    return proj


async def test_claude_code_edits_its_workspace_wins_and_writes_back(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    proj = _project(tmp_path)
    provider.script("cc", _editing_coder({"app.py": ("VALUE = 1", "VALUE = 2"),
                                          "secret.env": ("original", "stolen")}))
    provider.script("api1", answer_then_vote("API answer one", best_label))
    provider.script("api2", answer_then_vote("API answer two", best_label))
    team = _team(provider, [
        {"id": "a-coder", "backend": claude_backend(provider, "cc")},
        _api(provider, "b-api", "api1"), _api(provider, "c-api", "api2")],
        orchestrator_timeout_seconds=120,
        context_paths=[{"path": str(proj), "permission": "write",
                        "protected_paths": ["secret.env"]}])
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.run(team, "Set VALUE to 2")
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    assert result.winner is not None and result.winner.agent_id == "a-coder"
    ws = result.workspace
    assert ws is not None and ws.agent_id == "a-coder"
    assert Path(ws.path).is_relative_to(tmp_path / ".massgen")
    assert {(c.path, c.change) for c in ws.changed} == {("app.py", "modified"),
                                                        ("secret.env", "modified")}
    assert "-VALUE = 1" in ws.diff and "+VALUE = 2" in ws.diff
    # Written back: the change, not the protected file, not the untouched one.
    assert (proj / "app.py").read_text() == "VALUE = 2\n"
    assert (proj / "secret.env").read_text() == "TOKEN=original\n"
    assert ws.applied == [str(proj / "app.py")]
    assert ws.skipped == ["secret.env: protected"]
    # Peers got a read-only snapshot of the answer's workspace.
    snap = Path(result.log_dir) / "snapshots" / "agent1.1"
    assert (snap / "app.py").read_text() == "VALUE = 2\n"
    assert not (snap / "app.py").stat().st_mode & 0o222
    assert not leftover_processes(str(tmp_path))


async def test_losing_coding_agent_never_writes_back(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    proj = _project(tmp_path)
    provider.script("cc", _editing_coder({"app.py": ("VALUE = 1", "VALUE = 3")}))
    provider.script("api1", answer_then_vote("API answer one", "agent2"))
    provider.script("api2", answer_then_vote("API answer two", "agent2"))
    team = _team(provider, [
        {"id": "a-coder", "backend": claude_backend(provider, "cc")},
        _api(provider, "b-api", "api1"), _api(provider, "c-api", "api2")],
        orchestrator_timeout_seconds=120, skip_final_presentation=True,
        context_paths=[{"path": str(proj), "permission": "write"}])
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.run(team, "Set VALUE")
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    assert result.winner is not None and result.winner.agent_id == "b-api"
    assert result.workspace is None
    assert (proj / "app.py").read_text() == "VALUE = 1\n"
    # The coder did edit its own copy.
    assert "VALUE = 3" in (Path(result.log_dir) / "workspaces" / "a-coder" / "app.py").read_text()
