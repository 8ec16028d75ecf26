"""What a text editor run as a script does: the shell commands and the files it writes.

`vim -es -c '!cmd'`, `ex -sc 'w /etc/x'`, `nvim +'r !cmd'`, `:!cmd` lines fed on stdin:
an editor given a script is a shell and a writer like any other. Standard library only.
"""

from __future__ import annotations

import re

from massgen_mcp.hook.command import SimpleCommand
from massgen_mcp.hook.options import option_values
from massgen_mcp.regex import lazy

VI = frozenset({"vim", "vi", "nvim", "ex", "view", "gvim", "vimdiff", "evim", "rvim"})


def _scripts(args: list[str]) -> list[str]:
    """`-c cmd`, `--cmd cmd`, and a cluster of flags ending in -c (`ex -sc 'wq! ~/.bashrc'`),
    which takes the script all the same."""
    return option_values(args, ("-c", "--cmd")) + [
        args[i + 1] for i, a in enumerate(args[:-1]) if re.fullmatch(r"-[a-zA-Z]+c", a)]


def _parts(script: str) -> list[str]:
    """The Ex commands of one script, split at `|` outside quotes (`:!` takes the rest)."""
    out, cur, quote = [], "", ""
    for c in script:
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c == "|" and not re.match(r"(r|read|w|write)?\s*!", _MODIFIERS.sub(
                "", _RANGE.sub("", cur.strip().lstrip(":").strip(), count=1))):
            out.append(cur)
            cur = ""
            continue
        cur += c
    return [*out, cur]


_MODIFIERS = lazy(r"^((silent!?|sil!?|noautocmd|noa|keepalt|unsilent|verbose|vert|"
                        r"keepjumps|lockmarks|sandbox)\s+)+")
_RANGE = lazy(r"^(\d+|\$|%|\.)?,?(\d+|\$)?\s*")
#: Ex commands that run code of another language (`:lua`, `:py3`, `:perldo`, `:rubyfile`).
_LANGUAGES = lazy(r"^(lua|luado|luafile|py|py3|python|python3|pyx|pythonx|pydo|py3do"
                        r"|pyxdo|pyf|pyfile|py3file|pyxfile|perl|perldo|ruby|rubydo|rubyfile"
                        r"|rub|tcl|tcldo|tclfile|mz|mzscheme|mzfile)\b(.*)", re.S)
#: What Lua code reaches beyond the editor with (a shell, files, code loaded at run time).
_LUA_REACH = lazy(r"\b(os|io|vim\.fn|vim\.system|vim\.loop|vim\.uv|vim\.cmd|vim\.api"
                        r"|jobstart|termopen|load|loadstring|dofile|loadfile|debug|package)\b")
#: Anywhere in an Ex command: `call system(..)`, `let r = system(..)`, `echo systemlist(..)`.
_SHELL_CALLS = lazy(r"(call\s+)?\b(system|systemlist|jobstart|termopen|job_start)\s*\((.*)\)")
#: Script functions that write, delete or rename the file named by an argument (a literal
#: path in group 2 or 3, else computed): `writefile(lines, path)`, `delete(path)`.
_FILE_CALLS = lazy(r"""\b(writefile\s*\([^,]*,|delete\s*\(|rename\s*\(|mkdir\s*\()"""
                         r"""\s*(?:"([^"]*)"|'([^']*)'|(?=[^"'\s]))""")
_LITERAL = lazy(r"""\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)')\s*""")


