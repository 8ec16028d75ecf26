"""Checkpoint sessions, one per workspace, and the audit trail of every checkpoint.

    <state>/checkpoints/index.json                 workspace -> session, active plan or not
    <state>/checkpoints/<session_id>/session.json  what checkpoint_init stored
    <state>/checkpoints/<session_id>/active_plan.json   the plan the hook enforces
    <state>/checkpoints/<session_id>/ckpt_NNN/
        inputs.json        objective, action goals, criteria (merged), session snapshot
        task.md            the task text reviewers got (when given)
        candidates/*.json  every plan a reviewer submitted, valid or not
        votes.json         the votes
        plan.json          the returned plan, status, winner, elapsed

The session id is derived from the resolved workspace path (`<name>-<hash>`), so the same
workspace always maps to the same session; `checkpoint_init` again replaces the session,
deactivates its plan and keeps the audit trail. Flow for the `checkpoint` tool:
`load_session` -> `new_checkpoint_dir` -> run reviewers (`record_candidate` per answer) ->
`record_result`, which makes a completed plan the workspace's active plan.

A session belongs to the user who initialized it (`owner`, as a run records its owner:
runs/owners.py). Another user's session reads as no session, and a workspace whose session
belongs to another user cannot be taken over by a second `checkpoint_init`, except by an admin.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from massgen_mcp.errors import InputError
from massgen_mcp.hook.active import (
    approved_calls,
    clear_active_plan,
    read_json,
    register_workspace,
    set_active_plan,
    write_json_atomic,
)
from massgen_mcp.hook.active import (
    session_id_for as hook_session_id,
)
from massgen_mcp.hook.policy import merge_criteria
from massgen_mcp.modes.checkpoint.schema import normalize_goals
from massgen_mcp.paths import checkpoints_dir
from massgen_mcp.runs.owners import LOCAL, LOCAL_NAME, Principal

SESSION_FILE = "session.json"
_CKPT = re.compile(r"^ckpt_(\d{3,})$")


class ToolInfo(BaseModel):
    """One of the executor's tools: name, description, JSON schema or signature string."""

    name: str = Field(min_length=1)
    description: str = ""
    input_schema: dict[str, Any] | str = Field(default_factory=dict)


class CheckpointSession(BaseModel):
    """What `checkpoint_init` stored for a workspace."""

    session_id: str
    workspace_dir: str
    original_task: str
    available_tools: list[ToolInfo]
    trajectory_path: str | None = None
    environment: dict[str, Any] | str | None = None
    safety_policy: list[str] = Field(default_factory=list)
    created_at: str
    owner: str = LOCAL_NAME
    session_dir: str = Field(default="", exclude=True)

    def tool_names(self) -> list[str]:
        return [t.name for t in self.available_tools]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def session_id_for(workspace: str | Path) -> str:
    """Stable id of a workspace: `<dir name>-<12 hex of its resolved path>`."""
    return hook_session_id(str(workspace))


def _root(state_dir: str | Path) -> Path:
    return checkpoints_dir(Path(state_dir))


_TOOLS = TypeAdapter(list[ToolInfo])


def _tools(available_tools: list[Any]) -> list[ToolInfo]:
    try:
        tools = _TOOLS.validate_python(available_tools)
    except ValidationError as e:
        problems = []
        for err in e.errors():
            loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
            problems.append(f"available_tools{loc}: {err['msg']}")
        raise InputError("; ".join(problems[:10])) from None
    if not tools:
        raise InputError("available_tools is empty: list the executor's tools (name, "
                         "description, input_schema), e.g. Bash, Write, Edit and its MCP tools")
    names = [t.name for t in tools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"available_tools names the same tool twice: {', '.join(duplicates)}")
    return tools


_SYSTEM = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/proc",
           "/sys", "/dev", "/run", "/snap", "/var/lib", "/var/log", "/var/spool", "/var/cache",
           "/var/mail", "/var/backups")


