"""The checkpoint guard's trust comes from the operator: who reviews, how much agreement
approves, and which files a call may read. Real MCP client (in memory), scripted reviewers
over the real SDKs, the real hook as a process."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import has_answered, presenting
from helpers import text_of
from mcp import Client
from mcp_harness import server_env, write_team
from scripted_provider import Call, Reply, ScriptedProvider, ScriptRequest, ToolCalls, vote

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.server import build_server

TOOLS = [{"name": "Bash", "description": "run a shell command",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]
PUSH = "git push --force origin main"
GOALS = [{"id": "push", "description": "force-push the rewritten main"}]


def push_plan(note: str) -> dict[str, Any]:
    return {"steps": [
        {"step": 1, "kind": "backup", "description": f"tag the old main ({note})",
         "preconditions": [], "touches": ["source_control"], "recovery": "terminate"},
        {"step": 2, "kind": "action", "description": "force-push main",
         "preconditions": ["step:1.proceed"], "touches": ["source_control"],
         "recovery": "recheckpoint",
         "approved_action": {"goal_id": "push", "tool": "Bash", "args": {"command": PUSH},
                             "rollback": None}}]}


def reviewer(plan: dict[str, Any], vote_for: Callable[[ScriptRequest], str]
             ) -> Callable[[ScriptRequest], Reply]:
    def script(req: ScriptRequest) -> Reply:
        if presenting(req) or not has_answered(req):
            return ToolCalls([Call("new_answer", {"plan": plan})])
        return vote(vote_for(req), "looks safe")

    return script


def own(index: int) -> Callable[[ScriptRequest], str]:
    """Vote for the answer of the reviewer at `index` (config order: agent1, agent2, ...)."""
    return lambda req: sorted(req.tool_enum("vote", "agent_id"))[index]


@pytest.fixture(autouse=True)
def _key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "keys" / "plan.key"
    monkeypatch.setenv("MASSGEN_MCP_KEY_FILE", str(path))
    return path


@asynccontextmanager
async def checkpoint_server(cwd: Path, team: Path | None,
                            client: Mapping[str, Any] | None = None, /, **options: Any
                            ) -> AsyncIterator[Client]:
    """The real server as `massgen-mcp --checkpoint-team TEAM [flags]` builds it, in memory;
    `client`: the SDK Client's options (default: the 2025-11-25 handshake)."""
    app = App(cwd / ".massgen", checkpoint_team=str(team) if team else None,
              env=Environment({}, dotenv_dir=cwd), cwd=cwd, **options)
    mcp, host = build_server(app)
    async with anyio.create_task_group() as background:
        host.background = background
        async with Client(mcp, **(client or {"mode": "legacy"})) as connected:
            yield connected
        background.cancel_scope.cancel()


def three_reviewers(tmp_path: Path, provider: ScriptedProvider,
                    votes: tuple[int, int, int], **orchestrator: Any) -> Path:
    for i, target in enumerate(votes):
        provider.script(f"rev{i}", reviewer(push_plan(f"reviewer {i}"), own(target)))
    return write_team(tmp_path / "reviewers.yaml", provider, [
        ("r1", "openai", "rev0"), ("r2", "anthropic", "rev1"), ("r3", "gemini", "rev2")],
        **orchestrator)


def hook(workspace: Path, command: str) -> tuple[str, str]:
    payload = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "cwd": str(workspace),
               "tool_input": {"command": command}}
    out = subprocess.run([sys.executable, "-m", "massgen_mcp.hook.main", "pre-tool-use"],
                         input=json.dumps(payload), capture_output=True, text=True,
                         env=server_env({"CLAUDE_PROJECT_DIR": str(workspace)}) | {
                             "MASSGEN_MCP_KEY_FILE": str(workspace.parent / "keys" / "plan.key")},
                         timeout=60)
    hso = json.loads(out.stdout)["hookSpecificOutput"]
    return hso["permissionDecision"], hso["permissionDecisionReason"]


