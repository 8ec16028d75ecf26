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

Approvals are bound to the *current* checkpoint. Each activation gets a fresh nonce and
the next number of a per-workspace sequence, both inside the signed record and in a signed
mark, `<key dir>/marks/<session_id>.json`, that the server rewrites on every activation and
deactivation. The hook honours a record only if it carries the mark's sequence and nonce
and the mark says active, and it keeps its own high-water mark of the sequence
(`<key dir>/seen/<session_id>.json`), so a byte-for-byte copy of an older or deactivated
record approves nothing, nor does an older mark put back with it. Writing into, or reading
from, the key directory is a hardline call (`hardline.py`): no plan approves it.

Every state file is read with `read_json`: a regular file of at most 4 MiB, opened without
blocking (a FIFO cannot hang the hook), a final symlink only inside its own directory.
Anything else is a `StateFileError`, on which the hook denies (fails closed). Every write
is atomic (temp file + rename).

Standard library only, and no pathlib: the hook imports this before every tool call.
"""

from __future__ import annotations

import contextlib
import json
import os
import re

# Re-exported: the server's writers and the tests use them from here.
from massgen_mcp.hook.statefile import (
    MAX_STATE_BYTES,
    StateFileError,
    read_bytes,
    read_json,
    read_text,
    write_json_atomic,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the hook ~8 ms of start-up
    from typing import Any

INDEX_NAME = "index.json"
ACTIVE_NAME = "active_plan.json"
FORMAT_VERSION = 1
KEY_FILE_ENV = "MASSGEN_MCP_KEY_FILE"
LEDGER_NAME = "active"


__all__ = ["MAX_STATE_BYTES", "StateFileError", "read_bytes", "read_json", "read_text",
           "write_json_atomic"]


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
    return read_bytes(key_path(), 4096)


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

    It replaces the workspace's previous plan, whose approvals end here: the record gets a
    fresh nonce and the next sequence number, and the signed mark now names only it.
    """
    key = _ensure_key()
    sequence = _next_sequence(session_id)
    nonce = os.urandom(16).hex()
    full = {"version": FORMAT_VERSION, "workspace": workspace, "session_id": session_id,
            "checkpoints_root": os.path.realpath(checkpoints_root), **record,
            "sequence": sequence, "nonce": nonce}
    full["signature"] = _signature(key, full)
    _write_mark(key, session_id, sequence, nonce, active=True)
    ledger = ledger_path(session_id)
    write_json_atomic(ledger, full)
    write_json_atomic(active_path(checkpoints_root, session_id), full)
    register_workspace(checkpoints_root, workspace, session_id, active=True)
    return ledger


def clear_active_plan(checkpoints_root: str, workspace: str) -> bool:
    """Deactivate a workspace's plan (the hook then only applies the built-in patterns).

    Returns True if a plan was active. The checkpoint records stay in the audit trail; the
    mark moves past them, so none of them can be put back into force.
    """
    session_id = session_id_for(workspace)
    was_active = os.path.exists(ledger_path(session_id))
    if was_active or os.path.exists(mark_path(session_id)):
        _write_mark(_ensure_key(), session_id, _next_sequence(session_id), "", active=False)
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


def mark_path(session_id: str) -> str:
    return os.path.join(ledger_dir_root(), "marks", f"{session_id}.json")


def seen_path(session_id: str) -> str:
    return os.path.join(ledger_dir_root(), "seen", f"{session_id}.json")


def ledger_dir_root() -> str:
    return os.path.dirname(key_path())


def _next_sequence(session_id: str) -> int:
    """One past every sequence this session has used (mark, ledger, what the hook saw)."""
    highest = 0
    for path in (mark_path(session_id), ledger_path(session_id), seen_path(session_id)):
        with contextlib.suppress(StateFileError, OSError):
            data = read_json(path)
            if isinstance(data, dict) and isinstance(data.get("sequence"), int):
                highest = max(highest, data["sequence"])
    return highest + 1


def _write_mark(key: bytes, session_id: str, sequence: int, nonce: str, *, active: bool) -> None:
    mark = {"session_id": session_id, "sequence": sequence, "nonce": nonce, "active": active}
    mark["signature"] = _signature(key, mark)
    write_json_atomic(mark_path(session_id), mark)


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
    index = read_json(index_path(root))  # unsafe or malformed: StateFileError, the hook denies
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
    workspace, is not the current checkpoint (sequence and nonce of the signed mark), or
    its state directory no longer vouches for it. A state file that cannot be read safely
    raises StateFileError: the hook then denies (it never guesses).
    """
    for workspace in _ancestors(os.path.realpath(cwd)):
        session_id = session_id_for(workspace)
        path = ledger_path(session_id)
        record = read_json(path)
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
    return _current_problem(key, record, session_id) or _index_problem(record, workspace)


def _current_problem(key: bytes, record: dict[str, Any], session_id: str) -> str | None:
    """Why `record` is not the current checkpoint's approval (None when it is)."""
    import hmac

    mark = read_json(mark_path(session_id))
    signature = mark.get("signature") if isinstance(mark, dict) else None
    if not isinstance(mark, dict) or not isinstance(signature, str) or not (
            hmac.compare_digest(signature, _signature(key, mark))):
        return (f"its checkpoint mark {mark_path(session_id)} is missing or not signed with "
                "this user's key")
    sequence, nonce = record.get("sequence"), record.get("nonce")
    if not isinstance(sequence, int) or not isinstance(nonce, str) or not nonce:
        return "it carries no checkpoint sequence and nonce (written by an older massgen-mcp)"
    seen = read_json(seen_path(session_id))
    high = seen.get("sequence") if isinstance(seen, dict) else None
    current = mark.get("sequence")
    if not isinstance(current, int) or (isinstance(high, int) and current < high):
        return (f"its mark is older than checkpoint #{high}, which this hook already saw (an "
                "old copy was put back)")
    if not isinstance(high, int) or high < current:
        with contextlib.suppress(OSError):  # a read-only key dir must not deny good calls
            write_json_atomic(seen_path(session_id), {"sequence": current})
    if not mark.get("active") or mark.get("sequence") != sequence or not hmac.compare_digest(
            str(mark.get("nonce", "")), nonce):
        return (f"it is checkpoint #{sequence}, not the current one (#{mark.get('sequence')}"
                f"{'' if mark.get('active') else ', deactivated'}): a superseded approval "
                "approves nothing")
    return None
