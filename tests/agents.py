"""Scripted agents for consensus scenarios (functions of the request the provider received).

These play models behind a real wire, so, like a model, they read where they are in the run
from the request itself; the two markers below are the only prompt wording the tests know.
Agents that need no wire are function agents (`call.step`) or `type: test` agents.
"""

from __future__ import annotations

from collections.abc import Callable

from scripted_provider import Reply, ScriptRequest, answer, vote

YOUR_OWN = "Your own latest"  # in a coordination turn after the agent's first answer
PRESENT = "Present the best final"  # in the winner's presentation turn


def has_answered(req: ScriptRequest) -> bool:
    """The agent sees one of its own answers in the prompt."""
    return YOUR_OWN in req.last_user_text


def presenting(req: ScriptRequest) -> bool:
    return PRESENT in req.last_user_text


def answer_then_vote(text: str, target: str | Callable[[ScriptRequest], str] = "agent1",
                     final: str | None = None) -> Callable[[ScriptRequest], Reply]:
    """Answer once, then vote for `target` (an anonymous id or a chooser); present `final`."""

    def script(req: ScriptRequest) -> Reply:
        if presenting(req):
            return answer(final or f"FINAL: {text}")
        if not has_answered(req):
            return answer(text)
        who = target(req) if callable(target) else target
        return vote(who, f"{who} is the most complete")

    return script


def best_label(req: ScriptRequest) -> str:
    """The first valid vote target."""
    return req.tool_enum("vote", "agent_id")[0]
