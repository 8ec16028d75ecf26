"""A human can say yes: a reviewer-approved plan with an irreversible step (here a force-push
to main) becomes active only once the person accepts it through MCP elicitation, asked the
2026-07-28 way (an input-required result, the SDK client retries with the answer) and the
2025-11-25 way (an `elicitation/create` request mid-call). A no, a cancel or an unticked box
activates nothing; a client without elicitation gets the plan as before with a note that no
person saw it. Real SDK client (in memory) with its elicitation callback, scripted reviewers
over the real provider SDKs, the real hook as a process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.types import ElicitRequestParams, ElicitResult
from mcp_harness import write_team
from scripted_provider import ScriptedProvider
from test_guard_trust import (  # noqa: F401 (_key: the autouse fixture isolating the key)
    PUSH,
    _key,
    checkpoint,
    checkpoint_server,
    hook,
    own,
    push_plan,
    reviewer,
)

ERAS: dict[str, dict[str, Any]] = {"2026-07-28": {}, "2025-11-25": {"mode": "legacy"}}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The project, beside the key directory `_key` sets (tmp_path/keys), as `hook` expects."""
    ws = tmp_path / "project"
    ws.mkdir()
    return ws


def reviewers(tmp_path: Path, provider: ScriptedProvider, plan: dict[str, Any]) -> Path:
    """Three reviewers who all vote for the first one's plan (unanimous approval)."""
    for i in range(3):
        provider.script(f"rev{i}", reviewer(plan, own(0)))
    return write_team(tmp_path / "reviewers.yaml", provider, [
        ("r1", "openai", "rev0"), ("r2", "anthropic", "rev1"), ("r3", "gemini", "rev2")])


class Person:
    """The client's elicitation callback: records each question, gives a fixed answer."""

    def __init__(self, action: str, approve: bool = True) -> None:
        self.action, self.approve = action, approve
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        self.asked.append(params.message)
        schema = params.requested_schema  # type: ignore[union-attr]
        assert schema["properties"]["approve"]["type"] == "boolean"
        content = {"approve": self.approve} if self.action == "accept" else None
        return ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]


def structured(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = result.structured_content
    return data


def person_file(workspace: Path) -> dict[str, Any]:
    (found,) = list((workspace / ".massgen").rglob("person.json"))
    data: dict[str, Any] = json.loads(found.read_text())
    return data


@pytest.mark.parametrize("era", list(ERAS))
async def test_a_yes_from_the_person_activates_the_plan(
        provider: ScriptedProvider, tmp_path: Path, workspace: Path, era: str) -> None:
    team = reviewers(tmp_path, provider, push_plan("yes"))
    person = Person("accept")
    async with checkpoint_server(workspace, team, {
            **ERAS[era], "elicitation_callback": person}) as client:
        assert client.session.protocol_version == era
        result = await checkpoint(client, workspace)
    assert not result.is_error, result.content
    assert len(person.asked) == 1 and PUSH in person.asked[0], person.asked
    assert "cannot be undone" in person.asked[0] and "force-push" in person.asked[0]
    assert PUSH in person.asked[0].splitlines()[0]  # first: a client may fold the rest away
    out = structured(result)
    assert out["status"] == "completed" and out["person"] == "approved"
    assert any(PUSH in line for line in out["needs_person"])
    assert hook(workspace, PUSH)[0] == "allow"
    assert person_file(workspace)["answer"] == "approved"


@pytest.mark.parametrize("era", list(ERAS))
@pytest.mark.parametrize(("action", "approve", "said"), [
    ("decline", True, "declined"), ("cancel", True, "cancelled"),
    ("accept", False, "declined")])
async def test_no_yes_activates_nothing(provider: ScriptedProvider, tmp_path: Path,
                                        workspace: Path, era: str, action: str,
                                        approve: bool, said: str) -> None:
    team = reviewers(tmp_path, provider, push_plan("no"))
    person = Person(action, approve)
    async with checkpoint_server(workspace, team, {
            **ERAS[era], "elicitation_callback": person}) as client:
        result = await checkpoint(client, workspace)
    assert len(person.asked) == 1
    assert result.is_error
    out = structured(result)
    assert out["status"] == "not_approved_by_person" and out["person"] == said
    assert out["plan"] is None and "did NOT become active" in out["error"]
    verdict, reason = hook(workspace, PUSH)
    assert verdict == "deny", reason  # no plan is active: the force-push stays gated
    assert person_file(workspace)["answer"] == said


@pytest.mark.parametrize("era", list(ERAS))
async def test_a_client_without_elicitation_gets_the_plan_and_a_note(
        provider: ScriptedProvider, tmp_path: Path, workspace: Path, era: str) -> None:
    team = reviewers(tmp_path, provider, push_plan("blind"))
    async with checkpoint_server(workspace, team, ERAS[era]) as client:
        result = await checkpoint(client, workspace)
    assert not result.is_error, result.content
    out = structured(result)
    assert out["person"] == "not_asked" and "NOT shown to a person" in out["person_note"]
    assert "NOT shown to a person" in result.content[0].text
    assert hook(workspace, PUSH)[0] == "allow"  # today's behaviour


async def test_a_plan_with_nothing_irreversible_asks_nobody(
        provider: ScriptedProvider, tmp_path: Path, workspace: Path) -> None:
    plan = {"steps": [{"step": 1, "kind": "action", "description": "run the tests",
                       "preconditions": [], "touches": [], "recovery": "terminate",
                       "approved_action": {"goal_id": "push", "tool": "Bash",
                                           "args": {"command": "pytest -q"},
                                           "rollback": None}}]}
    team = reviewers(tmp_path, provider, plan)
    person = Person("decline")
    async with checkpoint_server(workspace, team, {
            "elicitation_callback": person}) as client:
        result = await checkpoint(client, workspace)
    assert not result.is_error, result.content
    assert person.asked == [] and structured(result)["person"] is None
    assert hook(workspace, "pytest -q")[0] == "allow"
