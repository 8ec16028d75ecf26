"""Checkpoint plans (schema, validation, answer format), sessions, audit trail, review task."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from massgen_mcp.coordination.answers import AnswerRejected
from massgen_mcp.errors import InputError
from massgen_mcp.hook import active
from massgen_mcp.hook.policy import POLICY, builtin_criteria, merge_criteria
from massgen_mcp.modes.checkpoint.answer_format import CheckpointAnswerFormat, render_plan
from massgen_mcp.modes.checkpoint.models import KINDS, ApprovedAction, Step
from massgen_mcp.modes.checkpoint.prompt import review_task, tool_signature
from massgen_mcp.modes.checkpoint.schema import validate_checkpoint_plan
from massgen_mcp.modes.checkpoint.store import (
    init_session,
    load_session,
    new_checkpoint_dir,
    record_candidate,
    record_result,
    session_id_for,
)

TOOLS = ["Bash", "Write", "mcp__ops__deploy", "mcp__ops__health", "mcp__ops__snapshot"]
GOALS = [{"id": "deploy", "description": "deploy v2 to prod"},
         {"id": "cleanup", "description": "remove the old release"}]


@pytest.fixture(autouse=True)
def plan_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep the plan-signing key out of the real home directory."""
    path = tmp_path / "keys" / "plan.key"
    monkeypatch.setenv("MASSGEN_MCP_KEY_FILE", str(path))
    monkeypatch.delenv("MASSGEN_MCP_HOME", raising=False)
    return path


def good_plan() -> dict[str, Any]:
    return {"steps": [
        {"step": 1, "kind": "verify", "description": "Staging is healthy on v2",
         "preconditions": [], "touches": [], "recovery": "terminate",
         "approved_action": {"goal_id": "deploy", "tool": "mcp__ops__health",
                             "args": {"env": "staging"}}},
        {"step": 2, "kind": "backup", "description": "Snapshot the prod database",
         "preconditions": ["step:1.proceed"], "touches": ["prod", "shared_db"],
         "recovery": "recheckpoint"},
        {"step": 3, "kind": "action", "description": "Deploy v2 to prod",
         "preconditions": ["step:1.proceed", "step:2.proceed"], "touches": ["prod"],
         "constraints": ["only the api service"],
         "recovery": {"if": "error rate above 1% within 10 minutes",
                      "then": {"compensate": {"tool": "mcp__ops__deploy",
                                              "args": {"env": "prod", "version": "v1"}},
                               "then": "terminate", "reason": "roll back fast"},
                      "else": "proceed"},
         "approved_action": {"goal_id": "deploy", "tool": "deploy",
                             "args": {"env": "prod", "version": "<executor-fills: version>"},
                             "rollback": {"tool": "mcp__ops__deploy",
                                          "args": {"env": "prod", "version": "v1"}}}},
        {"step": 4, "kind": "action", "description": "Delete the old release directory",
         "preconditions": ["step:3.proceed"], "touches": ["prod"], "recovery": "proceed",
         "approved_action": {"goal_id": "cleanup", "tool": "Bash",
                             "args": {"command": "rm -rf /srv/app/releases/v0"},
                             "rollback": None}},
    ]}


def validate(plan: Any, tools: list[str] | None = None, goals: Any = GOALS) -> dict[str, Any]:
    return validate_checkpoint_plan(plan, available_tools=TOOLS if tools is None else tools,
                                    action_goals=goals)


def problems_of(plan: Any, **kwargs: Any) -> list[str]:
    with pytest.raises(AnswerRejected) as info:
        validate(plan, **kwargs)
    return info.value.problems


# ----------------------------------------------------------------------------- validation


def test_valid_plan_is_normalized() -> None:
    plan = validate(good_plan())
    steps = plan["steps"]
    assert [s["step"] for s in steps] == [1, 2, 3, 4]
    assert "rollback" not in steps[0]["approved_action"]  # verify step: no rollback key
    assert steps[3]["approved_action"]["rollback"] is None  # explicit null kept
    assert steps[2]["approved_action"]["rollback"]["tool"] == "mcp__ops__deploy"
    assert "constraints" not in steps[0] and steps[2]["constraints"] == ["only the api service"]
    assert steps[2]["recovery"]["then"]["compensate"]["args"]["version"] == "v1"


