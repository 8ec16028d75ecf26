"""Shell analysis for the hook: every simple command a line runs, as the shell would run it.

Built on `lexer.py`. It goes through keywords (`if`/`for`/`while`/`case`/functions),
subshells, lists and pipelines, and into what the line runs indirectly: command and process
substitutions, `-c` strings of shells (`sh`/`bash`/`zsh -c`, `su -c`, `env -S`, `watch`),
`eval`, heredocs and here-strings fed to a shell, `find -exec` commands, and git aliases
defined with `-c alias.x=...` (see `git_alias`). Wrappers that run their arguments
(`sudo`, `env`, `nohup`, `busybox`, `xargs`, ...) are stripped; a program name computed by
the line is resolved when it can be (`x=rm; $x`, `$(which rm)`), and what cannot be
resolved or lexed becomes a finding: the hook treats what it cannot analyse as gated.
Standard library only.
"""

from __future__ import annotations

import os
import re
from shlex import join

from massgen_mcp.hook import capability, channels
from massgen_mcp.hook.command import Analysis, SimpleCommand, shell_script
from massgen_mcp.hook.command import command_head as command_head  # main.py imports it here
from massgen_mcp.hook.expand import expand_words, glob_program, param_expand, tilde_user
from massgen_mcp.hook.lexer import UNKNOWN, Op, Redir, Word, lex
from massgen_mcp.hook.options import resolve_long
from massgen_mcp.regex import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

_ASSIGNMENT = lazy(r"^([A-Za-z_][A-Za-z0-9_]*)\+?=")
_VAR_REF = lazy(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
# Wrappers that run their arguments as a command; value = options that take a value.
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-R"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "--unset", "--chdir"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "nice": frozenset({"-n"}),
    "ionice": frozenset({"-c", "-n"}),
    "timeout": frozenset({"-s", "-k"}),
    "xargs": frozenset({"-I", "-i", "-n", "-P", "-d", "-L", "-s", "-E", "-a", "--delimiter"}),
    "parallel": frozenset({"-j", "-S", "--jobs"}),
    "command": frozenset(),
    "exec": frozenset({"-a"}),
    "builtin": frozenset(),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "busybox": frozenset(),
    "toybox": frozenset(),
    "chroot": frozenset({"--userspec", "--groups"}),
    "unbuffer": frozenset(),
    "setsid": frozenset(),
    "caffeinate": frozenset({"-t", "-w"}),
    "flock": frozenset({"-w", "-E"}),
    "taskset": frozenset(),
    "chrt": frozenset(),
    "strace": frozenset({"-o", "-e", "-p", "-s"}),
    "ltrace": frozenset({"-o", "-e"}),
}
_TAKES_OPERAND = {"timeout": 1, "chroot": 1, "flock": 1, "taskset": 1, "chrt": 1}
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh",
                    "rbash", "busybox-sh"})
_RESERVED = frozenset({"if", "then", "elif", "else", "fi", "do", "done", "while", "until",
                       "esac", "{", "}", "!", "time", "coproc", "in"})
_WHICH = frozenset({"which", "command", "type", "whereis", "readlink", "realpath"})
_DECLARE = frozenset({"export", "declare", "typeset", "local", "readonly"})
_READS_INPUT = frozenset({"mapfile", "readarray", "read", "getopts"})
_MAX_DEPTH = 6


def analyse(command: str) -> Analysis:
    """Parse `command` and everything it runs indirectly (see the module docstring)."""
    out = Analysis()
    _script(command, out, 0, {})
    return out


def simple_commands(command: str) -> list[SimpleCommand]:
    """Every simple command in `command`, including those it runs indirectly."""
    return analyse(command).commands