def _check_workspace(workspace: Path, cwd: Path | None) -> None:
    """A workspace is a project: never `/`, the home directory or one above it, a system
    directory, a secret directory (`~/.ssh`), or a directory above the server's working
    directory. Its listing and files go to the reviewers' providers."""
    from massgen_mcp.hook.scope import secret_kind

    home = Path.home().resolve()
    fix = "give the project directory the executor works in"
    if workspace == Path("/") or home.is_relative_to(workspace):
        where = "the home directory" if workspace == home else "a directory above the home"
        raise InputError(f"workspace_dir {workspace} is {where}: its listing would go to the "
                         f"reviewers' models; {fix}")
    if any(workspace == Path(d) or workspace.is_relative_to(d) for d in _SYSTEM):
        raise InputError(f"workspace_dir {workspace} is a system directory; {fix}")
    if secret_kind(str(workspace)) or secret_kind(str(workspace) + "/x"):
        raise InputError(f"workspace_dir {workspace} holds secrets; {fix}")
    if cwd is not None and cwd != workspace and cwd.is_relative_to(workspace):
        raise InputError(f"workspace_dir {workspace} is above the server's working directory "
                         f"{cwd}; {fix}")


def init_session(
    state_dir: str | Path,
    workspace_dir: str | Path,
    original_task: str,
    available_tools: list[Any],
    trajectory_path: str | None = None,
    environment: dict[str, Any] | str | None = None,
    safety_policy: str | list[str] | None = None,
    *,
    files_root: str | Path | None = None,
    allow_secret_files: bool = False,
    who: Principal = LOCAL,
) -> tuple[CheckpointSession, bool]:
    """Store (or replace) the checkpoint session of a workspace; `replaced` says which.

    Replacing deactivates the workspace's active plan; earlier `ckpt_NNN/` stay.
    `trajectory_path` (relative to the workspace) obeys the rules of every file a tool
    argument names (`inputs.check_context_path`): inside `files_root` (the server's working
    directory; default the workspace), never a secret unless `allow_secret_files`.
    """
    workspace = Path(workspace_dir).expanduser().resolve()
    if not workspace.is_dir():
        raise InputError(f"workspace_dir {str(workspace_dir)!r} is not a directory")
    _check_workspace(workspace, Path(files_root).resolve() if files_root is not None else None)
    if not isinstance(original_task, str) or not original_task.strip():
        raise InputError("original_task is empty: give the task the executor is working on")
    tools = _tools(available_tools)
    trajectory = None
    if trajectory_path is not None:
        from massgen_mcp.inputs import check_context_path

        root = Path(files_root).resolve() if files_root is not None else workspace
        trajectory = str(check_context_path(trajectory_path, root, what="trajectory_path",
                                            allow_secrets=allow_secret_files,
                                            relative_to=workspace))
    policy = [safety_policy] if isinstance(safety_policy, str) else list(safety_policy or [])
    session_id = session_id_for(workspace)
    root = _root(state_dir)
    session_dir = root / session_id
    replaced = (session_dir / SESSION_FILE).exists()
    earlier = _read_session(session_dir) if replaced else None
    if earlier is not None and not who.may_see(earlier.owner):
        raise InputError(f"workspace_dir {str(workspace)!r} has another user's checkpoint "
                         "session: use a workspace of your own")
    session = CheckpointSession(
        session_id=session_id, workspace_dir=str(workspace), original_task=original_task.strip(),
        available_tools=tools, trajectory_path=trajectory, environment=environment,
        safety_policy=[p.strip() for p in policy if isinstance(p, str) and p.strip()],
        created_at=_now(), owner=who.name, session_dir=str(session_dir),
    )
    write_json_atomic(str(session_dir / SESSION_FILE), session.model_dump(mode="json"))
    clear_active_plan(str(root), str(workspace))
    register_workspace(str(root), str(workspace), session_id, active=False)
    return session, replaced


def _read_session(session_dir: Path) -> CheckpointSession | None:
    data = read_json(str(session_dir / SESSION_FILE))
    if data is None:
        return None
    return CheckpointSession.model_validate({**data, "session_dir": str(session_dir)})


def load_session(state_dir: str | Path, workspace_dir: str | Path | None = None,
                 who: Principal = LOCAL) -> CheckpointSession:
    """The session of `workspace_dir`, or the most recently initialized one if None: of
    those `who` may see (another user's session reads as none)."""
    root = _root(state_dir)
    if workspace_dir is not None:
        session = _read_session(root / session_id_for(workspace_dir))
        if session is None or not who.may_see(session.owner):
            raise InputError(f"no checkpoint session for workspace {str(workspace_dir)!r}: "
                             "call checkpoint_init first")
        return session
    sessions = [s for d in (sorted(root.iterdir()) if root.is_dir() else [])
                if d.is_dir() and (s := _read_session(d)) is not None
                and who.may_see(s.owner)]
    if not sessions:
        raise InputError("no checkpoint session yet: call checkpoint_init with the workspace, "
                         "the original task and the executor's tools first")
    return max(sessions, key=lambda s: s.created_at)


