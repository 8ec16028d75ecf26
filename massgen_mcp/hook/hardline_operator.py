"""The operator's additions to the hard line: where they are and how they read (`hardline.py`
applies them). Standard library only.

One rule a line in `$MASSGEN_MCP_HARDLINE_FILE` (default `hardline.txt` next to the key,
where the agent can neither read nor write; `#` starts a comment)::

    path /srv/prod/**          no call may read, write or delete there
    command terraform destroy  no Bash command starting with these words
    tool mcp__payments__*      no call to these tools (a glob on the tool name)
"""

from __future__ import annotations

import os

from massgen_mcp.hook.active import key_path

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
