"""What the hook's shell analysis produces: simple commands, and a line's analysis.

`SimpleCommand` is one command as the shell will run it (program, arguments after
expansion, redirections, how it gets its input); `Analysis` is every command of a line
with its pipelines, findings, and what the walk learned along the way (files the line
writes, aliases, whether `CDPATH` is set). Small helpers over commands live here too.
Standard library only.
"""

from __future__ import annotations

from massgen_mcp.hook.lexer import Redir, Word
from massgen_mcp.hook.policy import Finding
from massgen_mcp.regex import lazy

#: A Python interpreter's name (`python3.12`, `pypy3`).
PYTHON = lazy(r"^(python|pypy)[0-9.]*$")
_PYTHON_VALUES = "cWX"  # short options that take a value (`-m` is handled on its own)


class SimpleCommand:
    """One simple command: program (basename), arguments, redirections, how it gets input.

    `stdin_code` is the text a heredoc or here-string feeds it; `from_xargs` says its
    arguments also come from stdin; `pipe_stage` is its index in a pipeline (0: first or
    alone); `computed` says its program name is decided at run time.
    """

    __slots__ = ("args", "computed", "env", "from_xargs", "pipe_stage", "program",
                 "raw_program", "redir_words", "redirects", "script_code", "stdin_code",
                 "words")

    def __init__(self, program: str, args: list[str] | None = None,
                 redirects: list[tuple[str, str]] | None = None, raw_program: str = "") -> None:
        self.program = program
        self.args = args or []
        self.redirects = redirects or []
        self.raw_program = raw_program or program
        self.computed = False
        self.from_xargs = False
        self.pipe_stage = 0
        self.stdin_code: str | None = None
        self.script_code: str | None = None  # a script file this line wrote, that it runs
        self.env: dict[str, str] = {}
        self.words: list[Word] = []
        self.redir_words: list[Redir] = []

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

    def python_module(self) -> SimpleCommand | None:
        """`python -m NAME ARGS` as the command `NAME ARGS` (what runs is the module, as if
        installed as a program: `python3 -Im pip config set ...` is `pip config set ...`);
        None for anything else. Any `-m` counts, even one after a script or `-c` (where it is
        the script's argument): a guard may see a module that does not run, never miss one
        that does."""
        if not PYTHON.match(self.program):
            return None
        args = self.args
        for i, arg in enumerate(args):
            if not arg.startswith("-") or arg.startswith("--"):
                continue
            for j, flag in enumerate(arg[1:], 2):
                if flag == "m":
                    name = arg[j:] or (args[i + 1] if i + 1 < len(args) else "")
                    rest = args[i + (1 if arg[j:] else 2):]
                    return SimpleCommand(name, rest) if name else None
                if flag in _PYTHON_VALUES:  # the rest of the word is its value
                    break
        return None


class Analysis:
    """Every simple command of a line, its pipelines, and what could not be analysed."""

    __slots__ = ("aliases", "cdpath", "commands", "findings", "pipelines", "sourced", "written")

    def __init__(self) -> None:
        self.commands: list[SimpleCommand] = []
        self.pipelines: list[list[SimpleCommand]] = []
        self.findings: list[Finding] = []
        self.cdpath = False  # CDPATH is set: a relative `cd` may land anywhere
        self.written: dict[str, str | None] = {}  # files the line writes -> text (if shown)
        self.aliases: dict[str, str] = {}
        self.sourced: str | None = None  # a secret file the line sources (`. ./.env`)

    def gate(self, detail: str, rule: str = "unanalysable", group: str = "supply_chain") -> None:
        self.findings.append(Finding(group, rule, detail))


def shell_script(cmd: SimpleCommand) -> str | None:
    """The `-c` script of a shell command (`bash -lc '...'` included), or None."""
    for i, arg in enumerate(cmd.args):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg:
            return cmd.args[i + 1] if i + 1 < len(cmd.args) else ""
        if not arg.startswith("-"):
            return None
    return None


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
