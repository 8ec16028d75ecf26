"""Just enough shell lexing for the hook: simple commands, their words and redirections.

This is not a shell parser. It splits a command line into simple commands at `;`, `&&`,
`||`, `|`, `&`, newlines and parentheses, keeps quoted words whole, drops the wrappers that
do not change what runs (`VAR=x`, `sudo`, `env`, `nohup`, `time`, `xargs`, ...), and looks
inside `bash -c '...'` / `eval '...'`. Heredoc bodies are not understood. Anything it cannot
lex falls back to whitespace splitting, so a stray quote never hides a command.
Standard library only.
"""

from __future__ import annotations

import re
import shlex

_PUNCT = frozenset(";&|()<>\n")
_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<", "<<", "<<<", "<>", ">&", "<&"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Wrappers that run their arguments as a command; value = options that take a value.
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "-S"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "nice": frozenset({"-n"}),
    "ionice": frozenset({"-c", "-n"}),
    "timeout": frozenset({"-s", "-k"}),
    "xargs": frozenset({"-I", "-n", "-P", "-d", "-L", "-s", "-E", "-a"}),
    "command": frozenset(),
    "exec": frozenset(),
    "builtin": frozenset(),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
}
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
_MAX_DEPTH = 3


class SimpleCommand:
    """One simple command: its program (basename), arguments, and redirection targets."""

    __slots__ = ("args", "program", "raw_program", "redirects")

    def __init__(self, program: str, args: list[str] | None = None,
                 redirects: list[tuple[str, str]] | None = None, raw_program: str = "") -> None:
        self.program = program
        self.args = args or []
        self.redirects = redirects or []
        self.raw_program = raw_program or program

    def __repr__(self) -> str:
        return f"SimpleCommand({self.program!r}, {self.args!r}, {self.redirects!r})"

    def positionals(self) -> list[str]:
        """Arguments that are not options (everything after `--` counts)."""
        out: list[str] = []
        after_dashes = False
        for arg in self.args:
            if after_dashes or not arg.startswith("-") or arg == "-":
                out.append(arg)
            elif arg == "--":
                after_dashes = True
        return out

    def has_short_flag(self, letter: str) -> bool:
        """True if a short-option cluster (`-rf`, `-fdx`) contains `letter`."""
        return any(
            a.startswith("-") and not a.startswith("--") and letter in a[1:] for a in self.args
        )

    def has_long(self, *names: str) -> bool:
        """True if any argument is one of the long options (or `--name=value`)."""
        return any(a in names or a.split("=", 1)[0] in names for a in self.args)


def tokenize(command: str) -> list[str]:
    """Words and operators of a command line; quotes removed, operators as their own tokens."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        # Unbalanced quotes: be conservative and still see every word.
        return re.findall(r"[;&|()<>\n]+|[^\s;&|()<>]+", command)


def _strip_wrappers(words: list[str]) -> list[str]:
    i = 0
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word):
            i += 1
            continue
        name = word.rsplit("/", 1)[-1]
        if name not in _WRAPPERS:
            break
        takes_value = _WRAPPERS[name]
        i += 1
        while i < len(words) and words[i].startswith("-"):
            i += 2 if words[i] in takes_value else 1
        if name == "timeout" and i < len(words):
            i += 1  # the duration
    return words[i:]


def _is_separator(token: str) -> bool:
    if token in _REDIRECTS or not token or not set(token) <= _PUNCT:
        return False
    return token in ("&", "&&") or any(c in ";|()\n" for c in token)


def _split(tokens: list[str]) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for token in tokens:
        if _is_separator(token) or token in ("{", "}"):
            if segments[-1]:
                segments.append([])
        else:
            segments[-1].append(token)
    return [s for s in segments if s]


def _build(segment: list[str]) -> SimpleCommand | None:
    words: list[str] = []
    redirects: list[tuple[str, str]] = []
    i = 0
    while i < len(segment):
        token = segment[i]
        if token in _REDIRECTS or (set(token) <= _PUNCT and (">" in token or "<" in token)):
            target = segment[i + 1] if i + 1 < len(segment) else ""
            # `2>file`: the fd number was lexed as a word of its own.
            if words and words[-1].isdigit() and i > 0 and segment[i - 1] == words[-1]:
                words.pop()
            redirects.append((token, target))
            i += 2
            continue
        words.append(token)
        i += 1
    words = _strip_wrappers(words)
    if not words:
        return None
    return SimpleCommand(
        program=words[0].rsplit("/", 1)[-1], args=words[1:], redirects=redirects,
        raw_program=words[0],
    )


def simple_commands(command: str, _depth: int = 0) -> list[SimpleCommand]:
    """Every simple command in `command`, including those inside `sh -c` and `eval`."""
    out: list[SimpleCommand] = []
    for segment in _split(tokenize(command)):
        cmd = _build(segment)
        if cmd is None:
            continue
        out.append(cmd)
        if _depth >= _MAX_DEPTH:
            continue
        inner: str | None = None
        if cmd.program in _SHELLS:
            # `-c`, or a cluster holding it (`bash -lc '...'`): the next word is the script.
            idx = next((i for i, a in enumerate(cmd.args)
                        if a.startswith("-") and not a.startswith("--") and "c" in a), None)
            if idx is not None and idx + 1 < len(cmd.args):
                inner = cmd.args[idx + 1]
        elif cmd.program == "eval":
            inner = " ".join(cmd.args)
        if inner:
            out.extend(simple_commands(inner, _depth + 1))
    return out


def subcommand(cmd: SimpleCommand, value_options: frozenset[str] = frozenset()) -> tuple[str, int]:
    """The first non-option argument and its index (`git -C x push` -> ("push", 2))."""
    i = 0
    while i < len(cmd.args):
        arg = cmd.args[i]
        if not arg.startswith("-"):
            return arg, i
        i += 2 if arg in value_options else 1
    return "", len(cmd.args)


def command_head(cmd: SimpleCommand) -> str:
    """What kind of command this is, for grouping: program plus its subcommand.

    `git push origin x` -> "git push"; `python manage.py migrate` -> "python manage.py
    migrate" (a script name is not a subcommand, so one more word is taken).
    """
    words = [cmd.program]
    for arg in cmd.args:
        if arg.startswith("-"):
            continue
        words.append(arg)
        if "." not in arg and "/" not in arg:
            break
        if len(words) >= 3:
            break
    return " ".join(words)


def wordset(text: str) -> frozenset[str]:
    """A set of names written as one space-separated string (keeps long tables readable)."""
    return frozenset(text.split())
