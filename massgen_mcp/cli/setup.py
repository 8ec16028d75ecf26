"""`massgen-mcp setup`: register the server with clients, add the hook, add instructions.

Idempotent: running it twice changes nothing. It only touches what it owns:

- Claude Code `.mcp.json` / Cursor `.cursor/mcp.json`: `mcpServers.massgen`. An existing
  entry keeps its other keys (`env`, ...); only `command` and `args` are set.
- Codex `.codex/config.toml`: a managed block between marker comments holding
  `[mcp_servers.massgen]`, appended at the end of the file the first time (a TOML table runs
  to the next header, so the end is the one safe place) and rewritten in place later.
  Everything outside the markers is the user's. A `[mcp_servers.massgen]` table outside the
  block is an error rather than a duplicate table.
- `.claude/settings.json` (with hooks): one PreToolUse entry running
  `massgen-mcp hook pre-tool-use`, found again by its command and never duplicated; other
  hooks and settings are kept.
- CLAUDE.md / AGENTS.md (with instructions): a block between `<!-- massgen-mcp:begin -->`
  and `<!-- massgen-mcp:end -->`.

All files are read and checked before any is written, so a malformed JSON file stops the
whole run with a clear error and nothing half-done.
"""

from __future__ import annotations

import copy
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from massgen_mcp.errors import InputError
from massgen_mcp.paths import write_atomic

CLIENTS = ("claude", "codex", "cursor")
INSTRUCTION_FILES = ("CLAUDE.md", "AGENTS.md")
HOOK_MATCHER = "Bash|Write|Edit|MultiEdit|NotebookEdit|mcp__.*"
HOOK_TIMEOUT_S = 10
HOOK_ARGS = "hook pre-tool-use"
MD_BEGIN, MD_END = "<!-- massgen-mcp:begin -->", "<!-- massgen-mcp:end -->"
TOML_BEGIN = "# >>> massgen-mcp (managed by `massgen-mcp setup`; edits inside are replaced)"
TOML_END = "# <<< massgen-mcp"
# Consensus and checkpoint runs take minutes; Codex's defaults (10 s start, 60 s per call)
# would cut them off.
CODEX_STARTUP_TIMEOUT_S = 30
CODEX_TOOL_TIMEOUT_S = 1800

INSTRUCTIONS = """\
## Safety checkpoints (massgen-mcp)

Before a risky phase (deploying, deleting or migrating data, force-pushing, sending
messages or email, publishing, touching credentials or shared infrastructure):

1. Once per workspace, call the massgen `checkpoint_init` tool with `workspace_dir` (this
   project), `original_task` (what you were asked to do) and `available_tools` (every
   tool you may call, with `name`, `description` and `input_schema`, including Bash,
   Write and Edit). Optional: `trajectory_path`, `environment`, `safety_policy`.
2. Call `checkpoint` with the `objective` of the phase, `action_goals` (one per risky
   action, with an `id`) and any `eval_criteria`. A team of reviewers returns a plan.
3. Follow the plan step by step: verify and back up first, respect each step's
   preconditions and constraints, and make each approved call exactly as written, filling
   only the `<executor-fills: ...>` values. When a step fails, do what its recovery says
   (compensate, recheckpoint or terminate).
4. A PreToolUse hook enforces this: dangerous calls without an approving plan, and calls
   that stray from the active plan, are blocked with the step to follow. If the situation
   changed, call `checkpoint` again instead of working around the hook; never edit
   `.claude/settings.json` or `.massgen/` to get past it.
"""


def _load_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except json.JSONDecodeError as e:
        raise InputError(f"{path} is not valid JSON (line {e.lineno}, column {e.colno}: "
                         f"{e.msg}); fix or remove it and run setup again") from None
    if not isinstance(data, dict):
        raise InputError(f"{path} must hold a JSON object; fix it and run setup again")
    return data