def test_precondition_problems_name_their_path() -> None:
    plan = good_plan()
    plan["steps"][1]["preconditions"] = ["step:3.proceed"]
    plan["steps"][2]["preconditions"] = ["step:3.proceed", "step:9.proceed", "after step 1"]
    problems = problems_of(plan)
    assert "steps[1].preconditions[0]: 'step:3.proceed' refers to a later step" in problems
    assert "steps[2].preconditions[0]: 'step:3.proceed' refers to the step itself" in problems
    assert any(p.startswith("steps[2].preconditions[1]: 'step:9.proceed' refers to step 9, "
                            "which does not exist") for p in problems)
    assert ("steps[2].preconditions[2]: 'after step 1' must look like 'step:N.proceed'"
            in problems)


def test_missing_rollback_on_action_step() -> None:
    plan = good_plan()
    del plan["steps"][3]["approved_action"]["rollback"]
    assert problems_of(plan) == [
        "steps[3].approved_action.rollback: required on an action step: {tool, args} that "
        "undoes it, or null if nothing can"]


def test_action_step_without_approved_action() -> None:
    plan = good_plan()
    del plan["steps"][3]["approved_action"]
    problems = problems_of(plan)
    assert problems[0].startswith("steps[3].approved_action: required on an action step")
    # Its goal is then unmapped too: both are reported at once.
    assert any(p.startswith("action goal 'cleanup'") for p in problems)


def test_rollback_forbidden_on_non_action_step() -> None:
    plan = good_plan()
    plan["steps"][0]["approved_action"]["rollback"] = None
    assert problems_of(plan) == [
        "steps[0].approved_action.rollback: only action steps have a rollback (this is a "
        "verify step); remove it"]


def test_unknown_tools_everywhere() -> None:
    plan = good_plan()
    plan["steps"][3]["approved_action"]["tool"] = "Shell"
    plan["steps"][2]["approved_action"]["rollback"]["tool"] = "undeploy"
    plan["steps"][2]["recovery"]["then"]["compensate"]["tool"] = "mcp__other__deploy"
    problems = problems_of(plan)
    assert len(problems) == 3
    assert problems[0].startswith("steps[2].recovery.then.compensate.tool: "
                                  "'mcp__other__deploy' is not one of the executor's tools")
    assert problems[1].startswith("steps[2].approved_action.rollback.tool: 'undeploy'")
    assert problems[2].startswith("steps[3].approved_action.tool: 'Shell' is not one of the "
                                  "executor's tools (Bash, Write, mcp__ops__deploy")


def test_bad_recovery_terminal_and_shapes() -> None:
    plan = good_plan()
    plan["steps"][0]["recovery"] = "retry"
    plan["steps"][2]["recovery"]["then"]["then"] = "rollback"
    plan["steps"][2]["recovery"]["else"] = {"unless": "x"}
    plan["steps"][1]["recovery"] = {"if": "", "then": "proceed", "otherwise": "terminate"}
    problems = problems_of(plan)
    assert ("steps[0].recovery: 'retry' is not a recovery terminal (use proceed, "
            "recheckpoint, terminate)") in problems
    assert any(p.startswith("steps[2].recovery.then.then: 'rollback' is not a recovery "
                            "terminal") for p in problems)
    assert any(p.startswith("steps[2].recovery.else: a recovery node is") for p in problems)
    assert any(p.startswith("steps[1].recovery.otherwise: unknown field") for p in problems)
    assert "steps[1].recovery.if: must be a non-empty condition" in problems


def test_action_spec_problems_name_the_action_fields() -> None:
    plan = good_plan()
    plan["steps"][2]["recovery"]["then"]["compensate"] = {"tool": "deploy", "arguments": {}}
    plan["steps"][2]["approved_action"]["rollback"] = {"args": {}}
    problems = problems_of(plan)
    assert ("steps[2].recovery.then.compensate.arguments: unknown field (an action spec has tool, "
            "args)") in problems
    assert "steps[2].approved_action.rollback.tool: required field is missing" in problems


