"""`plan` and `checkpoint` end to end: real MCP client, scripted agents, real SDKs, the hook."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import has_answered, presenting
from mcp import Client
from mcp_harness import server_env, stdio_params, write_team
from scripted_provider import Call, ScriptRequest, ToolCalls, vote


def submit(plan: Any) -> ToolCalls:
    return ToolCalls([Call("new_answer", {"plan": plan})])


def task(tid: str, chunk: str, deps: list[str] | None = None) -> dict[str, Any]:
    return {"id": tid, "chunk": chunk, "description": f"do {tid}", "depends_on": deps or [],
            "priority": "high", "task_type": "deterministic",
            "success_criteria": [f"{tid} done"], "verification": f"check {tid}"}


GOOD = {"summary": "Ship the queue", "tasks": [
    task("schema", "1-design"), task("api", "1-design", ["schema"]),
    task("worker", "2-build", ["api"]), task("tests", "2-build", ["worker"]),
    task("docs", "3-ship", ["tests"]), task("deploy", "3-ship", ["docs"])]}
CYCLIC = {"summary": "bad", "tasks": [
    task("a", "1", ["c"]), task("b", "1", ["a"]), task("c", "1", ["b"]),
    task("d", "1"), task("e", "1")]}
UNKNOWN_DEP = {"summary": "bad", "tasks": [
    task("a", "1"), task("b", "1", ["zz"]), task("c", "1"), task("d", "1"), task("e", "1")]}
LATER_CHUNK = {"summary": "bad", "tasks": [
    task("a", "1", ["d"]), task("b", "1"), task("c", "1"), task("d", "2"), task("e", "2")]}


def planner(first: dict[str, Any], fixed: dict[str, Any] = GOOD):
    """Submit `first`; if it is rejected, submit `fixed`; then vote for agent1."""

    def script(req: ScriptRequest):
        if presenting(req):
            return submit(fixed)
        if not has_answered(req):
            return submit(first if not req.tool_results else fixed)
        return vote("agent1", "complete and ordered")

    return script


@pytest.fixture(autouse=True)
def _keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MASSGEN_MCP_KEY_FILE", str(tmp_path / "keys" / "plan.key"))


async def test_plan_tool_validates_fixes_stores_and_serves_latest(provider, tmp_path: Path):
    provider.script("p-cyclic", planner(CYCLIC))
    provider.script("p-unknown", planner(UNKNOWN_DEP))
    provider.script("p-later", planner(LATER_CHUNK))
    team = write_team(tmp_path / "team.yaml", provider, [
        ("a", "openai", "p-cyclic"), ("b", "anthropic", "p-unknown"), ("c", "gemini", "p-later")])
    env = {"MASSGEN_MCP_KEY_FILE": str(tmp_path / "keys" / "plan.key")}
    async with Client(stdio_params(tmp_path, "--team", str(team), env=env), mode="legacy") as c:
        r = await c.call_tool("plan", {"goal": "Add a job queue", "depth": "shallow"})
        assert not r.is_error, r.content
        data = r.structured_content
        assert data["status"] == "completed" and data["plan_id"]
        assert [t["id"] for t in data["plan"]["tasks"]] == [t["id"] for t in GOOD["tasks"]]  # type: ignore[index]
        assert data["markdown"].index("1-design") < data["markdown"].index("3-ship")
        assert data["consensus"]["winner"] == "a"

        latest = await c.call_tool("get_plan", {"plan_id": "latest"})
        assert latest.structured_content["plan_id"] == data["plan_id"]
        listed = await c.call_tool("list_plans", {})
        assert listed.structured_content["plans"][0]["plan_id"] == data["plan_id"]
        missing = await c.call_tool("get_plan", {"plan_id": "plan_nope"})
        assert missing.is_error
    stored = Path(data["path"])
    assert {p.name for p in stored.iterdir()} >= {"plan.json", "plan.md", "metadata.json"}
    assert json.loads((stored / "metadata.json").read_text())["goal"] == "Add a job queue"

    # every agent's first (invalid) plan came back with every problem named
    feedback = {m: next(r.tool_results for r in provider.requests_for(m) if r.tool_results)[0]
                for m in ("p-cyclic", "p-unknown", "p-later")}
    assert all(f["is_error"] for f in feedback.values())
    assert "cycle" in feedback["p-cyclic"]["content"]
    assert "a -> " in feedback["p-cyclic"]["content"]
    assert "unknown task 'zz'" in feedback["p-unknown"]["content"]
    assert "later chunk" in feedback["p-later"]["content"]
    # voters saw the candidate plans rendered compactly, not as raw JSON
    voting = [r for r in provider.requests_for("p-unknown") if has_answered(r)][-1]
    assert "[1-design] schema (high, deterministic)" in voting.last_user_text
    assert '"depends_on"' not in voting.last_user_text


def test_plan_cli(provider, tmp_path: Path) -> None:
    provider.script("p1", planner(GOOD))
    team = write_team(tmp_path / "team.yaml", provider, [("solo", "openai", "p1")])
    from mcp_harness import EXE

    done = subprocess.run([EXE, "plan", "Add a job queue", "--depth", "shallow", "--team",
                           str(team)], cwd=tmp_path, env=server_env(), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "1-design" in done.stdout and "schema" in done.stdout
    assert "stored as plan_" in done.stderr


# ---------------------------------------------------------------------------- checkpoint

EXECUTOR_TOOLS = [
    {"name": "Bash", "description": "run a shell command",
     "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
    {"name": "mcp__ops__deploy", "description": "deploy a version",
     "input_schema": "deploy(env: str, version: str)"},
    {"name": "mcp__ops__health", "description": "health check", "input_schema": "health(env: str)"},
]
GOALS = [{"id": "deploy", "description": "deploy v2 to prod"}]


def ckpt_plan(**change: Any) -> dict[str, Any]:
    steps = [
        {"step": 1, "kind": "verify", "description": "staging healthy", "preconditions": [],
         "touches": [], "recovery": "terminate"},
        {"step": 2, "kind": "action", "description": "deploy v2 to prod",
         "preconditions": ["step:1.proceed"], "touches": ["prod"], "recovery": "recheckpoint",
         "approved_action": {"goal_id": "deploy", "tool": "mcp__ops__deploy",
                             "args": {"env": "prod", "version": "<executor-fills: version>"},
                             "rollback": {"tool": "mcp__ops__deploy",
                                          "args": {"env": "prod", "version": "v1"}}}},
    ]
    for path, value in change.items():
        index, field = path.split("__", 1)
        if value is None:
            steps[int(index)]["approved_action"].pop(field, None)  # type: ignore[attr-defined]
        elif field in steps[int(index)]:
            steps[int(index)][field] = value
        else:
            steps[int(index)]["approved_action"][field] = value  # type: ignore[index]
    return {"steps": steps}


BAD_PRECONDITION = ckpt_plan(**{"1__preconditions": ["step:5.proceed"]})
MISSING_ROLLBACK = ckpt_plan(**{"1__rollback": None})
UNKNOWN_TOOL = ckpt_plan(**{"1__tool": "mcp__ops__nuke"})
BAD_TERMINAL = ckpt_plan(**{"0__recovery": "retry-forever"})


def reviewer(first: dict[str, Any]):
    def script(req: ScriptRequest):
        if presenting(req):
            return submit(ckpt_plan())
        if not has_answered(req):
            return submit(first if not req.tool_results else ckpt_plan())
        return vote("agent1", "safe")

    return script


async def test_checkpoint_plans_are_validated_recorded_and_enforced(provider, tmp_path: Path):
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "app.py").write_text("print('hi')\n")
    models = {"r-precond": BAD_PRECONDITION, "r-rollback": MISSING_ROLLBACK,
              "r-tool": UNKNOWN_TOOL, "r-terminal": BAD_TERMINAL}
    for model, first in models.items():
        provider.script(model, reviewer(first))
    team = write_team(tmp_path / "reviewers.yaml", provider, [
        ("r1", "openai", "r-precond"), ("r2", "anthropic", "r-rollback"),
        ("r3", "gemini", "r-tool"), ("r4", "openai", "r-terminal")])
    env = {"MASSGEN_MCP_KEY_FILE": str(tmp_path / "keys" / "plan.key")}
    async with Client(stdio_params(workspace, "--checkpoint-team", str(team), env=env),
                      mode="legacy") as c:
        init = await c.call_tool("checkpoint_init", {
            "workspace_dir": str(workspace), "original_task": "ship v2",
            "available_tools": EXECUTOR_TOOLS, "safety_policy": ["never touch billing"]})
        assert not init.is_error, init.content
        assert init.structured_content["replaced"] is False
        again = await c.call_tool("checkpoint_init", {
            "workspace_dir": str(workspace), "original_task": "ship v2",
            "available_tools": EXECUTOR_TOOLS, "safety_policy": ["never touch billing"]})
        assert again.structured_content["replaced"] is True

        r = await c.call_tool("checkpoint", {"objective": "deploy v2 to production",
                                             "action_goals": GOALS,
                                             "eval_criteria": ["keep downtime under 1 min"]})
        assert not r.is_error, r.content
        data = r.structured_content
        assert data["status"] == "completed"
        assert data["plan"]["steps"][1]["approved_action"]["tool"] == "mcp__ops__deploy"
        assert data["checkpoint_id"] == "ckpt_001"
        assert "follow these steps" in r.content[0].text  # type: ignore[union-attr]

    # the reviewers saw the objective, tools, merged criteria and the workspace listing
    seen = provider.requests_for("r-precond")[0].text
    for needle in ("deploy v2 to production", "mcp__ops__deploy", "never touch billing",
                   "keep downtime under 1 min", "app.py"):
        assert needle in seen
    # every rejection named its problem
    feedback = {m: next(r.tool_results for r in provider.requests_for(m) if r.tool_results)[0]
                ["content"] for m in models}
    assert "later step" in feedback["r-precond"] or "step:5" in feedback["r-precond"]
    assert "rollback" in feedback["r-rollback"]
    assert "mcp__ops__nuke" in feedback["r-tool"]
    assert "retry-forever" in feedback["r-terminal"]
    # the audit trail has inputs, every candidate (valid or not), votes and the plan
    logs = Path(data["logs_dir"])
    assert {p.name for p in logs.iterdir()} >= {"inputs.json", "candidates", "votes.json",
                                                "plan.json"}
    candidates = [json.loads(p.read_text()) for p in (logs / "candidates").iterdir()]
    assert len(candidates) >= 8 and any(not c["valid"] for c in candidates)

    # the hook now holds the executor to the plan
    def hook(tool: str, tool_input: dict[str, Any]) -> dict[str, Any] | None:
        payload = {"session_id": "s", "transcript_path": "", "cwd": str(workspace),
                   "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input,
                   "tool_use_id": "t1"}
        out = subprocess.run([sys.executable, "-m", "massgen_mcp.hook.main",
                              "pre-tool-use"], input=json.dumps(payload), capture_output=True,
                             text=True, cwd=workspace, env=server_env(env), timeout=30)
        return json.loads(out.stdout)["hookSpecificOutput"] if out.stdout.strip() else None

    allowed = hook("mcp__ops__deploy", {"env": "prod", "version": "v2.0.1"})
    assert allowed and allowed["permissionDecision"] == "allow"
    denied = hook("mcp__ops__deploy", {"env": "billing", "version": "v2"})
    assert denied and denied["permissionDecision"] == "deny"
    assert "step" in denied["permissionDecisionReason"]


async def test_checkpoint_without_a_session_is_a_clear_error(tmp_path: Path) -> None:
    async with Client(stdio_params(tmp_path, env={"MASSGEN_MCP_KEY_FILE": str(
            tmp_path / "k")}), mode="legacy") as c:
        r = await c.call_tool("checkpoint", {"objective": "drop the old tables",
                                             "models": "sampling"})
        assert r.is_error
        assert "checkpoint_init" in r.content[0].text  # type: ignore[union-attr]