async def checkpoint(client: Client, workspace: Path, **extra: Any) -> Any:
    init = await client.call_tool("checkpoint_init", {
        "workspace_dir": str(workspace), "original_task": "rewrite history",
        "available_tools": TOOLS})
    assert not init.is_error, init.content
    return await client.call_tool("checkpoint", {"objective": "force-push the rewritten main",
                                                 "action_goals": GOALS, **extra})


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    ws.mkdir()
    return ws


async def test_a_split_vote_approves_nothing_and_says_so(provider: ScriptedProvider,
                                                         tmp_path: Path, workspace: Path) -> None:
    team = three_reviewers(tmp_path, provider, (0, 1, 2))  # each votes for itself: 1-1-1
    async with checkpoint_server(workspace, team) as client:
        r = await checkpoint(client, workspace)
    data = r.structured_content
    assert r.is_error and data["status"] == "no_agreement" and data["plan"] is None
    assert "split" in data["error"] and "1 of 3" in data["error"] and "needs 2" in data["error"]
    assert "No approved plan (status no_agreement)" in text_of(r)
    assert hook(workspace, PUSH)[0] == "deny"  # no plan is active: the push stays gated
    # the split plan is kept for the record, not activated
    assert json.loads((Path(data["logs_dir"]) / "plan.json").read_text())["plan"]


async def test_a_majority_approves_and_unanimous_can_be_required(
        provider: ScriptedProvider, tmp_path: Path, workspace: Path) -> None:
    team = three_reviewers(tmp_path, provider, (0, 0, 2))  # 2-0-1
    async with checkpoint_server(workspace, team) as client:
        r = await checkpoint(client, workspace)
    assert not r.is_error and r.structured_content["status"] == "completed", r.content
    assert r.structured_content["approval"] == "majority"
    assert hook(workspace, PUSH)[0] == "allow"

    for options, orchestrator in (({"checkpoint_approval": "unanimous"}, {}),
                                  ({}, {"approval": "unanimous"})):
        team = three_reviewers(tmp_path, provider, (0, 0, 2), **orchestrator)
        async with checkpoint_server(workspace, team, **options) as client:
            r = await checkpoint(client, workspace)
        data = r.structured_content
        assert data["status"] == "no_agreement" and data["approval"] == "unanimous", data
        assert "2 of 3" in data["error"] and "needs 3 (unanimous)" in data["error"]
        assert hook(workspace, PUSH)[0] == "deny"  # re-initialising ended the earlier plan


async def test_the_agent_cannot_choose_its_reviewers(provider: ScriptedProvider,
                                                     tmp_path: Path, workspace: Path) -> None:
    provider.script("yes-man", reviewer(push_plan("mine"), own(0)))
    mine = write_team(tmp_path / "mine.yaml", provider, [("me", "openai", "yes-man")])
    operator = three_reviewers(tmp_path, provider, (0, 1, 2))
    async with checkpoint_server(workspace, operator) as client:
        for extra in ({"models": "openai/gpt-5"}, {"team": str(mine)}, {"team": "checkpoint"}):
            r = await checkpoint(client, workspace, **extra)
            assert r.is_error
            text = text_of(r)
            assert "refused" in text and "--allow-checkpoint-team-override" in text, text
    assert not provider.requests_for("yes-man")
    # The operator can allow it explicitly (the team is then held to the tool-team rules).
    async with checkpoint_server(workspace, operator, allow_checkpoint_team_override=True,
                                 team_policy=None) as client:
        r = await checkpoint(client, workspace, team="checkpoint")
        assert "refused" not in text_of(r)


@pytest.mark.parametrize("raw", ["~/.ssh/id_rsa", ".env", "/proc/self/environ", "../outside.log",
                                 "secrets/credentials.json"])
async def test_trajectory_path_obeys_the_files_rules(provider: ScriptedProvider, tmp_path: Path,
                                                     workspace: Path, raw: str) -> None:
    (workspace / ".env").write_text("OPENAI_API_KEY=sk-live-123\n")
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "credentials.json").write_text("{}")
    (tmp_path / "outside.log").write_text("private\n")
    async with checkpoint_server(workspace, None) as client:
        r = await client.call_tool("checkpoint_init", {
            "workspace_dir": str(workspace), "original_task": "t", "available_tools": TOOLS,
            "trajectory_path": raw})
    assert r.is_error
    text = text_of(r)
    assert "trajectory_path: " in text and ("outside the working directory" in text
                                                     or "never sent to the models" in text), text