def _script(text: str, out: Analysis, depth: int, outer: dict[str, str]) -> None:
    if depth > _MAX_DEPTH:
        out.gate("nests shells and substitutions too deeply for the hook to analyse")
        return
    tokens, problems = lex(text)
    for problem in dict.fromkeys(problems):
        out.gate(f"cannot be analysed: {problem}")
    variables = dict(outer)
    words: list[Word] = []
    redirs: list[Redir] = []
    pipeline: list[SimpleCommand] = []
    skip = ""  # "for" header / "case" word / case "pattern" being skipped
    keyword = ""  # `time` (its -p follows) or `coproc` (a NAME may follow) just seen

    def finish(end_pipeline: bool) -> None:
        nonlocal words, redirs, pipeline
        if words or redirs:  # a stage's stdin: what the one before prints, when shown
            cmd = _command(words, redirs, out, depth, variables,
                           channels.output_text(pipeline[-1]) if pipeline else None)
            if cmd is not None:
                cmd.pipe_stage = len(pipeline)
                pipeline.append(cmd)
        words, redirs = [], []
        if end_pipeline and pipeline:
            out.pipelines.append(pipeline)
            pipeline = []

    for idx, tok in enumerate(tokens):
        if isinstance(tok, Op):
            keyword = ""
            if skip in ("for", "for-name"):
                skip = ""
            if skip == "pattern" and tok.value == ")":
                skip = ""
                continue
            finish(tok.value not in ("|", "|&"))
            if tok.value in (";;", ";&", ";;&"):
                skip = "pattern"
            continue
        if isinstance(tok, Redir):
            redirs.append(tok)
            continue
        value = tok.value
        if skip == "pattern":
            if value == "esac":
                skip = ""
            continue
        if skip == "for-name":
            variables[value] = UNKNOWN  # the loop variable: unknown, not empty
            skip = "for"
            continue
        if skip in ("for", "case"):
            if skip == "case" and value == "in":
                skip = "pattern"
            continue
        if not words and not tok.quoted and keyword:
            nxt = tokens[idx + 1] if idx + 1 < len(tokens) else None
            if keyword == "time" and value in ("-p", "--"):
                continue
            if keyword == "coproc" and (
                    (isinstance(nxt, Word) and nxt.value == "{" and not nxt.quoted)
                    or (isinstance(nxt, Op) and nxt.value == "(")):
                keyword = ""
                continue  # `coproc NAME { ...; }`: NAME names the coprocess
        keyword = ""
        if not words and not tok.quoted:
            if value in ("time", "coproc"):
                keyword = value
                continue
            if value in ("for", "select"):
                skip = "for-name"
                continue
            if value == "case":
                skip = "case"
                continue
            if value == "function" or value in _RESERVED:
                continue
        words.append(tok)
    finish(True)


def _subst_vars(word: Word, variables: dict[str, str]) -> str:
    """Parameters the line itself set, expanded (`${x%/*}` too); others stay as written."""
    if "$" not in word.value:
        return word.value
    return param_expand(word.value, variables.get)


def _command(words: list[Word], redirs: list[Redir], out: Analysis, depth: int,
             variables: dict[str, str], piped: str | None) -> SimpleCommand | None:
    words = expand_words(words, os.environ.get("HOME", "~"), simple_commands)

    def run(script: str) -> None:
        _script(script, out, depth + 1, variables)

    for word in words:
        if "${!" in word.value:
            out.gate("expands a variable whose name is computed at run time (`${!...}`)",
                     rule="indirect-expansion")
        for _kind, body in word.subs:
            _script(body, out, depth + 1, variables)
    for redir in redirs:
        for _kind, body in redir.target.subs if redir.target else ():
            _script(body, out, depth + 1, variables)
    i = 0
    env: dict[str, str] = {}
    while i < len(words) and (m := _ASSIGNMENT.match(words[i].value)):
        _assign(m.group(1), words[i], m.end(), env, variables, out, run)
        i += 1
    values = [_subst_vars(w, variables) for w in words[i:]]
    kept = words[i:]
    redirects = [(r.op, _redirect_target(r.target, variables) if r.target else "")
                 for r in redirs]
    if not values:
        return _record(out, SimpleCommand("", [], redirects)) if redirects else None
    n, original = len(values), values
    values, kept, from_xargs = _strip_wrappers(values, kept, out, depth, variables)
    chdir = _env_chdir(original[:n - len(values)])
    if chdir is not None:  # `env -C dir cmd`: cmd runs there (and only cmd)
        _record(out, SimpleCommand("pushd", [chdir]))
    for k, word in enumerate(words[i:i + n - len(values)]):  # `env NAME=value cmd`
        if (m := _ASSIGNMENT.match(word.value)) and k:
            _assign(m.group(1), word, m.end(), env, variables, out, run)
    if not values:  # `exec 3>~/.bashrc`: the redirections still happen
        return _record(out, SimpleCommand("", [], redirects)) if redirects else None
    if values[0] in out.aliases and kept and not kept[0].quoted:
        run(" ".join([out.aliases[values[0]], join(values[1:])]))
        return None
    if (matches := glob_program(values[0])) is not None and kept and not kept[0].quoted:
        if not matches:
            out.gate(f"runs a program named by the pattern `{values[0]}`", rule="computed-program")
        values = [*matches, *values[1:]] if matches else values
    program, computed = _program(values[0], kept[0] if kept else None, out)
    if " " in program.strip() and not computed:  # `x="rm -rf"; $x /`
        values = program.split() + values[1:]
        program = values[0]
    base = program.rsplit("/", 1)[-1]
    if base == "git" and ("GIT_CONFIG_COUNT" in variables or any(
            v.startswith("--config-env=") for v in values)):
        values = channels.git_env_config(values, {**variables, **env}, out)
    cmd = SimpleCommand(base, resolve_long(base, values[1:]), redirects, raw_program=program)
    cmd.words, cmd.computed, cmd.from_xargs, cmd.env = kept, computed, from_xargs, env
    cmd.redir_words, cmd.stdin_code = [r for r in redirs if r.target is not None], piped
    for redir in redirs:
        if redir.op in ("<<", "<<-") and redir.body is not None:
            cmd.stdin_code = redir.body
        elif redir.op == "<<<" and redir.target is not None:
            cmd.stdin_code = redir.target.value
    if base in _DECLARE:
        nameref = any(re.fullmatch(r"-[a-zA-Z]*n[a-zA-Z]*", a) for a in cmd.args)
        for word in kept[1:]:
            if m := _ASSIGNMENT.match(word.value):
                _assign(m.group(1), word, m.end(), env, variables, out, run)
                if nameref:  # `declare -n r=HOME`: $r is whatever HOME holds at run time
                    variables[m.group(1)] = UNKNOWN
    elif base in _READS_INPUT:  # `mapfile -t d`, `read x`: values known only at run time
        names = [a for a in cmd.positionals() if re.fullmatch(r"[A-Za-z_]\w*", a)]
        for name in names or ["MAPFILE" if base in ("mapfile", "readarray") else "REPLY"]:
            variables[name] = UNKNOWN
    if base == "alias":
        for arg in cmd.args:
            name, eq, value = arg.partition("=")
            if eq:
                out.aliases[name] = value
    _record(out, cmd)
    _inner(cmd, out, depth, variables)
    channels.script_runs(cmd, out, SHELLS, run)
    channels.record_writes(cmd, out)
    if chdir is not None:
        _record(out, SimpleCommand("popd"))
    return cmd


