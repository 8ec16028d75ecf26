"""The active checkpoint plan of a workspace: written by the server, read by the hook.

Two places, two roles::

    <key dir>/active/<session_id>.json     the signed active plan: the only copy the hook
                                           trusts (the key dir is outside every repository)
    <state>/checkpoints/index.json         {"version": 1, "workspaces": {"/abs/ws": {
                                             "session_id": "...", "active": true|false}}}
    <state>/checkpoints/<session_id>/active_plan.json   a copy for people and tools

Trust comes only from this user's key, `$MASSGEN_MCP_KEY_FILE` (default
`$XDG_CONFIG_HOME/massgen-mcp/plan.key`, created 0600 with the first plan), and from the
directory it lives in. The hook finds the plan from the `cwd` alone: the session id of a
workspace is derived from its path, so it looks for `<key dir>/active/<id>.json` for the cwd
and each parent, and takes the deepest. It reads nothing else to decide what is approved,
so a `.massgen/` planted in the repository or any parent can neither register a wider
workspace nor switch the guard off. A plan is honoured only when (1) its HMAC-SHA256
signature is valid, (2) it names that workspace and session, and (3) the index of the
state directory that wrote it is readable and still marks it active: repository state can
narrow (suspend approvals) but never widen.

Approvals are bound to one checkpoint: activating a newer plan replaces the one file the
hook reads, so a superseded plan copied back into `.massgen/` approves nothing, and writing
into the key directory is itself a gated call (`scope.py`). A broken index suspends the
plan's approvals and nothing else. Every write is atomic (temp file + rename).

Standard library only, and no pathlib: the hook imports this before every tool call.
"""

from __future__ import annotations

import contextlib
import json
import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the hook ~8 ms of start-up
    from typing import Any

INDEX_NAME = "index.json"
ACTIVE_NAME = "active_plan.json"
FORMAT_VERSION = 1
KEY_FILE_ENV = "MASSGEN_MCP_KEY_FILE"
LEDGER_NAME = "active"


def write_json_atomic(path: str, data: Any) -> None:
    """Write JSON so readers see the old file or the new one, never a torn one."""
    from massgen_mcp.paths import write_atomic  # stdlib only; writers only

    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


class StateFileError(ValueError):
    """A checkpoint state file exists but cannot be used; the message names the file."""


def read_json(path: str) -> Any:
    """The parsed file, or None if it does not exist. Malformed JSON: StateFileError."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise StateFileError(f"{path} is not valid JSON ({e})") from None


def is_under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def index_path(checkpoints_root: str) -> str:
    return os.path.join(checkpoints_root, INDEX_NAME)


def active_path(checkpoints_root: str, session_id: str) -> str:
    return os.path.join(checkpoints_root, session_id, ACTIVE_NAME)


def _load_index(checkpoints_root: str) -> dict[str, Any]:
    index = read_json(index_path(checkpoints_root))
    if not isinstance(index, dict) or not isinstance(index.get("workspaces"), dict):
        return {"version": FORMAT_VERSION, "workspaces": {}}
    return index


def register_workspace(checkpoints_root: str, workspace: str, session_id: str,
                       *, active: bool) -> None:
    """Record (or update) a workspace's session and whether it has an active plan."""
    index = _load_index(checkpoints_root)
    index["workspaces"][workspace] = {"session_id": session_id, "active": active}
    write_json_atomic(index_path(checkpoints_root), index)


def key_path() -> str:
    """Where this user's plan-signing key lives (outside any repository)."""
    explicit = os.environ.get(KEY_FILE_ENV)
    if explicit:
        return os.path.expanduser(explicit)
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".config")
    return os.path.join(config, "massgen-mcp", "plan.key")


