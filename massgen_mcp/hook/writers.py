"""Programs that write files through an option or an operand the rule files did not expect.

`targets(cmd)` lists what a command writes besides its redirections; each target is judged
like a Write (`Scope.write_finding`): `sort -o F`, `uniq IN OUT`, `patch FILE` / `-o F` /
the files a here-doc diff names, editors run as scripts (`ex -s F`, `vim -es -c 'w F'`),
`iconv -o`, `yq -i`, `sponge F`, `awk '{print > "F"}'`, `split ... PREFIX`, and literal
paths interpreter code copies or appends to (`shutil.copy(x, '/etc/profile.d/x')`, a
`.bashrc` joined to the home directory). A target the hook cannot read (`print > f` with f
computed) is returned as the unknown word, which the write rule gates.
Standard library only.
"""

from __future__ import annotations

import re

from massgen_mcp.hook.command import SimpleCommand
from massgen_mcp.hook.editor_rules import vi_writes
from massgen_mcp.hook.lexer import UNKNOWN
from massgen_mcp.regex import lazy

_AWK = frozenset({"awk", "gawk", "mawk", "nawk"})
_AWK_OUT = lazy(r"(?:print|printf)[^;}|>]*?(>>?|\|)\s*(\"([^\"]*)\"|[^;}\s]+)")
_DIFF_TARGET = lazy(r"^\+\+\+ (\S+)", re.M)
_HOME_JOIN = lazy(r"expanduser|Path\.home\(\)|homedir\(\)|ENV\[['\"]HOME['\"]\]|"
                        r"\$ENV\{HOME\}|environ\[['\"]HOME['\"]\]|getenv\(['\"]HOME['\"]\)"
                        r"|Dir\.home|\$HOME|\{HOME\}|os\.homedir")
_COPIES = lazy(r"\b(copy\w*|move|symlink\w*|rename|os\.replace|write\w*|append\w*|"
                     r"cp|mv|install|file_put_contents)\s*\(|\b(open|fopen)\s*\([^)]*,\s*"
                     r"[\"'][wax+]|\.open\(\s*[\"'][wax]|>>?\s*\$ENV|open\(\s*\w+\s*,\s*[\"']>")
_LITERAL = lazy(r"""(["'])((?:(?!\1)[^\\\n]|\\.)*)\1""")


def _value(cmd: SimpleCommand, short: str, long: str) -> list[str]:
    out: list[str] = []
    args = cmd.args
    for i, arg in enumerate(args):
        if arg in (short, long) and i + 1 < len(args):
            out.append(args[i + 1])
        elif arg.startswith(long + "="):
            out.append(arg[len(long) + 1:])
        elif short and arg.startswith(short) and len(arg) > 2 and not arg.startswith("--"):
            out.append(arg[2:])
    return out


#: Long options that name what a program writes, whatever the program (`openssl -out`,
#: `git archive --output=`, `pip install --target`, `pandoc --output`).
_OUTPUT_OPTIONS = ("--output", "--out", "-out", "--outfile", "--output-file", "--out-file",
                   "--output-document", "--outdir", "--output-dir", "--target", "--prefix",
                   "--root", "--log-file", "--install-dir")
_COMPILERS = frozenset({"gcc", "g++", "cc", "c++", "clang", "clang++", "go", "rustc", "ld",
                        "pandoc", "objcopy", "as", "nvcc", "zig", "tcc", "gfortran", "javac"})


def _long_outputs(cmd: SimpleCommand) -> list[str]:
    out: list[str] = []
    args = cmd.args
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in _OUTPUT_OPTIONS:
            if eq:
                out.append(value)
            elif i + 1 < len(args) and not args[i + 1].startswith("-"):
                out.append(args[i + 1])
    if cmd.program in _COMPILERS:
        out += _value(cmd, "-o", "--output") if cmd.program != "javac" else _value(cmd, "-d", "")
    return out


def targets(cmd: SimpleCommand) -> list[str]:
    """Files `cmd` writes through its options or operands (see the module docstring)."""
    if cmd.program in ("curl", "wget"):
        return []  # their downloads are judged where they are found (channels.py)
    return _long_outputs(cmd) + _targets(cmd)


