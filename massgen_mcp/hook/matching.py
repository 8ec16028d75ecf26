"""Does a tool call match an approved action? Tool names, arguments and placeholders.

Rules (the hook's, documented for reviewers in the plan instructions):

- Tool names match exactly, or an MCP tool `mcp__<server>__<tool>` matches the bare
  `<tool>` (either side may be the bare one; two different servers never match).
- Bash matches on the `command` string only (Claude Code's `description`, `timeout` and
  `run_in_background` do not change what runs); runs of whitespace compare equal.
- Other tools: every approved argument must match, and an argument the approval does not
  name is a mismatch (an unplanned `force: true` must not slip through). File paths
  (`file_path`, `notebook_path`, `path`) compare after resolving against the workspace.
- `<executor-fills: what>` in an approved value matches any value there. Inside a Bash
  command a filled value may not contain `; & | $ \\` < > ( )` or a newline, so a
  placeholder cannot smuggle in a second command.
Standard library only.
"""

from __future__ import annotations

import os
import re

from massgen_mcp.regex import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the hook ~8 ms of start-up
    from typing import Any

PLACEHOLDER = lazy(r"<\s*executor-fills\s*:[^>]*>", re.I)
_WHOLE_PLACEHOLDER = lazy(r"^\s*<\s*executor-fills\s*:[^>]*>\s*$", re.I)
_BASH_IGNORED = frozenset({"description", "timeout", "run_in_background"})
_PATH_KEYS = frozenset({"file_path", "notebook_path", "path"})
_SHELL_SAFE_FILL = r"[^;&|$`<>()\n]+"


def split_mcp_name(tool_name: str) -> tuple[str, str] | None:
    """`mcp__server__tool` -> ("server", "tool"); None for a non-MCP tool name."""
    if not tool_name.startswith("mcp__"):
        return None
    parts = tool_name.split("__", 2)
    if len(parts) < 3 or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def same_tool(approved: str, actual: str) -> bool:
    """True if `approved` names the tool `actual` (full MCP name or bare tool name)."""
    if approved == actual:
        return True
    a, b = split_mcp_name(approved), split_mcp_name(actual)
    if a is None and b is not None:
        return approved == b[1]
    if b is None and a is not None:
        return actual == a[1]
    return False


def _literal(part: str) -> str:
    words = part.split()
    if not words:
        return r"\s*" if part else ""
    lead = r"\s+" if part[0].isspace() else ""
    trail = r"\s+" if part[-1].isspace() else ""
    return lead + r"\s+".join(re.escape(w) for w in words) + trail


def _template(pattern: str, fill: str) -> re.Pattern[str]:
    """A regex for `pattern` where each placeholder matches `fill` and whitespace is loose."""
    literals = [_literal(part) for part in PLACEHOLDER.split(pattern)]
    return re.compile(f"(?:{fill})".join(literals), re.S)


def bash_matches(approved_command: str, actual_command: str) -> bool:
    """Does an actual Bash command match an approved one (placeholders shell-safe)?"""
    if not PLACEHOLDER.search(approved_command):
        return approved_command.split() == actual_command.split()
    return _template(approved_command.strip(), _SHELL_SAFE_FILL).fullmatch(
        actual_command.strip()) is not None


def _norm_path(value: str, base: str) -> str:
    return os.path.normpath(os.path.join(base, os.path.expanduser(value)))


def value_matches(approved: Any, actual: Any, *, key: str = "", base: str = "") -> bool:
    """Does one argument value match its approved value (recursively, with placeholders)?"""
    if isinstance(approved, str):
        if _WHOLE_PLACEHOLDER.match(approved):
            return True
        if not isinstance(actual, str):
            return False
        if PLACEHOLDER.search(approved):
            return _template(approved, r".+").fullmatch(actual) is not None
        if key in _PATH_KEYS and base:
            return _norm_path(approved, base) == _norm_path(actual, base)
        return approved == actual
    if isinstance(approved, dict):
        return isinstance(actual, dict) and args_match(approved, actual, base=base)
    if isinstance(approved, list):
        return (isinstance(actual, list) and len(approved) == len(actual)
                and all(value_matches(a, b, base=base) for a, b in zip(approved, actual,
                                                                          strict=True)))
    if isinstance(approved, bool) or isinstance(actual, bool):
        return approved is actual
    return bool(approved == actual)


def args_match(approved: dict[str, Any], actual: dict[str, Any], *, base: str = "") -> bool:
    """Every approved key matches and the call adds no key the approval does not name."""
    if set(actual) - set(approved):
        return False
    return all(
        key in actual and value_matches(value, actual[key], key=key, base=base)
        for key, value in approved.items()
    )


def call_matches(approved_tool: str, approved_args: Any, tool_name: str,
                 tool_input: dict[str, Any], *, base: str = "") -> bool:
    """Does the call `tool_name(tool_input)` match the approved action?"""
    if not same_tool(approved_tool, tool_name) or not isinstance(approved_args, dict):
        return False
    if tool_name == "Bash":
        command, approved_command = tool_input.get("command"), approved_args.get("command")
        extra = set(approved_args) - {"command"} - _BASH_IGNORED
        return (isinstance(command, str) and isinstance(approved_command, str) and not extra
                and bash_matches(approved_command, command))
    return args_match(approved_args, tool_input, base=base)