def _read_key() -> bytes | None:
    try:
        with open(key_path(), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _ensure_key() -> bytes:
    key = _read_key()
    if key is not None:
        return key
    path = key_path()
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return _read_key() or b""
    key = os.urandom(32).hex().encode()
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return key


def _signature(key: bytes, record: dict[str, Any]) -> str:
    import hashlib  # only when a plan exists
    import hmac

    body = {k: v for k, v in record.items() if k != "signature"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def set_active_plan(checkpoints_root: str, workspace: str, session_id: str,
                    record: dict[str, Any]) -> str:
    """Make `record` the workspace's active plan, signed; returns the file the hook reads.

    It replaces the workspace's previous plan, whose approvals end here.
    """
    full = {"version": FORMAT_VERSION, "workspace": workspace, "session_id": session_id,
            "checkpoints_root": os.path.realpath(checkpoints_root), **record}
    full["signature"] = _signature(_ensure_key(), full)
    ledger = ledger_path(session_id)
    write_json_atomic(ledger, full)
    write_json_atomic(active_path(checkpoints_root, session_id), full)
    register_workspace(checkpoints_root, workspace, session_id, active=True)
    return ledger


def clear_active_plan(checkpoints_root: str, workspace: str) -> bool:
    """Deactivate a workspace's plan (the hook then only applies the built-in patterns).

    Returns True if a plan was active. The checkpoint records stay in the audit trail.
    """
    session_id = session_id_for(workspace)
    was_active = os.path.exists(ledger_path(session_id))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(ledger_path(session_id))
    index = _load_index(checkpoints_root)
    entry = index["workspaces"].get(workspace)
    if entry and entry.get("active"):
        was_active = True
        register_workspace(checkpoints_root, workspace, entry["session_id"], active=False)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(active_path(checkpoints_root, entry["session_id"]))
    return was_active


def approved_calls(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every call a plan allows: approved actions, their rollbacks, compensations in recovery.

    Each entry: `step`, `kind`, `role` (action | rollback | compensate), `goal_id`, `tool`,
    `args`, `description`. The hook matches calls against this list.
    """
    calls: list[dict[str, Any]] = []

    def add(step: dict[str, Any], role: str, spec: dict[str, Any], goal: str = "") -> None:
        calls.append({"step": step["step"], "kind": step["kind"], "role": role,
                      "goal_id": goal, "tool": spec["tool"], "args": spec.get("args", {}),
                      "description": step["description"]})

    def walk(step: dict[str, Any], node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("compensate"), dict):
                add(step, "compensate", node["compensate"])
            for key in ("then", "else"):
                walk(step, node.get(key))

    for step in steps:
        action = step.get("approved_action")
        if action:
            add(step, "action", action, action.get("goal_id", ""))
    for step in steps:
        action = step.get("approved_action") or {}
        if action.get("rollback"):
            add(step, "rollback", action["rollback"], action.get("goal_id", ""))
        walk(step, step.get("recovery"))
    return calls


def session_id_for(workspace: str) -> str:
    """Stable id of a workspace: `<dir name>-<12 hex of its resolved path>`."""
    import hashlib

    path = os.path.realpath(os.path.expanduser(workspace))
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", os.path.basename(path)).strip("-.")[:40] or "root"
    return f"{name}-{hashlib.sha256(path.encode()).hexdigest()[:12]}"


def ledger_dir() -> str:
    """Where the signed active plans live: next to the key, outside every repository."""
    return os.path.join(os.path.dirname(key_path()), LEDGER_NAME)


def ledger_path(session_id: str) -> str:
    return os.path.join(ledger_dir(), f"{session_id}.json")


def _ancestors(path: str) -> list[str]:
    out = [path]
    while (parent := os.path.dirname(out[-1])) != out[-1]:
        out.append(parent)
    return out


def _index_problem(record: dict[str, Any], workspace: str) -> str | None:
    """Why the state directory that wrote the plan no longer vouches for it, or None."""
    root = record.get("checkpoints_root")
    if not isinstance(root, str):
        return "it does not say which state directory wrote it"
    try:
        index = read_json(index_path(root))
    except (StateFileError, OSError) as e:
        return f"its checkpoint index is unreadable ({e})"
    workspaces = index.get("workspaces") if isinstance(index, dict) else None
    if index is not None and not isinstance(workspaces, dict):
        return f"{index_path(root)} is not a massgen-mcp checkpoint index"
    entry = (workspaces or {}).get(workspace)
    if not isinstance(entry, dict) or not entry.get("active") or (
            entry.get("session_id") != record.get("session_id")):
        return f"{index_path(root)} does not mark it active"
    return None


def load_active_plan(cwd: str) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """(workspace, active plan, problem) for the hook.

    (None, None, None) when no plan is active for the cwd or a parent. The plan is None,
    with `problem` saying why, when it is not signed with this user's key, names another
    workspace, or its state directory no longer vouches for it. Never raises for bad
    state: a broken file suspends approvals, it does not block ordinary calls.
    """
    for workspace in _ancestors(os.path.realpath(cwd)):
        session_id = session_id_for(workspace)
        path = ledger_path(session_id)
        try:
            record = read_json(path)
        except (StateFileError, OSError) as e:
            return workspace, None, f"ignored the checkpoint plan: {e}"
        if record is None:
            continue
        problem = _verify(record, workspace, session_id)
        if problem:
            return workspace, None, f"ignored the checkpoint plan {path}: {problem}"
        return workspace, record, None
    return None, None, None


def _verify(record: Any, workspace: str, session_id: str) -> str | None:
    if not isinstance(record, dict):
        return "it is not an active plan"
    key = _read_key()
    import hmac

    signature = record.get("signature")
    if (key is None or not isinstance(signature, str)
            or not hmac.compare_digest(signature, _signature(key, record))):
        return (f"it is not signed with this user's key ({key_path()}), so this user's "
                "massgen-mcp did not write it")
    if record.get("workspace") != workspace or record.get("session_id") != session_id:
        return "it is for another workspace"
    return _index_problem(record, workspace)
