"""`massgen-mcp setup`: register the server with clients, add the hook, add instructions.

Idempotent: running it twice changes nothing. It only touches what it owns:

- Claude Code `.mcp.json`, Cursor `.cursor/mcp.json`, Gemini CLI `.gemini/settings.json`:
  `mcpServers.massgen`; VS Code `.vscode/mcp.json`: `servers.massgen`. An existing entry
  keeps its other keys (`env`, ...); only what setup owns is set.
- Codex `.codex/config.toml`: a `[mcp_servers.massgen]` table, edited with tomlkit, which
  keeps the user's comments and layout byte for byte. Our table carries the comment
  `# managed by massgen-mcp setup`; a `massgen` server without it is the user's own (a table,
  dotted keys or an inline table) and is an error, not a duplicate. Files written by older
  versions (a block between marker comments) are converted. An inline `mcp_servers` table
  has no room for the comment, so it is refused with the fix.
- `.claude/settings.json` (with hooks): one PreToolUse entry running
  `<command> hook pre-tool-use`, found again by its command and never duplicated; other
  hooks and settings are kept.

The command written is `launch_command()`: the bare name only when it finds this very
program outside a virtual environment, else the executable's absolute path, so the client
starts it whatever its PATH.
- CLAUDE.md / AGENTS.md (with instructions): a block between `<!-- massgen-mcp:begin -->`
  and `<!-- massgen-mcp:end -->`.
- `.claude/settings.json` (with the hook, unless `--no-sandbox`; or `--sandbox` alone):
  Claude Code's own OS sandbox for Bash (bubblewrap on Linux, Seatbelt on macOS) under
  `sandbox`, and `permissions.deny` rules for Claude Code's file tools; see
  `sandbox_settings`. The sandbox is the boundary (what a Bash call can touch at all); the
  hook is the policy inside it (what a plan approves). Keys setup does not own are kept;
  list entries it owns are merged in, never duplicated.

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

CLIENTS = ("claude", "codex", "cursor", "gemini", "vscode")
CLIENT_FILES = {"claude": ".mcp.json", "codex": ".codex/config.toml",
                "cursor": ".cursor/mcp.json", "gemini": ".gemini/settings.json",
                "vscode": ".vscode/mcp.json"}
INSTRUCTION_FILES = ("CLAUDE.md", "AGENTS.md")
# Read and Grep too: reading a secret or the guard's key is on the hard line.
HOOK_MATCHER = "Bash|Read|Grep|Write|Edit|MultiEdit|NotebookEdit|mcp__.*"
HOOK_TIMEOUT_S = 10
HOOK_ARGS = "hook pre-tool-use"
MD_BEGIN, MD_END = "<!-- massgen-mcp:begin -->", "<!-- massgen-mcp:end -->"
TOML_MANAGED = "managed by massgen-mcp setup"
# The marker block older versions wrote; found and converted.
TOML_BEGIN = "# >>> massgen-mcp (managed by `massgen-mcp setup`; edits inside are replaced)"
TOML_END = "# <<< massgen-mcp"
# Consensus and checkpoint runs take minutes; Codex's defaults (10 s start, 60 s per call)
# would cut them off.
CODEX_STARTUP_TIMEOUT_S = 30
CODEX_TOOL_TIMEOUT_S = 1800
# Gemini CLI's per-server request timeout (ms; its default of 10 minutes can cut a run off).
GEMINI_TIMEOUT_MS = CODEX_TOOL_TIMEOUT_S * 1000

# What each client asks before it starts a server registered in a project file.
TRUST_STEPS = {
    "claude": "start `claude` in this directory and approve the project server when asked "
              "(or run /mcp and enable massgen); `claude mcp list` then shows it connected",
    "codex": "trust this project (answer yes when codex asks, or add [projects.\"<this "
             "directory>\"] trust_level = \"trusted\" to ~/.codex/config.toml): Codex ignores "
             ".codex/config.toml in untrusted projects",
    "cursor": "open Settings → MCP (Tools & Integrations) and switch massgen on",
    "gemini": "trust this folder (answer the trust prompt, or /permissions): Gemini CLI "
              "disables project servers in untrusted folders",
    "vscode": "open .vscode/mcp.json and press Start above the massgen entry, then confirm "
              "that you trust the server",
}

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
5. Some actions are on a hard line no plan can approve: deleting a home directory, a
   system tree or `.git`, writing to a device, touching the guard's key, state or settings,
   reading or sending secrets. When one is denied, stop and ask the user.
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


def _mcp_json(command: list[str], key: str = "mcpServers", fresh: dict[str, Any] | None = None,
              owned: dict[str, Any] | None = None) -> Callable[[dict[str, Any], Path], None]:
    """Set `<key>.massgen`: `command`, `args` and the `owned` keys; a new entry also gets
    `fresh` (defaults the user may change)."""
    def edit(data: dict[str, Any], path: Path) -> None:
        servers = _section(data, key, path)
        entry = servers.get("massgen")
        ours = {**(owned or {}), "command": command[0], "args": list(command[1:])}
        if isinstance(entry, dict):
            servers["massgen"] = {**entry, **ours}
        else:
            servers["massgen"] = {**ours, **(fresh if fresh is not None else {"env": {}})}
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


# What the sandboxed Bash may not read (where the sandbox can deny reads), besides the
# guard's key directory: the user's credential stores.
SECRET_DIRS = ("~/.ssh", "~/.aws", "~/.gnupg", "~/.kube", "~/.docker/config.json",
               "~/.netrc", "~/.git-credentials", "~/.pypirc", "~/.npmrc", "~/.config/gcloud",
               "~/.azure")


def _home_form(path: Path) -> str:
    """`~/...` for a path under home (settings stay valid for the user), else absolute."""
    home = Path.home().resolve()
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def sandbox_settings(project: Path, allow_domains: list[str] | None = None
                     ) -> tuple[dict[str, Any], list[str]]:
    """(the `sandbox` block, the `permissions.deny` rules) `setup --sandbox` writes.

    - Bash runs in Claude Code's sandbox, or not at all: `failIfUnavailable`, and the
      model's `dangerouslyDisableSandbox` is ignored (`allowUnsandboxedCommands: false`).
    - Writes: the project and Claude Code's private temp dir (its default), minus the
      guard's own files in the project (checkpoint state, Claude Code settings).
    - Reads: everything except the guard's key directory and the user's credential stores.
    - Network: `allow_domains` when given; else Claude Code asks for each new domain.
    - Claude Code's own Read/Edit tools (which the OS sandbox does not cover) get the same
      denies as permission rules.
    """
    from massgen_mcp.hook.active import key_path

    keys = _home_form(Path(key_path()).expanduser().resolve().parent)
    deny_read = [keys, *SECRET_DIRS]
    deny_write = [keys, "./.massgen/checkpoints", "./.claude/settings.json",
                  "./.claude/settings.local.json"]
    block: dict[str, Any] = {
        "enabled": True, "failIfUnavailable": True, "allowUnsandboxedCommands": False,
        "filesystem": {"denyRead": deny_read, "denyWrite": deny_write},
    }
    if allow_domains:
        block["network"] = {"allowedDomains": list(dict.fromkeys(allow_domains))}
    rules = [f"Read({keys}/**)", f"Edit({keys}/**)", "Edit(./.massgen/checkpoints/**)",
             *(f"Read({d}/**)" if not d.endswith(("json", "netrc", "credentials", "pypirc",
                                                   "npmrc")) else f"Read({d})"
               for d in SECRET_DIRS)]
    return block, rules


def _sandbox_entry(project: Path, allow_domains: list[str] | None
                   ) -> Callable[[dict[str, Any], Path], None]:
    block, rules = sandbox_settings(project, allow_domains)

    def merge_list(section: dict[str, Any], key: str, values: list[str], path: Path) -> None:
        current = section.setdefault(key, [])
        if not isinstance(current, list):
            raise InputError(f"{path}: '{key}' must be a list")
        current.extend(v for v in values if v not in current)

    def edit(data: dict[str, Any], path: Path) -> None:
        sandbox = _section(data, "sandbox", path)
        for key, value in block.items():
            if isinstance(value, dict):
                section = _section(sandbox, key, path)
                for inner, values in value.items():
                    merge_list(section, inner, values, path)
            else:
                sandbox[key] = value
        merge_list(_section(data, "permissions", path), "deny", rules, path)
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


def _codex_table(command: list[str]) -> Any:
    import tomlkit

    table = tomlkit.table()
    table.comment(TOML_MANAGED)
    table.update({"command": command[0], "args": list(command[1:]),
                  "startup_timeout_sec": CODEX_STARTUP_TIMEOUT_S,
                  "tool_timeout_sec": CODEX_TOOL_TIMEOUT_S})
    table.add(tomlkit.nl())
    return table


def _codex_text(text: str, command: list[str], path: Path) -> str:
    import tomlkit
    from tomlkit.container import OutOfOrderTableProxy
    from tomlkit.exceptions import TOMLKitError
    from tomlkit.items import InlineTable, Table

    start = text.find(TOML_BEGIN)  # a block written by an older setup: ours, replaced
    if start != -1 and (stop := text.find(TOML_END, start)) != -1:
        text = text[:start].rstrip("\n") + "\n" + text[stop + len(TOML_END):].lstrip("\n")
        text = "" if not text.strip() else text
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as e:
        raise InputError(f"{path} is not valid TOML ({e}); fix it and run setup "
                         "again") from None
    servers = doc.get("mcp_servers")
    if isinstance(servers, InlineTable) or (
            servers is not None and not isinstance(servers, Table | OutOfOrderTableProxy)):
        raise InputError(f"{path}: mcp_servers is an inline table, which has no room for the "
                         "massgen-mcp marker; write its servers as [mcp_servers.<name>] tables, "
                         "or add the massgen entry by hand (see the docs), and rerun")
    table = _codex_table(command)
    if servers is None:
        servers = tomlkit.table(is_super_table=True)
        servers.add("massgen", table)
        doc.add("mcp_servers", servers)
    elif "massgen" in servers:
        old = servers["massgen"]
        if not (isinstance(old, Table) and TOML_MANAGED in old.trivia.comment):
            raise InputError(f"{path} already defines the massgen server (mcp_servers.massgen) "
                             "without the massgen-mcp marker; remove it (setup manages it) "
                             "and rerun")
        if old.unwrap() == table.unwrap():
            return text  # a second run changes no byte
        servers["massgen"] = table
    else:
        servers["massgen"] = table
    return tomlkit.dumps(doc)


def run_setup(
    project_dir: str | Path,
    clients: list[str],
    hooks: bool,
    instructions: str | None,
    command: list[str] | None = None,
    *,
    sandbox: bool | None = None,
    allow_domains: list[str] | None = None,
) -> list[str]:
    """Write the registrations, hook and instructions; return what changed ([] if nothing).

    `command` is what clients run to start the server (default: `launch_command()`).
    `sandbox`: turn on Claude Code's OS sandbox for Bash (`sandbox_settings`); None (the
    default) means "with the hook": the hook alone is advisory, the sandbox is the boundary."""
    if sandbox is None:
        sandbox = hooks
    if not command:
        from massgen_mcp.cli.launch import launch_command

        command = launch_command()
    command = list(command)
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
        plan_json(CLIENT_FILES["claude"], _mcp_json(command), "mcpServers.massgen")
    if "cursor" in clients:
        plan_json(CLIENT_FILES["cursor"], _mcp_json(command), "mcpServers.massgen")
    if "gemini" in clients:
        plan_json(CLIENT_FILES["gemini"], _mcp_json(command, fresh={
            "timeout": GEMINI_TIMEOUT_MS}), "mcpServers.massgen")
    if "vscode" in clients:
        plan_json(CLIENT_FILES["vscode"], _mcp_json(command, "servers", fresh={},
                                                    owned={"type": "stdio"}), "servers.massgen")
    if "codex" in clients:
        plan_text(CLIENT_FILES["codex"], lambda t, p: _codex_text(t, command, p),
                  "[mcp_servers.massgen]")
    if sandbox and not hooks and "claude" not in clients:
        raise InputError("--sandbox is Claude Code's sandbox: use it with --client claude")
    if hooks or sandbox:
        edits = [e for e, on in ((_hook_entry(command), hooks),
                                 (_sandbox_entry(project, allow_domains), sandbox)) if on]

        def settings(data: dict[str, Any], path: Path) -> None:
            for edit in edits:
                edit(data, path)

        what = " and ".join(w for w, on in (("PreToolUse hook", hooks),
                                            ("Bash sandbox", sandbox)) if on)
        plan_json(".claude/settings.json", settings, what)
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