def _env_chdir(prefix: list[str]) -> str | None:
    """The directory `env -C DIR` / `env --chdir=DIR` runs its command in, if any."""
    if not prefix or prefix[0].rsplit("/", 1)[-1] != "env":
        return None
    for i, arg in enumerate(prefix):
        if arg in ("-C", "--chdir") and i + 1 < len(prefix):
            return prefix[i + 1]
        if arg.startswith("--chdir="):
            return arg[8:]
        if arg.startswith("-C") and len(arg) > 2:
            return arg[2:]
    return None


def _redirect_target(word: Word, variables: dict[str, str]) -> str:
    """What a redirection writes or reads; `>(...)` is the pipe bash passes (/dev/fd/N)."""
    if word.value == UNKNOWN and len(word.subs) == 1 and word.subs[0][0] in ("in", "out"):
        return "/dev/fd/63"
    return tilde_user(_subst_vars(word, variables))


def _assign(name: str, word: Word, start: int, env: dict[str, str],
            variables: dict[str, str], out: Analysis, run: Callable[[str], None]) -> None:
    """One `NAME=value` (prefix, `env`, `export`): remembered, and judged if it runs code."""
    value = _subst_vars(word, variables)[start:] if "$" in word.value else word.value[start:]
    if value.startswith("~/") or value == "~":
        value = os.environ.get("HOME", "~") + value[1:]
    known = UNKNOWN if word.dynamic and ("$" in value or UNKNOWN in value) else value
    variables[name] = env[name] = known
    if name == "IFS":
        out.gate("sets IFS, so words split where the hook cannot follow", rule="ifs")
    channels.env_assigned(name, known, out, run)


def _record(out: Analysis, cmd: SimpleCommand) -> SimpleCommand:
    out.commands.append(cmd)
    return cmd