def _section(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise InputError(f"{path}: '{key}' must be an object")
    return value


def _mcp_json(command: list[str]) -> Callable[[dict[str, Any], Path], None]:
    def edit(data: dict[str, Any], path: Path) -> None:
        servers = _section(data, "mcpServers", path)
        entry = servers.get("massgen")
        if isinstance(entry, dict):
            servers["massgen"] = {**entry, "command": command[0], "args": list(command[1:])}
        else:
            servers["massgen"] = {"command": command[0], "args": list(command[1:]), "env": {}}
    return edit


def _hook_entry(command: list[str]) -> Callable[[dict[str, Any], Path], None]:
    hook_command = f"{shlex.join(command)} {HOOK_ARGS}"

    def ours(hook: Any) -> bool:
        return isinstance(hook, dict) and HOOK_ARGS in str(hook.get("command", "")) and (
            "massgen" in str(hook.get("command", "")))

    def edit(data: dict[str, Any], path: Path) -> None:
        entries = _section(data, "hooks", path).setdefault("PreToolUse", [])
        if not isinstance(entries, list):
            raise InputError(f"{path}: 'hooks.PreToolUse' must be a list")
        wanted = {"type": "command", "command": hook_command, "timeout": HOOK_TIMEOUT_S}
        for entry in entries:
            hooks = entry.get("hooks") if isinstance(entry, dict) else None
            if isinstance(hooks, list) and any(ours(h) for h in hooks):
                entry["matcher"] = HOOK_MATCHER
                entry["hooks"] = [wanted if ours(h) else h for h in hooks]
                return
        entries.append({"matcher": HOOK_MATCHER, "hooks": [wanted]})
    return edit


def _replace_block(text: str, begin: str, end: str, block: str, where: str) -> str:
    """Put `block` (markers included) in place of the old one, or append it."""
    start = text.find(begin)
    if start == -1:
        return (text.rstrip("\n") + "\n\n" if text.strip() else "") + block
    stop = text.find(end, start)
    if stop == -1:
        raise InputError(f"{where}: found {begin!r} without {end!r}; restore or remove the "
                         "marker and run setup again")
    return text[:start] + block.rstrip("\n") + text[stop + len(end):]


def _codex_block(command: list[str]) -> str:
    def toml(value: Any) -> str:  # JSON strings and lists are valid TOML basic values
        return json.dumps(value, ensure_ascii=False)

    return "\n".join([
        TOML_BEGIN, "[mcp_servers.massgen]", f"command = {toml(command[0])}",
        f"args = {toml(list(command[1:]))}",
        f"startup_timeout_sec = {CODEX_STARTUP_TIMEOUT_S}",
        f"tool_timeout_sec = {CODEX_TOOL_TIMEOUT_S}", TOML_END, "",
    ])


def _codex_text(text: str, command: list[str], path: Path) -> str:
    outside = text
    if TOML_BEGIN in text and TOML_END in text:
        start = text.find(TOML_BEGIN)
        outside = text[:start] + text[text.find(TOML_END, start) + len(TOML_END):]
    if any(line.strip().replace(" ", "") in ("[mcp_servers.massgen]", '[mcp_servers."massgen"]')
           for line in outside.splitlines()):
        raise InputError(f"{path} already defines [mcp_servers.massgen] outside the "
                         "massgen-mcp block; remove that table (setup manages it) and rerun")
    return _replace_block(text, TOML_BEGIN, TOML_END, _codex_block(command), str(path))


def run_setup(
    project_dir: str | Path,
    clients: list[str],
    hooks: bool,
    instructions: str | None,
    command: list[str] | None = None,
) -> list[str]:
    """Write the registrations, hook and instructions; return what changed ([] if nothing)."""
    command = list(command or ["massgen-mcp"])
    project = Path(project_dir).expanduser().resolve()
    if not project.is_dir():
        raise InputError(f"project directory {str(project_dir)!r} does not exist")
    unknown = [c for c in clients if c not in CLIENTS]
    if unknown:
        raise InputError(f"unknown client {unknown[0]!r}: choose from {', '.join(CLIENTS)}")
    if instructions is not None and instructions not in INSTRUCTION_FILES:
        raise InputError(f"instructions must be one of {', '.join(INSTRUCTION_FILES)}")

    writes: list[tuple[Path, str, str]] = []  # (path, new text, what)

    def plan_json(rel: str, edit: Callable[[dict[str, Any], Path], None], what: str) -> None:
        path = project / rel
        data = _load_json(path)
        before = copy.deepcopy(data)
        edit(data, path)
        if data != before or not path.exists():
            writes.append((path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", what))

    def plan_text(rel: str, make: Callable[[str, Path], str], what: str) -> None:
        path = project / rel
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        new = make(old, path)
        if new != old:
            writes.append((path, new, what))

    if "claude" in clients:
        plan_json(".mcp.json", _mcp_json(command), "mcpServers.massgen")
    if "cursor" in clients:
        plan_json(".cursor/mcp.json", _mcp_json(command), "mcpServers.massgen")
    if "codex" in clients:
        plan_text(".codex/config.toml", lambda t, p: _codex_text(t, command, p),
                  "[mcp_servers.massgen]")
    if hooks:
        plan_json(".claude/settings.json", _hook_entry(command), "PreToolUse hook")
    if instructions:
        block = f"{MD_BEGIN}\n{INSTRUCTIONS}{MD_END}\n"
        plan_text(instructions, lambda t, p: _replace_block(t, MD_BEGIN, MD_END, block, str(p)),
                  "checkpoint instructions")

    changes = []
    for path, text, what in writes:
        verb = "updated" if path.exists() else "created"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
        changes.append(f"{verb} {path.relative_to(project)} ({what})")
    return changes
