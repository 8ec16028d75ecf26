"""The machine-checkable dangerous patterns the hook enforces, each tied to a policy group.

`check_call(tool_name, tool_input, scope)` returns every `Finding` for one Claude Code tool
call: Bash commands (`bash_rules.py`), file writes (Write, Edit, MultiEdit, NotebookEdit:
secret files, guardrail files, anything outside the workspace; see `scope.py`), and MCP
tools (`mcp__<server>__<tool>`: a shell command or SQL in their arguments, a file path they
write, or a name whose verb has effects beyond the workspace: delete, deploy, send, merge,
grant, pay, ...). No findings means the call is ordinary work.

Choices (false positives we avoid on purpose):
- Only file-writing tools are path-checked; reading is not a tool this hook gates
  (Bash reads of secret files are: they print the secret into the transcript).
- massgen's own tools are never gated: the way out of a denial is calling `checkpoint`.
  "Ours" means the server name `setup` registers (`massgen`, exactly) and one of our tool
  names; `mcp__massgen-tools__delete_db` or `mcp__massgenx__...` are judged like any other.
Standard library only.
"""

from __future__ import annotations

from shlex import join

from massgen_mcp.hook.bash_rules import check_bash
from massgen_mcp.hook.command import wordset
from massgen_mcp.hook.matching import split_mcp_name
from massgen_mcp.hook.policy import Finding
from massgen_mcp.hook.scope import Scope, holds_secrets, secret_kind
from massgen_mcp.hook.secret_search import SECRET_SAMPLES
from massgen_mcp.hook.sql_rules import sql_finding
from massgen_mcp.regex import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the hook ~8 ms of start-up
    from typing import Any

WRITE_TOOLS: dict[str, str] = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}