def test_unmapped_and_unknown_action_goals() -> None:
    plan = good_plan()
    plan["steps"][3]["approved_action"]["goal_id"] = "clean"
    problems = problems_of(plan)
    assert problems == [
        "steps[3].approved_action.goal_id: 'clean' is not an action goal (deploy, cleanup)",
        "action goal 'cleanup' (remove the old release) is not served by any "
        "approved_action: add a step whose approved_action.goal_id is 'cleanup'"]


def test_schema_problems_and_numbering_reported_together() -> None:
    plan = good_plan()
    plan["steps"][0]["kind"] = "check"
    plan["steps"][1]["step"] = 5
    plan["steps"][1]["notes"] = "x"
    del plan["steps"][3]["description"]
    plan["extra"] = True
    problems = problems_of(plan)
    assert "steps[0].kind: must be one of verify, action, backup, notify, wait" in problems
    assert "steps[1].step: expected 2 (steps are numbered 1..n in order), got 5" in problems
    assert not any("extra" in p or "notes" in p for p in problems)  # dropped, not fatal
    assert "steps[3].description: required field is missing" in problems
    # steps[3] failed its schema but names goal 'cleanup': no second, spurious complaint.
    assert not any("not served" in p for p in problems)


def test_extra_fields_are_dropped_and_noted() -> None:
    plan = good_plan()
    plan["summary"] = "Deploy v2, then clean up"
    plan["steps"][0]["why"] = "staging first"
    plan["steps"][2]["approved_action"]["risk"] = "medium"
    plan["steps"][2]["approved_action"]["rollback"]["note"] = "v1 is warm"
    valid = validate(plan)
    assert valid["notes"] == [
        "plan.summary: dropped (a plan has only 'steps')",
        "steps[0].why: dropped (a step has step, kind, description, preconditions, touches, "
        "recovery, constraints, approved_action)",
        "steps[2].approved_action.risk: dropped (approved_action has goal_id, tool, args, "
        "rollback)",
        "steps[2].approved_action.rollback.note: dropped (action has tool, args)"]
    assert {k: v for k, v in valid.items() if k != "notes"} == validate(good_plan())
    # Without `args`, an extra field may be the arguments under another name: an error.
    plan["steps"][3]["approved_action"] = {"goal_id": "cleanup", "tool": "Bash",
                                           "arguments": {"command": "rm -rf /"},
                                           "rollback": None}
    assert any(p.startswith("steps[3].approved_action.arguments: unknown field")
               for p in problems_of(plan))


def test_summary_plan_is_approved_end_to_end(tmp_path: Path, workspace: Path) -> None:
    fmt = CheckpointAnswerFormat(TOOLS, GOALS)
    parsed = fmt.parse({"plan": {**good_plan(), "summary": "two goals, four steps"}})
    assert parsed.data["notes"][0].startswith("plan.summary: dropped")
    session, _ = init_session(tmp_path / "state", workspace, "Ship", TOOL_INFO)
    ckpt = new_checkpoint_dir(session, objective="deploy", action_goals=GOALS)
    record_result(ckpt, status="completed", plan=parsed.data, votes={}, elapsed=1)
    record = active.load_active_plan(str(workspace))[1]
    assert record is not None and len(record["approved"]) == 5
    stored = json.loads((ckpt / "plan.json").read_text())
    assert stored["plan"]["notes"] == parsed.data["notes"]


@pytest.mark.parametrize("node, problem", [
    ({"if": "x", "then": {"if": "y", "then": "rollback"}},
     "steps[0].recovery.then.then: 'rollback' is not a recovery terminal"),
    ({"if": "x", "then": "proceed", "else": {"compensate": {"tool": "Bash"}}},
     "steps[0].recovery.else.then: required field is missing"),
    ({"compensate": {"tool": "Bash", "args": {}}, "then": {"if": "  ", "then": "proceed"}},
     "steps[0].recovery.then.if: must be a non-empty condition"),
    ({"compensate": {"tool": "Bash", "args": {}}, "then": "proceed", "reason": 3},
     "steps[0].recovery.reason: must be a string"),
    ({"compensate": "undo", "then": "proceed"}, "steps[0].recovery.compensate: must be an object"),
    ([1, 2], "steps[0].recovery: a recovery node is"),
    ({"if": "x", "then": "proceed", "otherwise": "terminate"},
     "steps[0].recovery.otherwise: unknown field"),
])
def test_recovery_tree_problems_name_their_path(node: Any, problem: str) -> None:
    plan = good_plan()
    plan["steps"][0]["recovery"] = node
    assert any(p.startswith(problem) for p in problems_of(plan)), problems_of(plan)


