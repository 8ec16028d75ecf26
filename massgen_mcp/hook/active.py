"""The active checkpoint plan of a workspace: written by the server, read by the hook.

Layout, under a state directory (see `massgen_mcp.paths`)::

    checkpoints/index.json                 {"version": 1, "workspaces": {"/abs/ws": {
                                             "session_id": "...", "active": true|false}}}
    checkpoints/<session_id>/active_plan.json   the latest approved plan + its approved actions

The hook finds a workspace from its `cwd`: it tries `$MASSGEN_MCP_HOME`, then `.massgen/`
in the cwd and each parent, reads `checkpoints/index.json` there (one small file), and
takes the deepest registered workspace that contains the cwd. Only when that workspace has
an active plan does it read a second file. Every write is atomic (temp file + rename), so
the hook never sees half a file.

Trust: `.massgen/` usually sits inside the repository, where anyone who can commit, or an
agent with a shell, can write. So (1) an index found in `<dir>/.massgen/` may only register
workspaces at or under `<dir>` (it cannot declare `/` the workspace), and (2) an active plan
is honoured only with a valid HMAC-SHA256 signature made with this user's key, which lives
outside every repository (`$MASSGEN_MCP_KEY_FILE`, default
`$XDG_CONFIG_HOME/massgen-mcp/plan.key`, created 0600 on the first plan). A plan without a
valid signature is ignored (the hook falls back to the built-in patterns) and reported:
a committed or forged `.massgen/` cannot pre-approve `rm -rf ~`.

Standard library only, and no pathlib: the hook imports this before every tool call.
"""

from __future__ import annotations

import contextlib
import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the hook ~8 ms of start-up
    from typing import Any

# Mirrors massgen_mcp.paths (STATE_DIR_ENV, the `.massgen` default, checkpoints_dir), which
# imports pathlib; the hook's start-up budget is why the three names are repeated here.
STATE_DIR_ENV = "MASSGEN_MCP_HOME"
DEFAULT_STATE_NAME = ".massgen"
CHECKPOINTS = "checkpoints"
INDEX_NAME = "index.json"
ACTIVE_NAME = "active_plan.json"
FORMAT_VERSION = 1
KEY_FILE_ENV = "MASSGEN_MCP_KEY_FILE"


def write_json_atomic(path: str, data: Any) -> None:
    """Write JSON so readers see the old file or the new one, never a torn one."""
    import tempfile  # writers only; the hook never pays for it

    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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
    """Make `record` the workspace's active plan, signed; returns the file written."""
    path = active_path(checkpoints_root, session_id)
    full = {"version": FORMAT_VERSION, "workspace": workspace, "session_id": session_id,
            **record}
    full["signature"] = _signature(_ensure_key(), full)
    write_json_atomic(path, full)
    register_workspace(checkpoints_root, workspace, session_id, active=True)
    return path


def clear_active_plan(checkpoints_root: str, workspace: str) -> bool:
    """Deactivate a workspace's plan (the hook then only applies the built-in patterns).

    Returns True if a plan was active. The plan file itself stays in the audit trail.
    """
    index = _load_index(checkpoints_root)
    entry = index["workspaces"].get(workspace)
    if not entry or not entry.get("active"):
        return False
    register_workspace(checkpoints_root, workspace, entry["session_id"], active=False)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(active_path(checkpoints_root, entry["session_id"]))
    return True


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


def candidate_state_dirs(cwd: str) -> list[tuple[str, str | None]]:
    """Where the hook looks for state, each with the directory it may speak for.

    `$MASSGEN_MCP_HOME` (the user chose it: any workspace), then `.massgen/` in the cwd and
    each parent (only workspaces at or under the directory holding that `.massgen/`).
    """
    dirs: list[tuple[str, str | None]] = []
    env = os.environ.get(STATE_DIR_ENV)
    if env:
        dirs.append((os.path.realpath(os.path.expanduser(env)), None))
    path = cwd
    while True:
        dirs.append((os.path.join(path, DEFAULT_STATE_NAME), path))
        parent = os.path.dirname(path)
        if parent == path:
            return dirs
        path = parent


def find_workspace(cwd: str) -> tuple[str, str, dict[str, Any]] | None:
    """(workspace, checkpoints_root, index entry) of the deepest workspace holding `cwd`.

    Raises StateFileError if an index file is malformed (the hook's on-error policy decides).
    """
    cwd = os.path.realpath(cwd)
    for state, owner in candidate_state_dirs(cwd):
        root = os.path.join(state, CHECKPOINTS)
        index = read_json(index_path(root))
        if index is None:
            continue
        workspaces = index.get("workspaces") if isinstance(index, dict) else None
        if not isinstance(workspaces, dict):
            raise StateFileError(f"{index_path(root)} is not a massgen-mcp checkpoint index")
        matches = [ws for ws in workspaces if is_under(cwd, ws)
                   and (owner is None or is_under(ws, owner))]
        if matches:
            workspace = max(matches, key=len)
            return workspace, root, workspaces[workspace]
    return None


def load_active_plan(cwd: str) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """(workspace, active plan, problem) for the hook.

    (None, None, None) when no workspace is registered; the plan is None when there is no
    active plan, or when it is not signed with this user's key (then `problem` says so).
    """
    found = find_workspace(cwd)
    if found is None:
        return None, None, None
    workspace, root, entry = found
    if not entry.get("active"):
        return workspace, None, None
    path = active_path(root, str(entry.get("session_id")))
    record = read_json(path)
    if record is None:
        return workspace, None, None
    if not isinstance(record, dict):
        raise StateFileError(f"{path} is not an active plan")
    key = _read_key()
    import hmac

    signature = record.get("signature")
    if (key is None or not isinstance(signature, str)
            or not hmac.compare_digest(signature, _signature(key, record))):
        return workspace, None, (f"ignored the checkpoint plan {path}: it is not signed with "
                                 f"this user's key ({key_path()}), so this user's massgen-mcp "
                                 "did not write it")
    if record.get("workspace") != workspace:
        return workspace, None, f"ignored the checkpoint plan {path}: it is for another workspace"
    return workspace, record, None
