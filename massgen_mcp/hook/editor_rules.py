"""What a text editor run as a script does: the shell commands and the files it writes.

`vim -es -c '!cmd'`, `ex -sc 'w /etc/x'`, `nvim +'r !cmd'`, `:!cmd` lines fed on stdin:
an editor given a script is a shell and a writer like any other. Standard library only.
"""

from __future__ import annotations

import re

from massgen_mcp.hook.command import SimpleCommand
from massgen_mcp.hook.options import option_values

VI = frozenset({"vim", "vi", "nvim", "ex", "view", "gvim", "vimdiff", "evim", "rvim"})


def _scripts(args: list[str]) -> list[str]:
    """`-c cmd`, `--cmd cmd`, and a cluster of flags ending in -c (`ex -sc 'wq! ~/.bashrc'`),
    which takes the script all the same."""
    return option_values(args, ("-c", "--cmd")) + [
        args[i + 1] for i, a in enumerate(args[:-1]) if re.fullmatch(r"-[a-zA-Z]+c", a)]


def vi_commands(cmd: SimpleCommand) -> list[str]:
    """Shell commands an editor run as a script executes (`-c '!cmd'`, `:!cmd` on stdin)."""
    scripts = _scripts(cmd.args)
    scripts += [a[1:] for a in cmd.args if a.startswith("+") and len(a) > 1]
    scripts += (cmd.stdin_code or "").splitlines()
    out: list[str] = []
    for script in scripts:
        for part in script.split("|") if not script.lstrip(": ").startswith("!") else [script]:
            text = part.strip().lstrip(":").strip()
            text = re.sub(r"^(\d+|\$|%|\.)?,?(\d+|\$)?\s*", "", text)
            if text.startswith("!"):
                out.append(text[1:])
            elif re.match(r"(r|read)\s*!", text):
                out.append(text.split("!", 1)[1])
            elif m := re.match(r"(call\s+)?system\((['\"])(.*)\2\)", text):
                out.append(m.group(3))
    return out


def vi_writes(cmd: SimpleCommand) -> list[str]:
    """Files an editor run non-interactively writes: the files it edits, `w path`."""
    if cmd.program not in VI and cmd.program != "ed":
        return []
    scripted = (cmd.program in ("ex", "ed") or cmd.stdin_code is not None or any(
        a in ("-s", "-es", "-Es", "-e", "-E") or a.startswith(("-c", "+", "--cmd"))
        for a in cmd.args))
    if not scripted:
        return []
    files = [a for i, a in enumerate(cmd.args) if not a.startswith(("-", "+")) and (
        i == 0 or not re.fullmatch(r"-[a-zA-Z]*c|--cmd|-[SuiT]", cmd.args[i - 1]))]
    scripts = _scripts(cmd.args) + (cmd.stdin_code or "").splitlines()
    for script in scripts:
        for m in re.finditer(r"(?:^|\|)\s*:?\s*(?:w|write|sav|saveas|wq|x)!?\s+(?!!)(\S+)",
                             script):
            files.append(m.group(1))
    return files
