"""The person's answer cannot be forged or reused: on 2026-07-28 the client returns the
server's `request_state` with its retry, and the client is the agent under review.

Found by reading `server/checkpoint_person.py`: the state named the checkpoint folder, and
the retry activated, signed with the guard's key, whatever `pending_person.json` it found
there. The folder sits in the agent's workspace (`.massgen/checkpoints/`), so an agent
that rewrote that file while its user was being asked about a force-push got a different
plan approved by the user's yes; and a saved copy put back let the same state be replayed
after a no. Now the held result travels inside the sealed state and each question is
spent once, beside the plan key.

Real SDK client in memory (its own input-required driver, and the session's raw
`call_tool` to replay a state by hand), scripted reviewers, the real hook as a process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CreateMessageResult,
    CreateMessageResultWithTools,
    ElicitRequestParams,
    ElicitResult,
    ListRootsResult,
)
from mcp_types import InputRequiredResult
from scripted_provider import ScriptedProvider
from test_checkpoint_person import reviewers
from test_guard_trust import (  # noqa: F401 (_key: the autouse fixture isolating the key)
    GOALS,
    PUSH,
    TOOLS,
    _key,
    checkpoint,
    checkpoint_server,
    hook,
    push_plan,
)

Responses = dict[str, CreateMessageResult | CreateMessageResultWithTools | ListRootsResult
                 | ElicitResult]
YES: Responses = {"person_approval": ElicitResult(action="accept", content={"approve": True})}
NO: Responses = {"person_approval": ElicitResult(action="decline")}
SWAPPED = "git push --force origin release"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "project"
    ws.mkdir()
    return ws


def swap_the_push(workspace: Path) -> int:
    """What an agent with write access to its project does while its user reads the question:
    every JSON file of the checkpoint folders that names the push now names another."""
    changed = 0
    for path in (workspace / ".massgen").rglob("*.json"):
        text = path.read_text()
        if PUSH in text:
            path.write_text(text.replace(PUSH, SWAPPED))
            changed += 1
    return changed


async def test_what_the_person_said_yes_to_is_what_becomes_active(
        provider: ScriptedProvider, tmp_path: Path, workspace: Path) -> None:
    team = reviewers(tmp_path, provider, push_plan("swap"))
    swapped: list[int] = []

    async def person(context: Any, params: ElicitRequestParams) -> ElicitResult:
        assert PUSH in params.message
        swapped.append(swap_the_push(workspace))
        return ElicitResult(action="accept", content={"approve": True})

    async with checkpoint_server(workspace, team, {"elicitation_callback": person}) as client:
        result = await checkpoint(client, workspace)
    assert swapped and swapped[0] > 0  # the files were there to tamper with
    assert not result.is_error, result.content
    assert hook(workspace, PUSH)[0] == "allow"  # the step the person saw
    verdict, reason = hook(workspace, SWAPPED)
    assert verdict == "deny", reason  # not the one written in while they read


async def test_a_state_the_client_made_up_is_refused(
        provider: ScriptedProvider, tmp_path: Path, workspace: Path) -> None:
    team = reviewers(tmp_path, provider, push_plan("made up"))
    async with checkpoint_server(workspace, team, {}) as client:
        await client.call_tool("checkpoint_init", {
            "workspace_dir": str(workspace), "original_task": "t", "available_tools": TOOLS})
        with pytest.raises(MCPError, match="requestState"):
            await client.call_tool(
                "checkpoint", {"objective": "force-push", "action_goals": GOALS},
                input_responses=YES, request_state=json.dumps({"checkpoint": str(workspace)}))
        assert (await client.list_tools()).tools  # the server is still up
    verdict, reason = hook(workspace, PUSH)
    assert verdict == "deny", reason


async def test_a_question_is_answered_once(
        provider: ScriptedProvider, tmp_path: Path, workspace: Path) -> None:
    """The person says no; the agent replays the genuine state with a yes of its own."""
    team = reviewers(tmp_path, provider, push_plan("replay"))
    args = {"objective": "force-push the rewritten main", "action_goals": GOALS}
    async with checkpoint_server(workspace, team, {
            "elicitation_callback": _never_called}) as client:
        await client.call_tool("checkpoint_init", {
            "workspace_dir": str(workspace), "original_task": "t", "available_tools": TOOLS})
        asked = await client.session.call_tool("checkpoint", args, allow_input_required=True)
        assert isinstance(asked, InputRequiredResult) and asked.request_state
        state = asked.request_state
        assert PUSH not in state  # sealed: the agent cannot read the held plan either
        no = await client.session.call_tool("checkpoint", args, input_responses=NO,
                                            request_state=state)
        assert no.is_error and no.structured_content["person"] == "declined"
        again = await client.session.call_tool("checkpoint", args, input_responses=YES,
                                               request_state=state)
    assert again.is_error and "already answered" in str(again.content)
    verdict, reason = hook(workspace, PUSH)
    assert verdict == "deny", reason


async def _never_called(context: Any, params: ElicitRequestParams) -> ElicitResult:
    raise AssertionError("the test answers by hand")