async def test_a_trajectory_inside_the_project_is_shown(provider: ScriptedProvider,
                                                        tmp_path: Path, workspace: Path) -> None:
    (workspace / "steps.log").write_text("ran the tests\nall green\n")
    team = three_reviewers(tmp_path, provider, (0, 0, 0))
    async with checkpoint_server(workspace, team) as client:
        init = await client.call_tool("checkpoint_init", {
            "workspace_dir": str(workspace), "original_task": "t", "available_tools": TOOLS,
            "trajectory_path": "steps.log"})
        assert not init.is_error, init.content
        r = await client.call_tool("checkpoint", {"objective": "push", "action_goals": GOALS})
        assert not r.is_error, r.content
    assert "all green" in provider.requests_for("rev0")[0].text


async def test_the_calling_agents_own_model_is_never_its_reviewer(workspace: Path) -> None:
    """No keys, no --checkpoint-team: sampling would make the caller review itself."""
    from mcp import types

    async def sampler(context: Any, params: Any) -> types.CreateMessageResult:
        raise AssertionError("the reviewed agent's model was asked to review")

    app = App(workspace / ".massgen", env=Environment({}, dotenv_dir=workspace), cwd=workspace)
    mcp, host = build_server(app)
    async with anyio.create_task_group() as background:
        host.background = background
        async with Client(mcp, mode="legacy", sampling_callback=sampler) as client:
            r = await checkpoint(client, workspace)
        background.cancel_scope.cancel()
    assert r.is_error and "sampling would make the calling agent's own model" in text_of(r)


async def test_a_reviewer_plan_with_a_hardline_action_goes_back_with_the_reason(
        provider: ScriptedProvider, tmp_path: Path, workspace: Path) -> None:
    bad = push_plan("and clean home")
    bad["steps"][1]["approved_action"]["args"]["command"] = "rm -rf ~"

    def script(req: ScriptRequest) -> Reply:
        if presenting(req) or not has_answered(req):
            first = not req.tool_results
            return ToolCalls([Call("new_answer", {"plan": bad if first else push_plan("ok")})])
        return vote(own(0)(req), "safe")

    provider.script("strict", script)
    team = write_team(tmp_path / "one.yaml", provider, [("r1", "openai", "strict")])
    async with checkpoint_server(workspace, team) as client:
        r = await checkpoint(client, workspace)
    assert not r.is_error, r.content
    commands = [s.get("approved_action", {}).get("args", {}).get("command")
                for s in r.structured_content["plan"]["steps"]]
    assert commands == [None, PUSH]
    feedback = next(q.tool_results for q in provider.requests_for("strict") if q.tool_results)
    text = str(feedback[0]["content"])
    assert "step 2: Bash" in text and "home directory" in text
    assert "no plan can approve it" in text


async def test_the_operators_flags_reach_the_server(provider: ScriptedProvider, tmp_path: Path,
                                                    workspace: Path) -> None:
    """`massgen-mcp --checkpoint-approval unanimous` (stdio) and the override flag."""
    from mcp_harness import stdio_params

    team = three_reviewers(tmp_path, provider, (0, 0, 2))
    env = {"MASSGEN_MCP_KEY_FILE": str(tmp_path / "keys" / "plan.key")}
    async with Client(stdio_params(workspace, "--checkpoint-team", str(team),
                                   "--checkpoint-approval", "unanimous", env=env),
                      mode="legacy") as client:
        r = await checkpoint(client, workspace)
        assert r.structured_content["status"] == "no_agreement"
        assert "needs 3 (unanimous)" in r.structured_content["error"]
        refused = await checkpoint(client, workspace, team="checkpoint")
        assert refused.is_error and "--allow-checkpoint-team-override" in text_of(refused)
    async with Client(stdio_params(workspace, "--checkpoint-team", str(team),
                                   "--allow-checkpoint-team-override", env=env),
                      mode="legacy") as client:
        r = await checkpoint(client, workspace, team=str(team))
        assert "refused" not in text_of(r)
