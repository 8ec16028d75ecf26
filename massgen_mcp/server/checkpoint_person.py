"""A person's yes before a checkpoint plan with irreversible steps becomes active.

The reviewers are models. When the plan they approved holds a step that cannot be undone
(`modes/checkpoint/human.py` says which), the `checkpoint` tool asks the person through MCP
elicitation before the plan becomes the active plan the hook enforces:

- protocol 2026-07-28: the call returns an input-required result carrying the
  `elicitation/create` form; the client asks its user and retries the call with the answer.
  The held result itself travels in `request_state`, which the SDK seals (AES-GCM: a client
  can neither read, forge nor alter it), so nothing the agent can write (the checkpoint
  folder sits in its workspace) decides what becomes active; the retry does not run the
  reviewers again. Each question is answered once: its id is spent in `answered/` beside the
  plan key, out of reach of the sandboxed agent, so a replayed state approves nothing, and
  it must come from the user who was asked;
- protocol 2025-11-25: an `elicitation/create` request mid-call.

Yes: the plan becomes active. No, cancel, no answer, a broken answer: nothing becomes
active, and the result says so. A client without elicitation gets the plan activated as
before, with a note that no person saw it. Every answer is kept in the checkpoint's
`person.json`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from massgen_mcp.modes.checkpoint.human import (
    APPROVED,
    DECLINED,
    NOT_ASKED,
    PersonApproval,
    question,
)
from massgen_mcp.server.users import asking

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context
    from mcp_types import InputRequiredResult

    from massgen_mcp.modes.checkpoint.run import CheckpointResult

ANSWER_KEY = "person_approval"
#: Spent question ids, beside the plan key (hook/active.py), kept this long (seconds): past
#: the SDK's request-state lifetime (10 min), a state is refused anyway.
ANSWERED = "answered"
KEEP_ANSWERED_S = 3600.0
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


#: `App.checkpoint_person_answered`: settles a held plan with the person's answer (and, for
#: a retry, the workspace and session read when it was held).
Answered = Callable[..., "CheckpointResult"]


async def settle(ctx: Context[Any, Any], out: CheckpointResult, objective: str,
                 answered: Answered, bound: Callable[[str], dict[str, str]]
                 ) -> CheckpointResult | InputRequiredResult:
    """After the reviewers: ask the person about a held plan, or note that nobody could.
    `bound` (`App.checkpoint_bound`): the workspace and session of a checkpoint folder, read
    now and sealed with the question."""
    if not out.needs_person or out.plan is None:
        return out
    if out.person != "pending":  # the client cannot ask: today's behaviour, said plainly
        return answered(out, NOT_ASKED)
    message = question(objective, out.checkpoint_id, out.needs_person)
    if _modern(ctx):
        from mcp.server.elicitation import render_elicitation_schema
        from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

        form = ElicitRequest(params=ElicitRequestFormParams(
            message=message, requested_schema=render_elicitation_schema(PersonApproval)))
        held = {"question": secrets.token_hex(16), "asked": asking().name,
                "held": out.model_dump(mode="json"), "bound": bound(out.logs_dir)}
        return InputRequiredResult(input_requests={ANSWER_KEY: form},
                                   request_state=json.dumps(held))
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

    from massgen_mcp.modes.checkpoint.run import CheckpointResult

    state = ctx.request_state
    if not state:
        return None
    held: Any = None
    question: Any = None
    who: Any = None
    bound: Any = None
    try:
        sealed = json.loads(state)
        question, who = str(sealed["question"]), sealed["asked"]
        held, bound = sealed["held"], sealed["bound"]
    except (ValueError, KeyError, TypeError):
        held = None
    if not isinstance(held, dict) or who != asking().name or not _spend(str(question)):
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError("checkpoint: this answer is not for a question waiting for a person "
                        "(already answered, or asked of someone else); call checkpoint again")
    out = CheckpointResult.model_validate(held)
    answer = (ctx.input_responses or {}).get(ANSWER_KEY)
    verdict = "no_answer"
    if isinstance(answer, ElicitResult):
        content = answer.content or {}
        if answer.action == "accept":
            verdict = APPROVED if content.get("approve") is True else DECLINED
        else:
            verdict = DECLINED if answer.action == "decline" else "cancelled"
    return answered(out, verdict, bound)



def _spend(question: str) -> bool:
    """Mark a question answered; False when it was already (a replay) or the id is odd."""
    from massgen_mcp.hook.active import ledger_dir_root

    if len(question) != 32 or not all(c in "0123456789abcdef" for c in question):
        return False
    folder = os.path.join(ledger_dir_root(), ANSWERED)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(folder) as spent:
        for entry in spent:  # keep the folder small: old ids are refused by the SDK anyway
            with contextlib.suppress(OSError):
                if now - entry.stat().st_mtime > KEEP_ANSWERED_S:
                    os.unlink(entry.path)
    try:
        os.close(os.open(os.path.join(folder, question), os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                         0o600))
    except FileExistsError:
        return False
    return True