OUR_SERVER = "massgen"
OUR_TOOLS = wordset(
    "run_consensus plan checkpoint_init checkpoint get_run list_runs cancel_run list_backends "
    "get_plan list_plans"
)
_WORDS = lazy(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_VERBS: dict[str, tuple[str, str]] = {}
for _group, _verbs, _what in (
    ("destruction", "delete drop destroy purge truncate wipe erase flush flushall flushdb nuke "
                    "reset", "deletes data"),
    ("prod_infra", "deploy terminate shutdown scale rollout reboot", "changes infrastructure"),
    ("source_control", "merge push", "changes a shared repository"),
    ("access_control", "grant revoke permission permissions collaborator visibility",
     "changes who can access what"),
    ("external_comms", "send email publish tweet sms notify post", "reaches people outside"),
    ("external_comms", "pay payment charge refund transfer purchase", "moves money"),
):
    for _verb in _verbs.split():
        _VERBS[_verb] = (_group, _what)

_COMMAND_ARGS = ("command", "cmd", "script", "shell_command", "bash", "argv")
_ARGV_ARGS = ("args", "argv", "arguments")
_SHELL_WORDS = wordset("shell exec execute run command cmd terminal bash sh process spawn "
                       "subprocess desktop commander")
READ_TOOLS: dict[str, str] = {"Read": "file_path", "NotebookRead": "notebook_path"}
_SQL_ARGS = ("sql", "query", "statement", "statements")
_SQL_HINTS = wordset(
    "sql postgres postgresql pg mysql sqlite db database supabase bigquery snowflake duckdb "
    "clickhouse neon turso planetscale query execute"
)
_PATH_ARGS = ("path", "file_path", "filepath", "file", "filename", "destination", "dest",
              "target", "target_path", "output_path")
_WRITE_VERBS = wordset("write edit create save put upload move copy append rename")


def name_words(name: str) -> list[str]:
    """`deleteFile` / `delete_file` / `delete-file` -> ["delete", "file"]."""
    return [w.lower() for w in _WORDS.findall(name)]


def _argv_line(argv: list[Any]) -> str:
    """An argv list as the command line it amounts to (each element one word)."""
    return join(str(a) for a in argv)


def command_lines(args: dict[str, Any], words: list[str]) -> list[str]:
    """The command lines an MCP tool's arguments carry: strings, argv lists, or a program
    with its argument list (`{"cmd": "git", "args": ["push", ...]}`)."""
    lines: list[str] = []
    shellish = bool(_SHELL_WORDS.intersection(words))
    from massgen_mcp.hook.programs import KNOWN

    program = next((w for w in words if w in KNOWN and w not in _SHELL_WORDS), None)
    if program:  # `mcp__k8s__kubectl {"args": [...]}`: the tool is that program
        lines.extend(program + " " + _argv_line(args[k]) for k in _ARGV_ARGS
                     if isinstance(args.get(k), list) and args[k])
    for key in _COMMAND_ARGS:
        value = args.get(key)
        if isinstance(value, str):
            rest = next((args[k] for k in _ARGV_ARGS if isinstance(args.get(k), list)), None)
            lines.append(value + " " + _argv_line(rest) if rest and shellish else value)
        elif isinstance(value, list) and value:
            lines.append(_argv_line(value))
    if shellish and not any(isinstance(args.get(k), str) for k in _COMMAND_ARGS):
        lines.extend(_argv_line(args[k]) for k in _ARGV_ARGS
                     if isinstance(args.get(k), list) and args[k])
    return lines


def check_call(tool_name: str, tool_input: dict[str, Any], scope: Scope) -> list[Finding]:
    """Every dangerous pattern one tool call matches (empty: ordinary work)."""
    if tool_name in READ_TOOLS:
        path = tool_input.get(READ_TOOLS[tool_name])
        finding = scope.read_finding(path) if isinstance(path, str) and path else None
        return [finding] if finding else []
    if tool_name == "Grep":
        return _grep_findings(tool_input, scope)
    if tool_name == "Bash":
        command = tool_input.get("command")
        return check_bash(command, scope) if isinstance(command, str) else []
    if tool_name in WRITE_TOOLS:
        path = tool_input.get(WRITE_TOOLS[tool_name])
        finding = scope.write_finding(path) if isinstance(path, str) and path else None
        return [finding] if finding else []
    mcp = split_mcp_name(tool_name)
    if mcp is not None:
        return _check_mcp(mcp[0], mcp[1], tool_input, scope)
    return []




def _grep_findings(tool_input: dict[str, Any], scope: Scope) -> list[Finding]:
    """The Grep tool prints what it matches: over a secret file or directory, or with a
    glob that picks secret files (`.env*`), it prints secrets."""
    import fnmatch

    out: list[Finding] = []
    path = tool_input.get("path")
    if isinstance(path, str) and path:
        where = scope.resolve(path)
        kind = secret_kind(where or path) or (scope.secret(path) if where else None) or (
            f"a directory holding {held}" if where and (
                held := holds_secrets(where, scope.home)) else None)
        if kind:
            out.append(Finding("secrets", "print-secret", f"Grep searches {path}, {kind}"))
    pattern = tool_input.get("pattern")
    if isinstance(path, str) and path and isinstance(pattern, str) and not out:
        from massgen_mcp.hook.secret_search import SECRETISH, secret_files_in

        where = scope.resolve(path)
        if where and SECRETISH.search(pattern) and (found := secret_files_in(where)):
            out.append(Finding("secrets", "print-secret",
                               f"Grep searches {path} for {pattern!r}, and it holds {found}"))
    glob = tool_input.get("glob")
    if isinstance(glob, str) and glob:
        last = glob.rstrip("/").rsplit("/", 1)[-1]
        for pattern in (p.strip() for p in last.strip("{}").split(",")):
            # ripgrep's globs follow gitignore rules: `*` matches a leading dot too
            hit = next((n for n in SECRET_SAMPLES if fnmatch.fnmatchcase(n, pattern)), None)
            if hit:
                out.append(Finding("secrets", "print-secret",
                                   f"Grep's glob {glob!r} picks secret files ({hit})"))
                break
    return out


def _check_mcp(server: str, tool: str, args: dict[str, Any], scope: Scope) -> list[Finding]:
    if server == OUR_SERVER and tool in OUR_TOOLS:
        return []
    findings: list[Finding] = []
    words = name_words(tool)
    for word in words:
        if word in _VERBS:
            group, what = _VERBS[word]
            findings.append(Finding(group, f"mcp-{word}",
                                    f"MCP tool {tool} on server {server} {what} ('{word}')"))
            break
    for line in command_lines(args, words + name_words(server)):
        findings.extend(check_bash(line, scope))
    if _SQL_HINTS.intersection(words + name_words(server)):
        for key in _SQL_ARGS:
            value = args.get(key)
            finding = sql_finding(value) if isinstance(value, str) else None
            if finding:
                findings.append(finding)
    if _WRITE_VERBS.intersection(words):
        for key in _PATH_ARGS:
            value = args.get(key)
            finding = scope.write_finding(value) if isinstance(value, str) and value else None
            if finding:
                findings.append(finding)
    return findings
