"""Which steps of an approved plan need a person's yes, and how the question reads.

Reviewers are models; an irreversible step (a force-push to a shared branch, a deploy,
deleting data) should also have a human's yes before the plan becomes active and the hook
starts allowing it. This module only decides *which* approved calls are irreversible and
words the question; asking (MCP elicitation, both protocol eras) is the server's job.

The test is on the approved calls themselves (actions, rollbacks and compensations, as
the hook will allow them), by what the call does, not by how the reviewers labelled it:
a plan that calls its force-push a "sync" still asks.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field

SHARED_BRANCH = r"(?:main|master|trunk|develop|release[\w./-]*|prod\w*|production|staging)"

#: (what it is, pattern over the call's tool name and arguments as JSON text)
IRREVERSIBLE: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (what, re.compile(pattern, re.IGNORECASE)) for what, pattern in (
        ("force-push to a shared branch",
         r"git\b[^\"]*\bpush\b[^\"]*(?:\s--force\b|\s-f\b|--force-with-lease|--mirror|"
         r"--delete\b|\s-d\b|--prune\b|\s\+\S+|\s:\S+)"),
        ("force-push to a shared branch",
         rf"git\b[^\"]*\bpush\b[^\"]*\s\+?{SHARED_BRANCH}\b[^\"]*(?:\s--force|\s-f\b)"),
        ("deploy",
         r"\bdeploy\b|\bkubectl\s+(?:apply|delete|replace|rollout|scale|patch)\b|"
         r"\bhelm\s+(?:install|upgrade|uninstall|delete|rollback)\b|"
         r"\bterraform\s+(?:apply|destroy|import)\b|\bpulumi\s+(?:up|destroy)\b|"
         r"\b(?:npm|pnpm|yarn|cargo|gem|poetry)\s+publish\b|\btwine\s+upload\b|"
         r"\bdocker\s+(?:image\s+)?push\b|\bgh\s+release\s+create\b|\bansible-playbook\b|"
         r"\bvercel\b[^\"]*--prod\b|\bheroku\b"),
        ("deleting data",
         r"\bdrop\s+(?:table|database|schema|index|collection)\b|\btruncate\b|"
         r"\bdelete\s+from\b|\bdropdb\b|\bflushall\b|\bflushdb\b|\brm\s+-\w*[rRf]|"
         r"\brm\s+--(?:recursive|force)\b|\bshred\b|\bgit\s+branch\s+-D\b|"
         r"\bgit\s+clean\s+-\w*f|\bgit\s+reset\s+--hard\b|\baws\s+s3\s+(?:rm|rb)\b|"
         r"\bgsutil\s+(?:-m\s+)?rm\b|\bdelete_?(?:bucket|database|table|collection|user)s?\b"),
    ))


class PersonApproval(BaseModel):
    """What the person is asked (an elicitation form: primitive fields only)."""

    approve: bool = Field(title="Make this plan active",
                          description="Yes: the hook will allow the listed steps. No: nothing "
                                      "becomes active and the agent must stop or re-plan.")


def _call_text(call: dict[str, Any]) -> str:
    return f"{call.get('tool', '')} {json.dumps(call.get('args', {}), ensure_ascii=False)}"


def needs_person(steps: list[dict[str, Any]]) -> list[str]:
    """One line per approved call that cannot be undone (empty: no person needed)."""
    from massgen_mcp.hook.active import approved_calls

    lines = []
    for call in approved_calls(steps):
        text = _call_text(call)
        what = next((w for w, pattern in IRREVERSIBLE if pattern.search(text)), None)
        if what is None:
            continue
        args = call.get("args") or {}
        command = args.get("command")
        shown = command if isinstance(command, str) else json.dumps(args, ensure_ascii=False)
        role = "" if call.get("role") == "action" else f" ({call.get('role')})"
        lines.append(f"step {call['step']}{role}, {what}: {call['tool']} `{shown[:300]}` "
                     f"— {call.get('description', '')}")
    return list(dict.fromkeys(lines))


def question(objective: str, checkpoint_id: str, lines: list[str]) -> str:
    """The elicitation message: which steps need a yes, then what was approved. The steps come
    first because a client may show only the first lines (Claude Code 2.1.332's dialog shows
    two and folds the rest behind "+N more lines")."""
    listed = "\n".join(f"- {line}" for line in lines)
    return (f"These steps cannot be undone and need your yes: {'; '.join(lines)}\n"
            f"The reviewers approved checkpoint {checkpoint_id} for: {objective}\n\n"
            f"The steps:\n{listed}\n\nMake the plan active?")


#: `person` values in the checkpoint result.
APPROVED, DECLINED, NOT_ASKED = "approved", "declined", "not_asked"
NOT_SHOWN_NOTE = ("this client cannot ask its user (no MCP elicitation), so the plan, "
                  "irreversible steps included, was NOT shown to a person before it became "
                  "active")