def test_deep_recovery_tree_is_refused_not_recursed() -> None:
    node: Any = "terminate"
    for _ in range(5000):
        node = {"if": "x", "then": node}
    plan = good_plan()
    plan["steps"][0]["recovery"] = node
    assert problems_of(plan) == ["steps[0].recovery: recovery is nested too deeply"]


def test_recovery_is_normalized() -> None:
    plan = good_plan()
    plan["steps"][0]["recovery"] = {"if": "  down  ", "then": "terminate", "reason": None}
    assert validate(plan)["steps"][0]["recovery"] == {"if": "down", "then": "terminate"}


def test_step_numbers_must_run_in_order() -> None:
    plan = good_plan()
    plan["steps"][1]["step"] = 3
    assert "steps[1].step: expected 2 (steps are numbered 1..n in order), got 3" in problems_of(
        plan)


@pytest.mark.parametrize("bad", [None, [], {"steps": []}, {"steps": "x"}, "plan"])
def test_not_a_plan(bad: Any) -> None:
    assert problems_of(bad)


def test_a_fixed_plan_passes() -> None:
    broken = good_plan()
    broken["steps"][2]["preconditions"] = ["step:4.proceed"]
    del broken["steps"][3]["approved_action"]["rollback"]
    broken["steps"][3]["approved_action"]["tool"] = "sh"
    assert len(problems_of(broken)) == 3
    fixed = copy.deepcopy(broken)
    fixed["steps"][2]["preconditions"] = ["step:2.proceed"]
    fixed["steps"][3]["approved_action"].update(tool="Bash", rollback=None)
    assert validate(fixed)["steps"][3]["approved_action"]["tool"] == "Bash"


def test_goals_without_ids_and_no_goals() -> None:
    plan = good_plan()
    for step in plan["steps"]:
        if "approved_action" in step:
            step["approved_action"]["goal_id"] = "g1"
    assert validate(plan, goals=["ship v2"])["steps"]
    # With no goals, goal ids are free-form labels.
    assert validate(good_plan(), goals=None)["steps"]


# ----------------------------------------------------------------------------- answer format


def _walk_keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | set().union(*(_walk_keys(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_walk_keys(v) for v in node)) if node else set()
    return set()


def test_answer_format_schema_is_inline_and_parses() -> None:
    fmt = CheckpointAnswerFormat(TOOLS, GOALS)
    schema = fmt.tool_parameters()
    assert schema["required"] == ["plan"]
    assert not _walk_keys(schema) & {"$ref", "$defs", "oneOf", "definitions"}
    step_schema = schema["properties"]["plan"]["properties"]["steps"]["items"]
    assert step_schema["properties"]["approved_action"]["properties"]["tool"]["enum"] == TOOLS
    parsed = fmt.parse({"plan": good_plan()})
    assert parsed.data["steps"][2]["approved_action"]["tool"] == "deploy"
    assert fmt.render(parsed) == parsed.text
    assert "<executor-fills:" in fmt.instructions() and fmt.noun == "checkpoint plan"


def test_tool_schema_is_generated_from_the_models() -> None:
    """The `plan` schema offers exactly the models' fields with their descriptions, asks for
    what a plan should give, and agrees with validation on what a plan is."""
    plan_schema = CheckpointAnswerFormat(TOOLS, GOALS).tool_parameters()["properties"]["plan"]
    step = plan_schema["properties"]["steps"]["items"]
    action = step["properties"]["approved_action"]
    for schema, model in ((step, Step), (action, ApprovedAction)):
        assert list(schema["properties"]) == list(model.model_fields)
        described = {name: f.description for name, f in model.model_fields.items()
                     if f.description}
        assert described and all(schema["properties"][name]["description"] == text
                                 for name, text in described.items())
    assert step["properties"]["kind"]["enum"] == list(KINDS)
    assert step["required"] == ["step", "kind", "description", "preconditions", "touches",
                                "recovery"]
    assert action["required"] == ["goal_id", "tool", "args"]
    any_tool = CheckpointAnswerFormat([], GOALS).tool_parameters()
    jsonschema.validate({"plan": good_plan()}, any_tool)
    broken = good_plan()
    del broken["steps"][0]["kind"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"plan": broken}, any_tool)
    with pytest.raises(AnswerRejected):
        validate(broken)


