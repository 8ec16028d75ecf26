"""The operator's additions to the hard line: where they are and how they read (`hardline.py`
applies them). Standard library only.

One rule a line in `$MASSGEN_MCP_HARDLINE_FILE` (default `hardline.txt` next to the key,
where the agent can neither read nor write; `#` starts a comment)::

    path /srv/prod/**          no call may read, write or delete there
    command terraform destroy  no Bash command starting with these words
    tool mcp__payments__*      no call to these tools (a glob on the tool name)
"""

from __future__ import annotations

import fnmatch
import os

from massgen_mcp.hook.active import key_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from massgen_mcp.hook.scope import Scope

HARDLINE_FILE_ENV = "MASSGEN_MCP_HARDLINE_FILE"


def hardline_file() -> str:
    return os.environ.get(HARDLINE_FILE_ENV) or os.path.join(
        os.path.realpath(os.path.dirname(key_path())), "hardline.txt")


def operator_rules() -> list[tuple[str, str]]:
    """(kind, value) from the operator's file; kind is path, command or tool."""
    from massgen_mcp.hook.active import read_text

    text = read_text(hardline_file())
    rules: list[tuple[str, str]] = []
    for line in (text or "").splitlines():
        line = line.split("#", 1)[0].strip()
        kind, _, value = line.partition(" ")
        if kind in ("path", "command", "tool") and value.strip():
            rules.append((kind, value.strip()))
    return rules


def operator_findings(tool: str, tool_input: dict[str, Any], scope: Scope,
                      command: str | None) -> list[str]:
    """What one call does that the operator's additions forbid (one sentence each)."""
    from massgen_mcp.hook.hardline_paths import _absolute, _words, commands_of, names_inside

    rules = operator_rules()
    if not rules:
        return []
    out: list[str] = []
    paths = [p for e in getattr(scope, "events", []) for p in [e[1]]]
    for key in ("file_path", "notebook_path", "path"):
        value = tool_input.get(key)
        if isinstance(value, str) and (p := _absolute(scope, value)):
            paths.append(p)
    commands = []
    if command:
        commands = [" ".join([c.program, *c.args]) for c in commands_of(command)]
        paths.extend(p for c in commands_of(command) for w in _words(c)
                     if (p := _absolute(scope, w)))
    for kind, value in rules:
        if kind == "tool" and fnmatch.fnmatchcase(tool, value):
            out.append(f"calls {tool}, which the operator's hardline file forbids ({value})")
        elif kind == "command" and any(c == value or c.startswith(value + " ")
                                       for c in commands):
            out.append(f"runs `{value}`, which the operator's hardline file forbids")
        elif kind == "path":
            root = os.path.expanduser(value.rstrip("/").removesuffix("/**")) or "/"
            if any(names_inside(p, root) or fnmatch.fnmatchcase(p, value) for p in paths):
                out.append(f"touches {value}, which the operator's hardline file forbids")
    return out
