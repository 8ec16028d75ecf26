"""A person's yes before a checkpoint plan with irreversible steps becomes active.

The reviewers are models. When the plan they approved holds a step that cannot be undone
(`modes/checkpoint/human.py` says which), the `checkpoint` tool asks the person through MCP
elicitation before the plan becomes the active plan the hook enforces:

- protocol 2026-07-28: the call returns an input-required result carrying the
  `elicitation/create` form; the client asks its user and retries the call with the answer.
  The retry finds the held checkpoint through `request_state`, which the SDK seals (a
  client cannot forge or alter it), and does not run the reviewers again;
- protocol 2025-11-25: an `elicitation/create` request mid-call.

Yes: the plan becomes active. No, cancel, no answer, a broken answer: nothing becomes
active, and the result says so. A client without elicitation gets the plan activated as
before, with a note that no person saw it. Every answer is kept in the checkpoint's
`person.json`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from massgen_mcp.modes.checkpoint.human import (
    APPROVED,
    DECLINED,
    NOT_ASKED,
    PersonApproval,
    question,
)

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context
    from mcp_types import InputRequiredResult

    from massgen_mcp.modes.checkpoint.run import CheckpointResult

ANSWER_KEY = "person_approval"
PENDING = "pending_person.json"
#: How long a 2025-11-25 elicitation may wait for the person (then: no answer).
ASK_TIMEOUT_S = 900.0
MODERN = "2026-07-28"


def _modern(ctx: Context[Any, Any]) -> bool:
    from mcp_types.version import is_version_at_least

    version = ctx.protocol_version
    return version is not None and is_version_at_least(version, MODERN)


def can_ask(ctx: Context[Any, Any]) -> bool:
    """Whether this client can put a form in front of its user (form elicitation)."""
    caps = ctx.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    if elicitation is None or (elicitation.form is None and elicitation.url is not None):
        return False  # a bare `elicitation: {}` means form; url-only cannot show a form
    return _modern(ctx) or ctx.session.can_send_request


def stays_in_the_call(tool: str, capabilities: object) -> bool:
    """Whether a `checkpoint` call must not become an MCP task (server/tasks.py): its
    client declares form elicitation (2026-07-28 capabilities), so the person may be asked,
    and that question is an input-required result of the call itself. As a task it would
    end `completed` carrying that result, which interactive Claude Code 2.1.332 showed its
    model as an empty result, and nobody the form: the plan stayed held, unasked."""
    if tool != "checkpoint" or not isinstance(capabilities, dict):
        return False
    elicitation = capabilities.get("elicitation")
    if not isinstance(elicitation, dict):
        return False
    return "form" in elicitation or "url" not in elicitation  # `{}` means form, as can_ask


#: `App.checkpoint_person_answered`: settles a held plan with the person's answer.
Answered = Callable[["CheckpointResult", str], "CheckpointResult"]


async def settle(ctx: Context[Any, Any], out: CheckpointResult, objective: str,
                 answered: Answered) -> CheckpointResult | InputRequiredResult:
    """After the reviewers: ask the person about a held plan, or note that nobody could."""
    if not out.needs_person or out.plan is None:
        return out
    if out.person != "pending":  # the client cannot ask: today's behaviour, said plainly
        return answered(out, NOT_ASKED)
    message = question(objective, out.checkpoint_id, out.needs_person)
    if _modern(ctx):
        from mcp.server.elicitation import render_elicitation_schema
        from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

        from massgen_mcp.hook.active import write_json_atomic

        write_json_atomic(str(Path(out.logs_dir) / PENDING), out.model_dump(mode="json"))
        form = ElicitRequest(params=ElicitRequestFormParams(
            message=message, requested_schema=render_elicitation_schema(PersonApproval)))
        return InputRequiredResult(input_requests={ANSWER_KEY: form},
                                   request_state=json.dumps({"checkpoint": out.logs_dir}))
    return answered(out, await _ask_now(ctx, message))


async def _ask_now(ctx: Context[Any, Any], message: str) -> str:
    """2025-11-25: an `elicitation/create` request now; the person's answer."""
    import anyio

    try:
        with anyio.fail_after(ASK_TIMEOUT_S):
            answer = await ctx.elicit(message, PersonApproval)
    except TimeoutError:
        return "no_answer"
    except Exception:  # a client error or a malformed answer approves nothing
        return "no_answer"
    if answer.action == "accept":
        return APPROVED if answer.data.approve else DECLINED
    return DECLINED if answer.action == "decline" else "cancelled"


async def resume(ctx: Context[Any, Any], answered: Answered) -> CheckpointResult | None:
    """2026-07-28: the retry that carries the person's answer (None: not a retry)."""
    from mcp_types import ElicitResult

    from massgen_mcp.hook.active import StateFileError, read_json
    from massgen_mcp.modes.checkpoint.run import CheckpointResult

    state = ctx.request_state
    if not state:
        return None
    try:
        ckpt = Path(json.loads(state)["checkpoint"])
        held = read_json(str(ckpt / PENDING))
    except (ValueError, KeyError, TypeError, StateFileError):
        held = None
    if not isinstance(held, dict):
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError("checkpoint: this answer is for a checkpoint that is no longer waiting "
                        "for a person (already answered); call checkpoint again")
    with contextlib.suppress(FileNotFoundError):  # one answer per question: no replays
        (ckpt / PENDING).unlink()
    out = CheckpointResult.model_validate(held)
    answer = (ctx.input_responses or {}).get(ANSWER_KEY)
    verdict = "no_answer"
    if isinstance(answer, ElicitResult):
        content = answer.content or {}
        if answer.action == "accept":
            verdict = APPROVED if content.get("approve") is True else DECLINED
        else:
            verdict = DECLINED if answer.action == "decline" else "cancelled"
    return answered(out, verdict)