def _targets(cmd: SimpleCommand) -> list[str]:
    program, pos = cmd.program, cmd.positionals()
    if program == "sort":
        return _value(cmd, "-o", "")
    if program == "uniq":
        return pos[1:2]
    if program == "touch":
        return [p for p in pos if not cmd.has_short_flag("r") or p != pos[0]]
    if program == "iconv":
        return _value(cmd, "-o", "")
    if program == "sponge":
        return pos[:1]
    if program in ("yq", "jq") and any(a in ("-i", "--inplace") or re.fullmatch(
            r"-[a-zA-Z]*i[a-zA-Z]*", a) for a in cmd.args):
        return pos[1:]
    if program == "split":
        return pos[1:2] if len(pos) >= 2 else []
    if program == "patch":
        return _patch(cmd, pos)
    if program in _AWK:
        if any(v == "inplace" for v in _value(cmd, "-i", "--include")):  # rewrites its files
            return pos[2:]
        return awk_outputs(next((a for a in cmd.args if not a.startswith("-")), ""))
    return vi_writes(cmd)


def _patch(cmd: SimpleCommand, pos: list[str]) -> list[str]:
    out = _value(cmd, "-o", "") + pos[:1]
    if cmd.stdin_code:  # a here-doc diff: the files it names (`-p` strips leading parts)
        strip = next((int(v) for v in _value(cmd, "-p", "--strip") if v.isdigit()), None)
        for name in _DIFF_TARGET.findall(cmd.stdin_code):
            if name == "/dev/null":
                continue
            if strip is not None:
                name = "/".join(name.split("/")[strip:]) or name
            out.append(name)
    where = _value(cmd, "-d", "--directory")
    return [*out, *(f"{w}/x" for w in where)]


def awk_outputs(code: str) -> list[str]:
    """Files awk code prints into (`print > "f"`, `>> f`); a computed one is unknown."""
    out: list[str] = []
    for m in _AWK_OUT.finditer(code):
        if m.group(1) == "|":
            continue  # a pipe to a command: awk's system(), judged as running code
        out.append(m.group(3) if m.group(3) is not None else UNKNOWN)
    return out


def awk_commands(code: str) -> list[str]:
    """Commands awk code runs: `print | "cmd"`, `"cmd" | getline`, `system("cmd")`."""
    out = [m.group(3) or UNKNOWN for m in _AWK_OUT.finditer(code) if m.group(1) == "|"]
    out += re.findall(r"\"([^\"]*)\"\s*\|\s*getline", code)
    for var in re.findall(r"([A-Za-z_]\w*)\s*\|\s*getline", code):  # `c | getline`: the
        held = re.search(rf"\b{var}\s*=\s*\"([^\"]*)\"", code)  # command c was given
        out.append(held.group(1) if held else UNKNOWN)
    out += [m or UNKNOWN for m in re.findall(r"system\s*\(\s*(?:\"([^\"]*)\")?", code)]
    return out


def code_targets(code: str) -> list[str]:
    """Literal paths interpreter code copies, moves, links or writes to (the `dst` of
    `shutil.copy(src, dst)` is a literal too), with `~/` put back where the code joins a
    literal to the home directory."""
    if not _COPIES.search(code):
        return []
    home = bool(_HOME_JOIN.search(code))
    out: list[str] = []
    for m in _LITERAL.finditer(code):
        text = m.group(2)
        if "\n" in text or " " in text or not text:
            continue
        for name in ("{os.environ['HOME']}", '{os.environ["HOME"]}', "$HOME", "${HOME}",
                     "$ENV{HOME}", "#{ENV['HOME']}", "#{Dir.home}"):
            text = text.replace(name, "~")
        if text.startswith(("/", "~")):
            out.append(text)
        elif home and re.fullmatch(r"/?\.[\w.-]+(/[\w.-]+)*", text):  # '.bashrc', '/.profile'
            out.append("~/" + text.lstrip("/"))
    return out