def _program(value: str, word: Word | None, out: Analysis) -> tuple[str, bool]:
    """The program a command word names, and whether it stays computed (unknown)."""
    if UNKNOWN not in value and "$" not in value:
        return value, False
    if word is not None and len(word.subs) == 1 and word.value == UNKNOWN:
        text = word.subs[0][1]
        if m := re.fullmatch(r"\s*command\s+-[vV]\s+([\w.+-]+)\s*", text):
            return m.group(1), False
        inner = simple_commands(text)
        if len(inner) == 1 and inner[0].program in _WHICH:
            names = [a for a in inner[0].positionals() if UNKNOWN not in a]
            if names:
                return names[-1], False
    if UNKNOWN not in value:
        expanded = _VAR_REF.sub(lambda m: os.environ.get(m.group(1)) or UNKNOWN, value)
        if UNKNOWN not in expanded and "$" not in expanded:
            return expanded, False  # `$HOME/.local/bin/tool`: set in the hook's environment
    shown = value.replace(UNKNOWN, "$(...)")
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    out.gate(f"runs a program whose name is computed at run time (`{shown}`); the hook "
             "cannot tell what it is", rule="computed-program")
    return value, True


def _strip_wrappers(values: list[str], words: list[Word], out: Analysis, depth: int,
                    variables: dict[str, str]) -> tuple[list[str], list[Word], bool]:
    i, start, from_xargs = 0, 0, False
    while i < len(values):
        value = values[i]
        if _ASSIGNMENT.match(value) and i:
            i += 1
            continue
        name = value.rsplit("/", 1)[-1]
        if name not in _WRAPPERS:
            break
        takes_value = _WRAPPERS[name]
        from_xargs = from_xargs or name in ("xargs", "parallel")
        i += 1
        while i < len(values) and values[i].startswith("-") and values[i] != "-":
            if name == "env" and values[i].split("=", 1)[0] in ("-S", "--split-string"):
                script = values[i].split("=", 1)[1] if "=" in values[i] else (
                    values[i + 1] if i + 1 < len(values) else "")
                _script(script, out, depth + 1, variables)
                return [], [], from_xargs
            i += 2 if values[i] in takes_value else 1
        i += _TAKES_OPERAND.get(name, 0)
        if i >= len(values):  # `env` alone prints the environment: it is the command
            return values[start:], words[start:], from_xargs
        start = i
    return values[i:], words[i:], from_xargs


def _inner(cmd: SimpleCommand, out: Analysis, depth: int, variables: dict[str, str]) -> None:
    """What the command runs as code of its own: `-c` strings, eval, stdin scripts, ..."""
    program, args = cmd.program, cmd.args
    if cmd.from_xargs and (program in SHELLS or program in ("eval", "source", ".")):
        out.gate(f"xargs feeds {program} code the hook cannot see", rule="run-substitution")
    if program in SHELLS:
        script = shell_script(cmd)
        if script is not None:
            _script(script, out, depth + 1, variables)
        elif cmd.stdin_code is not None and cmd.positionals()[:1] in (
                [], ["/dev/stdin"], ["/dev/fd/0"], ["/proc/self/fd/0"], ["-"]):
            _script(cmd.stdin_code, out, depth + 1, variables)
        sources = [*cmd.words[1:], *(r.target for r in cmd.redir_words if r.target)]
        if any(w.subs and w.subs[0][0] == "in" for w in sources):
            out.gate(f"runs the output of a process substitution with {program}",
                     rule="run-substitution")
    elif program in ("eval", ".", "source"):
        if any(w.subs for w in cmd.words[1:]) or (program != "eval" and any(
                a in ("/dev/stdin", "-") for a in args)):
            out.gate(f"`{program}` runs the output of a command as code; the hook cannot "
                     "see it", rule="run-substitution")
        if program == "eval":
            _script(" ".join(args), out, depth + 1, variables)
    elif program in ("su", "script", "runuser") and (idx := next((
            i for i, a in enumerate(args[:-1]) if a == "--command" or re.fullmatch(
                r"-[a-zA-Z]*c", a)), None)) is not None:
        _script(args[idx + 1], out, depth + 1, variables)
    elif program == "alias":
        for arg in args:
            if "=" in arg:
                _script(arg.split("=", 1)[1], out, depth + 1, variables)
    elif program == "find":
        for i, arg in enumerate(args):
            if arg in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next((j for j in range(i + 1, len(args)) if args[j] in (";", "+")),
                           len(args))
                if i + 1 < end:
                    here = arg in ("-execdir", "-okdir")  # runs in each match's directory
                    if here:
                        _record(out, SimpleCommand("pushd", [UNKNOWN]))
                    _script(join(args[i + 1:end]), out, depth + 1,
                            variables)
                    if here:
                        _record(out, SimpleCommand("popd"))
    elif program == "git":
        from massgen_mcp.hook.git_alias import expand_git

        for script in expand_git(cmd):
            _script(script, out, depth + 1, variables)
    for line in capability.embedded(cmd):  # wrappers and options that run a command
        _script(line, out, depth + 1, variables)