def _commands(text: str, out: list[str], why: list[str], depth: int = 0) -> None:
    """Shell commands (`out`) and code the hook cannot read (`why`) of one Ex command."""
    text = _MODIFIERS.sub("", _RANGE.sub("", text.strip().lstrip(":").strip(), count=1))
    if text.startswith("!"):
        out.append(text[1:])
    elif m := re.match(r"(?:r|read)\s*!(.*)|(?:w|write)\s+!(.*)|ter(?:m|minal)?!?\s+(.*)",
                       text, re.S):  # `:r !cmd`, `:w !cmd` (the buffer is its stdin), `:term`
        out.append(next(g for g in m.groups() if g is not None))
        if m.group(2) is not None:
            why.append(f"`:w !{m.group(2)[:40]}` feeds the file to a command as its input")
    if not _LANGUAGES.match(text) and (m := _SHELL_CALLS.search(text)):
        literal = _LITERAL.fullmatch(m.group(3))
        if literal and literal.group(0).strip():
            out.append(literal.group(1) if literal.group(1) is not None else literal.group(2))
        else:
            why.append(f"{m.group(2)}() runs a command built at run time")
    elif m := re.match(r"(exe|exec|execute)\s+(.*)", text, re.S):
        pieces = re.split(r"\s*\.\.?\s*", m.group(2).strip())
        strings = [_LITERAL.fullmatch(p) for p in pieces]
        if depth > 3 or not all(strings):
            why.append("`:execute` runs an Ex command built at run time")
        else:
            joined = "".join(s.group(1) or s.group(2) or "" for s in strings if s)
            for part in _parts(joined):
                _commands(part, out, why, depth + 1)
    elif m := _LANGUAGES.match(text):
        if m.group(1) != "lua" or _LUA_REACH.search(
                m.group(2)):
            why.append(f"`:{m.group(1)}` runs code of another language, which the hook "
                       "cannot read")
    elif any(not (literal.group(2) or literal.group(3)) for literal in _FILE_CALLS.finditer(
            text)):
        why.append("a script function writes or deletes a file named at run time")
    elif (m := re.match(r"(so|source|ru|runtime)!?\s+(\S+)", text)) and _outside(m.group(2)):
        why.append(f"`:{m.group(1)} {m.group(2)}` runs a script from outside the project")


def _outside(path: str) -> bool:
    return path.startswith(("/", "~", "$")) or ".." in path.split("/")


def _vi_scan(cmd: SimpleCommand) -> tuple[list[str], list[str]]:
    scripts = _scripts(cmd.args)
    scripts += [a[1:] for a in cmd.args if a.startswith("+") and len(a) > 1]
    scripts += (cmd.stdin_code or "").splitlines()
    out: list[str] = []
    why: list[str] = []
    for script in scripts:
        for part in _parts(script):
            _commands(part, out, why)
    if cmd.program == "emacs":  # `--batch -l FILE` runs that Lisp file
        return out, [f"emacs loads {p}, Lisp from outside the project" for p in option_values(
            cmd.args, ("-l", "--load", "-script", "--script", "-x")) if _outside(p)]
    for path in option_values(cmd.args, ("-S", "-u")):
        if path not in ("NONE", "NORC", "DEFAULTS") and _outside(path):
            why.append(f"{cmd.program} sources {path}, a script from outside the project")
    return out, why


def vi_commands(cmd: SimpleCommand) -> list[str]:
    """Shell commands an editor run as a script executes (`-c '!cmd'`, `:!cmd` on stdin)."""
    return _vi_scan(cmd)[0]


def vi_opaque(cmd: SimpleCommand) -> list[str]:
    """Why an editor's script runs code the hook cannot read (`:py3`, `:execute` of a
    variable, `-S /tmp/x.vim`)."""
    return _vi_scan(cmd)[1]


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
        for m in re.finditer(r"(?:^|\|)\s*:?\s*(?:w|write|sav|saveas|wq|x|mks|mksession|mkvie"
                             r"|mkview|mkv|mkvimrc|mkexrc|wv|wviminfo|wsh|wshada)!?\s+(?!!)(\S+)"
                             r"|redir!?\s*>>?\s*(\S+)", script):
            files.append(m.group(1) or m.group(2))
        files += [m.group(2) or m.group(3) for m in _FILE_CALLS.finditer(script)
                  if m.group(2) is not None or m.group(3) is not None]
    return files
