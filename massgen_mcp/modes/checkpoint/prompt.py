"""The task text a checkpoint's reviewers get.

Everything a reviewer needs to write a plan without touching the workspace: the objective,
the executor's original task, its tools (name, description, schema or signature), the
merged criteria, the action goals, the tail of the executor's trajectory, and a bounded,
read-only listing of the workspace. Every part is bounded so a huge trajectory or
repository cannot blow the reviewers' context.
"""

from __future__ import annotations

import json
import os
import re
import stat
from typing import Any

from massgen_mcp.hook.policy import merge_criteria
from massgen_mcp.modes.checkpoint.answer_format import PLAN_RULES
from massgen_mcp.modes.checkpoint.schema import normalize_goals
from massgen_mcp.modes.checkpoint.store import CheckpointSession

TRAJECTORY_CHARS = 8000
LISTING_ENTRIES = 200
LISTING_DEPTH = 3
SCHEMA_CHARS = 1500
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".massgen",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".hg", ".svn",
                       ".idea", ".next", ".cache"})


def _json_type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"][:8])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list[{_json_type(schema.get('items'))}]"
    return "|".join(kind) if isinstance(kind, list) else str(kind)


def tool_signature(name: str, schema: dict[str, Any] | str) -> str:
    """`deploy(env: "staging"|"prod", version: string, dry_run?: boolean)`."""
    if isinstance(schema, str):
        # A signature names the tool itself, maybe by its bare name: keep the full name.
        m = re.match(r"^\s*[\w.-]*\s*(\(.*)$", schema, re.S)
        return f"{name}{m.group(1).strip()}" if m else f"{name}: {schema.strip()}"
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return f"{name}()"
    required = set(schema.get("required") or [])
    params = [f"{key}{'' if key in required else '?'}: {_json_type(value)}"
              for key, value in props.items()]
    return f"{name}({', '.join(params)})"


def _tools_text(session: CheckpointSession) -> str:
    lines = []
    for tool in session.available_tools:
        lines.append(f"- {tool_signature(tool.name, tool.input_schema)}")
        if tool.description:
            lines.append(f"  {' '.join(tool.description.split())[:500]}")
        if isinstance(tool.input_schema, dict) and tool.input_schema:
            schema = json.dumps(tool.input_schema, ensure_ascii=False, separators=(",", ":"))
            if len(schema) > SCHEMA_CHARS:
                schema = schema[:SCHEMA_CHARS] + " …(truncated)"
            lines.append(f"  schema: {schema}")
    return "\n".join(lines)


def _opened_path(fd: int) -> str | None:
    """Where an open file really is (Linux's /proc/self/fd; None elsewhere)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def trajectory_tail(path: str | None, limit: int = TRAJECTORY_CHARS) -> str:
    """The last `limit` characters of the trajectory file, or a note saying why there are none."""
    if not path:
        return "(no trajectory file was given)"
    from massgen_mcp.hook.scope import secret_kind

    if secret_kind(os.path.realpath(path)):  # checked at init; the file may have moved since
        return f"(trajectory file {path} is now a secret file; it is not sent)"
    try:
        # No symlink at the end, no FIFO or device: it was checked when it was given.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return f"(trajectory file {path} is no longer a regular file; it is not sent)"
        # O_NOFOLLOW guards the last component only: a directory above it swapped for a
        # link would lead elsewhere. The file opened must be the file that was checked.
        opened = _opened_path(fd)
        if opened is not None and opened != path:
            os.close(fd)
            return (f"(trajectory file {path} now leads to {opened} through a link; it is "
                    "not sent)")
        with os.fdopen(fd, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit * 4))  # up to 4 bytes per character in UTF-8
            text = f.read().decode("utf-8", errors="replace")
    except OSError as e:
        return f"(trajectory file {path} could not be read: {e.strerror})"
    if len(text) > limit or size > limit * 4:
        return f"…(earlier part omitted)\n{text[-limit:]}"
    return text or "(the trajectory file is empty)"


def workspace_listing(root: str, *, max_entries: int = LISTING_ENTRIES,
                      max_depth: int = LISTING_DEPTH) -> str:
    """A sorted tree of the workspace (directories end in /); symlinks are not followed."""
    lines: list[str] = []
    truncated = False

    def walk(directory: str, depth: int) -> None:
        nonlocal truncated
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: (not e.is_dir(follow_symlinks=False), e.name))
        except OSError:
            return
        for entry in entries:
            if len(lines) >= max_entries:
                truncated = True
                return
            is_dir = entry.is_dir(follow_symlinks=False)
            if is_dir and entry.name in SKIP_DIRS:
                lines.append(f"{'  ' * depth}{entry.name}/ (skipped)")
                continue
            lines.append(f"{'  ' * depth}{entry.name}{'/' if is_dir else ''}")
            if is_dir and depth + 1 < max_depth:
                walk(entry.path, depth + 1)

    walk(root, 0)
    if truncated:
        lines.append(f"…(listing stops at {max_entries} entries)")
    return "\n".join(lines) or "(empty)"


def review_task(
    session: CheckpointSession,
    objective: str,
    action_goals: list[Any] | None,
    eval_criteria: str | list[str] | None,
    *,
    include_format: bool = True,
) -> str:
    """The reviewers' task. Pass `include_format=False` when the orchestrator already adds
    the answer format's `instructions()` (the plan rules), so they are not shown twice."""
    goals = normalize_goals(action_goals)
    criteria = merge_criteria(session.safety_policy, eval_criteria)
    environment = session.environment
    if isinstance(environment, dict):
        environment = json.dumps(environment, ensure_ascii=False, indent=1)[:3000]
    parts = [
        "You are a safety reviewer at a checkpoint. An executor agent is about to do something "
        "risky. Write the step plan it must follow: what to verify first, what to back up, "
        "exactly which tool calls are approved, and how to recover when a step fails. You "
        "only read; nothing you do changes the workspace.",
        f"## Objective of this checkpoint\n{objective.strip()}",
        f"## The executor's original task\n{session.original_task}",
        "## Action goals (each needs an approved_action with its goal_id)\n" + (
            "\n".join(f"- {g['id']}: {g['description']}" for g in goals)
            or "(none given: approve only the actions the objective needs)"),
        f"## The executor's tools (approved actions may only use these)\n{_tools_text(session)}",
        "## Criteria the plan must satisfy\n"
        + "\n".join(f"{i}. {c}" for i, c in enumerate(criteria, 1)),
    ]
    if environment:
        parts.append(f"## Environment\n{environment}")
    parts += [
        f"## Workspace {session.workspace_dir} (read-only listing, depth {LISTING_DEPTH})\n"
        + workspace_listing(session.workspace_dir),
        f"## Recent trajectory of the executor (last {TRAJECTORY_CHARS} characters)\n"
        + trajectory_tail(session.trajectory_path),
    ]
    if include_format:
        parts.append(f"## How to write the plan\n{PLAN_RULES}")
    return "\n\n".join(parts) + "\n"
