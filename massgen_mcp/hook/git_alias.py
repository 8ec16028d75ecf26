"""What a git command runs besides git: aliases and command-valued settings.

`git -c alias.x='!rm -rf ~' x` runs a shell command, and `git -c alias.p='push -f' p origin
main` is a force-push: `expand_git` returns the command lines such a call amounts to, for
the hook to analyse like any other line. Settings whose value is a program
(`core.sshCommand`, `core.pager`, `diff.external`, filters, ...) given with `-c` or written
with `git config` are returned too; so are `!` aliases written with `git config`, since
they run later. A sequence editor is also judged for what it does to a rebase
(`scripted_todo`: `git -c sequence.editor=..`, `GIT_SEQUENCE_EDITOR=..`). Standard library
only.
"""

from __future__ import annotations

import os
import re
from shlex import join

from massgen_mcp.regex import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from massgen_mcp.hook.command import SimpleCommand

_GLOBAL_VALUES = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace",
                            "--config-env", "--exec-path"})
_PROGRAM_KEYS = lazy(
    r"^(core\.(sshcommand|pager|editor|fsmonitor|askpass|hookspath)|diff\.external"
    r"|sequence\.editor|gpg\.(\w+\.)?program|credential(\..*)?\.helper|pager\..*"
    r"|(diff|merge|filter)\..*\.(textconv|command|driver|clean|smudge|process|cmd)"
    r"|uploadpack\.packobjectshook|ssh\.variant|interactive\.difffilter)$", re.I)
#: Sequence editors that leave a rebase's todo list as it is, or hand it to a person.
_TODO_KEEPERS = frozenset({"true", ":", "cat", "vim", "vi", "nvim", "nano", "emacs", "code",
                           "subl", "micro", "hx", "kak", "mate", "gedit", "kate"})


def scripted_todo(value: str) -> bool:
    """Is a git sequence editor a script that rewrites the todo list (`sed -i 's/pick/drop/'`)?"""
    words = value.split()
    return bool(words) and os.path.basename(words[0]) not in _TODO_KEEPERS


def _setting_script(key: str, value: str) -> str | None:
    if key.lower().startswith("alias."):
        return value[1:] if value.startswith("!") else None
    if remote := re.match(r"(?i)^remote\.(.+)\.(push|mirror)$", key):
        # a push refspec or mirroring set here is what a bare `git push` then does
        if remote.group(2).lower() == "push":
            return join(["git", "push", remote.group(1), value])
        return f"git push --mirror {remote.group(1)}" if value.lower() in (
            "true", "1", "yes", "on") else None
    if _PROGRAM_KEYS.match(key):
        return value[1:] if value.startswith("!") else value
    return None


def expand_git(cmd: SimpleCommand) -> list[str]:
    """Command lines this git invocation runs through aliases and program settings."""
    args, scripts = cmd.args, []
    aliases: dict[str, str] = {}
    i, sub_index = 0, len(args)
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-"):
            sub_index = i
            break
        if arg == "-c" and i + 1 < len(args):
            key, _, value = args[i + 1].partition("=")
            if key.lower().startswith("alias."):
                aliases[key[6:]] = value
            script = _setting_script(key, value)
            if script is not None:
                scripts.append(script)
        i += 2 if arg in _GLOBAL_VALUES else 1
    sub, rest = (args[sub_index], args[sub_index + 1:]) if sub_index < len(args) else ("", [])
    if sub in aliases:
        value = aliases[sub]
        tail = join(rest)
        if value.startswith("!"):
            scripts[:] = [x for x in scripts if x != value[1:]]
            scripts.append(f"{value[1:]} {tail}")
        else:
            kept: list[str] = []
            for arg in args[:sub_index]:
                if arg.startswith(f"alias.{sub}=") and kept[-1:] == ["-c"]:
                    kept.pop()
                else:
                    kept.append(arg)
            scripts.append(" ".join(["git", join(kept), value, tail]))
    if sub == "config":
        pos = [a for a in rest if not a.startswith("-")]
        if len(pos) >= 2:
            script = _setting_script(pos[0], pos[1])
            if script is not None:
                scripts.append(script)
            elif pos[0].lower().startswith("alias."):  # it runs as `git VALUE` from now on
                scripts.append(f"git {pos[1]}")
    return scripts