def new_checkpoint_dir(
    session: CheckpointSession,
    *,
    objective: str,
    action_goals: list[Any] | None = None,
    eval_criteria: str | list[str] | None = None,
    review_task: str | None = None,
) -> Path:
    """Create `ckpt_NNN/` (next number) with `inputs.json` (and `task.md`); returns it."""
    session_dir = Path(session.session_dir)
    session_dir.mkdir(parents=True, exist_ok=True)
    numbers = [int(m.group(1)) for d in session_dir.iterdir() if (m := _CKPT.match(d.name))]
    number = max(numbers, default=0) + 1
    while True:
        ckpt_dir = session_dir / f"ckpt_{number:03d}"
        try:
            ckpt_dir.mkdir()
            break
        except FileExistsError:  # a concurrent checkpoint took this number
            number += 1
    inputs = {
        "checkpoint_id": ckpt_dir.name, "created_at": _now(), "objective": objective,
        "action_goals": normalize_goals(action_goals), "eval_criteria": eval_criteria,
        "criteria": merge_criteria(session.safety_policy, eval_criteria),
        "session": session.model_dump(mode="json"),
    }
    write_json_atomic(str(ckpt_dir / "inputs.json"), inputs)
    if review_task is not None:
        (ckpt_dir / "task.md").write_text(review_task, encoding="utf-8")
    return ckpt_dir


def record_candidate(ckpt_dir: Path, label: str, plan: Any, *, agent: str | None = None,
                     problems: list[str] | None = None) -> Path:
    """Keep one submitted plan (`problems` set when it was rejected) as candidates/<label>."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("._") or "candidate"
    path = Path(ckpt_dir) / "candidates" / f"{safe}.json"
    write_json_atomic(str(path), {"label": label, "agent": agent, "valid": not problems,
                                  "problems": problems or [], "plan": plan})
    return path


def record_result(
    ckpt_dir: Path,
    *,
    status: str,
    plan: dict[str, Any] | None,
    votes: Any,
    elapsed: float,
    winner: str | None = None,
    activate: bool | None = None,
) -> dict[str, Any]:
    """Write votes.json and plan.json; activate the plan; return the tool's result dict.

    By default the plan becomes the workspace's active plan (the one the hook enforces)
    when `status` is "completed" and there is a plan; `activate` overrides that.
    """
    ckpt_dir = Path(ckpt_dir)
    write_json_atomic(str(ckpt_dir / "votes.json"), votes)
    result = {"status": status, "plan": plan, "checkpoint_id": ckpt_dir.name,
              "elapsed": round(elapsed, 3), "logs_dir": str(ckpt_dir)}
    write_json_atomic(str(ckpt_dir / "plan.json"), {**result, "winner": winner})
    if plan is not None and (activate if activate is not None else status == "completed"):
        activate_plan(ckpt_dir, plan)
    return result


def bound_session(ckpt_dir: Path) -> dict[str, str]:
    """The workspace and session a checkpoint belongs to, as read now (see `activate_plan`)."""
    session = _read_session(Path(ckpt_dir).parent)
    if session is None:
        raise InputError(f"{Path(ckpt_dir).parent}: no session.json; was the session removed?")
    return {"workspace_dir": session.workspace_dir, "session_id": session.session_id}


def activate_plan(ckpt_dir: Path, plan: dict[str, Any], bound: dict[str, str] | None = None
                  ) -> None:
    """Make a recorded checkpoint's plan the workspace's active plan (the hook enforces it).
    `bound`: the workspace and session read when the plan was approved, for a plan that
    waited for a person, so files changed in the meantime cannot move it elsewhere."""
    ckpt_dir = Path(ckpt_dir)
    where = bound or bound_session(ckpt_dir)
    inputs = read_json(str(ckpt_dir / "inputs.json")) or {}
    set_active_plan(str(ckpt_dir.parent.parent), where["workspace_dir"], where["session_id"], {
        "checkpoint_id": ckpt_dir.name, "objective": inputs.get("objective", ""),
        "activated_at": _now(), "steps": plan["steps"],
        "approved": approved_calls(plan["steps"]),
    })


def record_person(ckpt_dir: Path, answer: str, asked: list[str], note: str = "") -> None:
    """Keep what the person was asked and answered (approved, declined, ...) for the audit."""
    write_json_atomic(str(Path(ckpt_dir) / "person.json"),
                      {"answer": answer, "asked": asked, "note": note, "at": _now()})