def test_answer_format_accepts_json_string_and_bare_steps() -> None:
    fmt = CheckpointAnswerFormat(TOOLS, GOALS)
    assert fmt.parse({"plan": json.dumps(good_plan())}).data == validate(good_plan())
    assert fmt.parse(good_plan()).data == validate(good_plan())
    with pytest.raises(AnswerRejected) as info:
        fmt.parse({"plan": "{not json"})
    assert info.value.problems[0].startswith("plan: not valid JSON")
    with pytest.raises(AnswerRejected):
        fmt.parse({"content": "a plan in prose"})


def test_render_is_compact_and_complete() -> None:
    text = render_plan(validate(good_plan()))
    lines = text.splitlines()
    assert lines[0] == "1. [verify] Staging is healthy on v2"
    assert "3. [action] Deploy v2 to prod  (after 1, 2)  touches: prod" in lines
    assert ('   approved [deploy]: deploy(env="prod", version="<executor-fills: version>"); '
            'rollback: mcp__ops__deploy(env="prod", version="v1")') in lines
    assert "   approved [cleanup]: Bash: rm -rf /srv/app/releases/v0; rollback: none" in lines
    assert any("compensate mcp__ops__deploy" in line and "because roll back fast" in line
               for line in lines)


# ----------------------------------------------------------------------------- policy


def test_policy_has_eight_groups_and_merge_dedups_in_order() -> None:
    assert len(POLICY) == 8 and all(len(g.anti_patterns) >= 4 for g in POLICY)
    merged = merge_criteria(["No deploys on Fridays.", "no deploys  on fridays"],
                            ["Notify #ops first", "No deploys on Fridays", ""])
    assert merged[:8] == builtin_criteria()
    assert merged[8:] == ["No deploys on Fridays.", "Notify #ops first"]
    assert merge_criteria("Only staging", None)[-1] == "Only staging"


# ----------------------------------------------------------------------------- sessions


TOOL_INFO = [
    {"name": "Bash", "description": "Run a shell command",
     "input_schema": {"type": "object", "properties": {"command": {"type": "string"}},
                      "required": ["command"]}},
    {"name": "mcp__ops__deploy", "description": "Deploy a version",
     "input_schema": "deploy(env: str, version: str)"},
    {"name": "mcp__ops__health", "input_schema": {}},
    {"name": "mcp__ops__snapshot"},
    {"name": "Write"},
]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print('hi')\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / "node_modules" / "left-pad").mkdir(parents=True)
    return ws


def test_session_init_replace_and_load(tmp_path: Path, workspace: Path) -> None:
    state = tmp_path / "state"
    session, replaced = init_session(state, workspace, "Ship v2", TOOL_INFO,
                                     safety_policy="No Friday deploys")
    assert not replaced and session.session_id == session_id_for(workspace)
    assert session.session_id.startswith("project-")
    assert session.safety_policy == ["No Friday deploys"]
    again, replaced = init_session(state, str(workspace / "src" / ".."), "Ship v3", TOOL_INFO)
    assert replaced and again.session_id == session.session_id
    assert load_session(state, workspace).original_task == "Ship v3"
    assert load_session(state).session_id == session.session_id  # latest
    with pytest.raises(InputError, match="checkpoint_init"):
        load_session(state, tmp_path)


@pytest.mark.parametrize("tools, message", [
    ([], "available_tools is empty"),
    ([{"description": "no name"}], r"available_tools\[0\]\.name"),
    ([{"name": "Bash"}, {"name": "Bash"}], "same tool twice: Bash"),
])
def test_session_rejects_bad_tools(tmp_path: Path, workspace: Path, tools: list[Any],
                                   message: str) -> None:
    with pytest.raises(InputError, match=message):
        init_session(tmp_path / "state", workspace, "task", tools)


