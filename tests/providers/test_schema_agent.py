"""The schema-driven test agent (`type: test`): no script, no provider; valid calls of the
workflow tools it is offered, generated from their schemas, in the order a run asks for them
(its step): answer, vote for the first answer, present."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from mcp_harness import memory_client

from massgen_mcp.app import App
from massgen_mcp.backends import create_backend
from massgen_mcp.backends.testing import example
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.config.team import Team
from massgen_mcp.coordination.answers import TextAnswer
from massgen_mcp.coordination.workflow import new_answer_tool, vote_tool
from massgen_mcp.messages import Step, at_step, user
from massgen_mcp.modes.planning.answer_format import PlanAnswerFormat


def agents_team(*ids: str) -> Team:
    return team_from_data({"agents": [{"id": i, "backend": {"type": "test"}} for i in ids]},
                          "test-agents.yaml", Environment({}))


async def test_a_team_of_test_agents_through_the_mcp_server(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(yaml.safe_dump({"agents": [{"id": i, "backend": {"type": "test"}}
                                               for i in ("ana", "bo", "cy")],
                                    "orchestrator": {"early_stop": False}}))  # every vote
    async with memory_client(tmp_path, team=path) as client:
        r = await client.call_tool("run_consensus", {"task": "Which queue should we use?"})
    assert not r.is_error, r.content
    data: dict[str, Any] = r.structured_content or {}
    assert data["status"] == "completed"
    # Everyone votes for the first label, agent1: the first id in sorted order.
    assert data["winner"]["agent_id"] == "ana"
    assert data["tally"] == {"ana": 3, "bo": 0, "cy": 0}
    assert data["final_answer"] == "ana test final content"  # the winner presented


async def test_test_agents_make_a_valid_plan(tmp_path: Path) -> None:
    app = App(tmp_path / ".massgen", env=Environment({}), cwd=tmp_path)
    prepared = app.plan(agents_team("a", "b"), "Add a job queue", depth="shallow")
    result = await prepared.start()
    assert result.status == "completed", result.error
    stored = app.get_plan(prepared.outcome.plan_id)
    assert len(stored.plan.tasks) == 3  # three of an array of objects: a few
    assert all(" " not in t.id for t in stored.plan.tasks)


async def test_the_test_agent_follows_the_step_not_the_prompt() -> None:
    backend = create_backend(agents_team("a").agents[0])
    answer, vote = new_answer_tool(TextAnswer()), vote_tool(["agent1", "agent2"])
    prompt = [user("Present the best final answer. Your own latest answer is agent1.1.")]
    first = await backend.turn(prompt, [answer, vote])  # no step: a first turn
    with at_step(Step("coordinate", own_label="agent1.1", vote_targets=("agent2",))):
        second = await backend.turn(prompt, [answer, vote])
    with at_step(Step("present", own_label="agent1.1")):
        final = await backend.turn(prompt, [answer])
    calls = [t.tool_calls[0] for t in (first, second, final)]
    assert [(c.name, c.arguments) for c in calls] == [
        ("new_answer", {"content": "a test answer content"}),
        ("vote", {"agent_id": "agent2", "reason": "a finds it complete"}),
        ("new_answer", {"content": "a test final content"})]


def test_examples_fill_the_schema() -> None:
    schema = {"type": "object", "$defs": {"Kind": {"enum": ["x", "y"]}}, "properties": {
        "task_id": {"type": "string", "minLength": 1},
        "kind": {"$ref": "#/$defs/Kind"},
        "size": {"type": "integer", "minimum": 2},
        "note": {"anyOf": [{"type": "null"}, {"type": "string", "maxLength": 8}]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "steps": {"type": "array", "minItems": 2, "items": {"type": "boolean"}},
        "given": {"type": "string", "examples": ["as the schema says"]}}}
    assert example(schema, "t") == {"task_id": "t-task_id", "kind": "x", "size": 2,
                                    "note": "t note", "tags": [], "steps": [True, True],
                                    "given": "as the schema says"}
    plan = example(PlanAnswerFormat("shallow", goal="g").tool_parameters(), "p")
    assert len({t["id"] for t in plan["plan"]["tasks"]}) == 3