def test_session_rejects_missing_workspace(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a directory"):
        init_session(tmp_path / "state", tmp_path / "nope", "task", TOOL_INFO)


def test_audit_trail_and_active_plan(tmp_path: Path, workspace: Path) -> None:
    state = workspace / ".massgen"
    session, _ = init_session(state, workspace, "Ship v2", TOOL_INFO)
    first = new_checkpoint_dir(session, objective="deploy v2", action_goals=GOALS,
                               eval_criteria=["Keep v1 warm"], review_task="TASK")
    second = new_checkpoint_dir(session, objective="again")
    assert (first.name, second.name) == ("ckpt_001", "ckpt_002")
    inputs = json.loads((first / "inputs.json").read_text())
    assert inputs["criteria"][-1] == "Keep v1 warm" and inputs["action_goals"][0]["id"] == "deploy"
    assert (first / "task.md").read_text() == "TASK"
    record_candidate(first, "agent1.1", good_plan(), agent="gpt")
    record_candidate(first, "agent2/1", {"steps": []}, problems=["steps: must be non-empty"])
    names = sorted(p.name for p in (first / "candidates").iterdir())
    assert names == ["agent1.1.json", "agent2_1.json"]
    assert json.loads((first / "candidates" / "agent2_1.json").read_text())["valid"] is False

    # A failed run is recorded but not enforced.
    result = record_result(second, status="failed", plan=None, votes=[], elapsed=1.0)
    assert result["status"] == "failed" and active.load_active_plan(str(workspace))[1] is None

    plan = validate(good_plan())
    votes = [{"voter": "agent2", "voted_for": "agent1.1", "reason": "safest"}]
    result = record_result(first, status="completed", plan=plan, votes=votes, elapsed=12.3456)
    assert result == {"status": "completed", "plan": plan, "checkpoint_id": "ckpt_001",
                      "elapsed": 12.346, "logs_dir": str(first)}
    assert json.loads((first / "votes.json").read_text()) == votes
    assert json.loads((first / "plan.json").read_text())["plan"] == plan

    # The hook's lookup finds it from a subdirectory of the workspace.
    ws, record, problem = active.load_active_plan(str(workspace / "src"))
    assert ws == str(workspace.resolve()) and record is not None and problem is None
    assert record["checkpoint_id"] == "ckpt_001" and record["objective"] == "deploy v2"
    roles = [(c["step"], c["role"], c["tool"]) for c in record["approved"]]
    assert roles == [(1, "action", "mcp__ops__health"), (3, "action", "deploy"),
                     (4, "action", "Bash"), (3, "rollback", "mcp__ops__deploy"),
                     (3, "compensate", "mcp__ops__deploy")]

    # Re-initializing the session stops enforcing the old plan.
    init_session(state, workspace, "Ship v3", TOOL_INFO)
    assert active.load_active_plan(str(workspace)) == (None, None, None)


def test_plan_not_signed_with_this_users_key_is_ignored(workspace: Path, plan_key: Path
                                                        ) -> None:
    state = workspace / ".massgen"
    session, _ = init_session(state, workspace, "Ship", TOOL_INFO)
    ckpt = new_checkpoint_dir(session, objective="deploy", action_goals=GOALS)
    record_result(ckpt, status="completed", plan=validate(good_plan()), votes={}, elapsed=1)
    assert plan_key.stat().st_mode & 0o777 == 0o600
    path = Path(active.ledger_path(session.session_id))  # the copy the hook reads
    record = json.loads(path.read_text())
    record["approved"].append({"step": 4, "kind": "action", "role": "action", "goal_id": "x",
                               "tool": "Bash", "args": {"command": "rm -rf ~"}})
    path.write_text(json.dumps(record))  # tampered: the signature no longer matches
    _, plan, problem = active.load_active_plan(str(workspace))
    assert plan is None and problem is not None and "not signed with this user's key" in problem
    plan_key.write_text("another user's key")
    path.write_text(json.dumps({**record, "approved": record["approved"][:-1]}))
    assert active.load_active_plan(str(workspace))[1] is None


def test_repo_index_cannot_claim_a_wider_workspace(workspace: Path) -> None:
    index = workspace / ".massgen" / "checkpoints" / "index.json"
    index.parent.mkdir(parents=True)
    index.write_text(json.dumps({"version": 1, "workspaces": {
        "/": {"session_id": "x", "active": True}}}))
    assert active.load_active_plan(str(workspace)) == (None, None, None)


def test_active_plan_found_wherever_the_state_dir_is(tmp_path: Path, workspace: Path) -> None:
    state = tmp_path / "elsewhere"
    session, _ = init_session(state, workspace, "Ship", TOOL_INFO)
    ckpt = new_checkpoint_dir(session, objective="deploy", action_goals=GOALS)
    record_result(ckpt, status="completed", plan=validate(good_plan()), votes={}, elapsed=1)
    record = active.load_active_plan(str(workspace / "src"))[1]
    assert record is not None and record["checkpoint_id"] == "ckpt_001"
    # The hook's copy lives next to the key, not in the state directory.
    assert Path(active.ledger_path(session.session_id)).parent.parent == (
        Path(active.key_path()).parent)


def test_superseded_plan_copied_back_approves_nothing(workspace: Path) -> None:
    state = workspace / ".massgen"
    session, _ = init_session(state, workspace, "Ship", TOOL_INFO)
    for number in (1, 2):
        ckpt = new_checkpoint_dir(session, objective=f"deploy {number}", action_goals=GOALS)
        record_result(ckpt, status="completed", plan=validate(good_plan()), votes={},
                      elapsed=1)
        if number == 1:
            old = (Path(session.session_dir) / "active_plan.json").read_text()
    (Path(session.session_dir) / "active_plan.json").write_text(old)
    assert active.load_active_plan(str(workspace))[1]["checkpoint_id"] == "ckpt_002"  # type: ignore[index]
    current = Path(active.ledger_path(session.session_id)).read_text()
    # Even a byte-for-byte copy put into the hook's own ledger is not the current checkpoint.
    Path(active.ledger_path(session.session_id)).write_text(old)  # (a hardline write, too)
    _, plan, problem = active.load_active_plan(str(workspace))
    assert plan is None and problem and "not the current one (#2)" in problem
    Path(active.ledger_path(session.session_id)).write_text(current)
    assert active.load_active_plan(str(workspace))[1]["checkpoint_id"] == "ckpt_002"  # type: ignore[index]
    init_session(state, workspace, "Ship v3", TOOL_INFO)  # deactivates
    assert active.load_active_plan(str(workspace))[1] is None
    Path(active.ledger_path(session.session_id)).write_text(current)  # the last one, put back
    _, plan, problem = active.load_active_plan(str(workspace))
    assert plan is None and problem and "deactivated" in problem


# ----------------------------------------------------------------------------- review task


def test_review_task_holds_everything_bounded(tmp_path: Path, workspace: Path) -> None:
    trajectory = workspace / "trajectory.log"
    trajectory.write_text("OLDEST-LINE\n" + "x" * 20_000 + "\nNEWEST-LINE\n")
    for i in range(300):
        (workspace / "src" / f"m{i:03d}.py").write_text("")
    session, _ = init_session(tmp_path / "state", workspace, "Ship v2 safely", TOOL_INFO,
                              trajectory_path="trajectory.log",
                              environment={"cloud": "aws"}, safety_policy=["Keep v1 warm"])
    text = review_task(session, "Deploy v2 to prod", GOALS, "Page on-call first")
    assert "Deploy v2 to prod" in text and "Ship v2 safely" in text
    assert "- deploy: deploy v2 to prod" in text
    assert "- Bash(command: string)" in text and "Run a shell command" in text
    assert "- mcp__ops__deploy(env: str, version: str)" in text
    for group in POLICY:
        assert group.title in text
    assert "Keep v1 warm" in text and "Page on-call first" in text and '"cloud": "aws"' in text
    assert "NEWEST-LINE" in text and "OLDEST-LINE" not in text
    assert "node_modules/ (skipped)" in text and "left-pad" not in text
    assert "…(listing stops at 200 entries)" in text
    assert "<executor-fills:" in text
    assert "<executor-fills:" not in review_task(session, "x", None, None, include_format=False)


def test_tool_signature_from_schema() -> None:
    schema = {"type": "object", "required": ["env"], "properties": {
        "env": {"enum": ["staging", "prod"]}, "dry_run": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}}}}
    assert tool_signature("deploy", schema) == (
        'deploy(env: "staging"|"prod", dry_run?: boolean, tags?: list[string])')
    assert tool_signature("deploy", "(env: str)") == "deploy(env: str)"
