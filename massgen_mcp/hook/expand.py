"""The expansions the shell performs before it runs a command, done statically.

The hook judges a command after these, so a form that only exists before expansion cannot
hide what runs (`{rm,-rf,/etc}` is `rm -rf /etc`):

- brace expansion of unquoted words (`a{b,c}`, `{1..3}`), as bash does it first;
- `~user` (from the password database; `~` itself is left to `scope.py`, which knows the
  home directory the hook judges against) and `~-` (the previous directory: unknown);
- command substitutions whose output is known without running anything (`$(echo x)`,
  `$(printf x)`, `$(dirname p)`, `$(basename p)`, `$(pwd)`);
- glob patterns in a program name (`/usr/bin/[r]m`), matched against the file system.

What is still unknown after this stays unknown (`UNKNOWN` in the value), and the rules
gate it: a computed program name, path or destination is never guessed. Standard library
only.
"""

from __future__ import annotations

import fnmatch
import os
import re

from massgen_mcp.hook.lexer import UNKNOWN, Word
from massgen_mcp.regex import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from massgen_mcp.hook.command import SimpleCommand

    Parser = Callable[[str], list[SimpleCommand]]

_MAX_WORDS = 256
_MAX_LISTING = 4096
_SEQ = lazy(r"^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$")
_GLOB = lazy(r"[*?\[]")
_TILDE_USER = lazy(r"^~([A-Za-z_][\w.-]*|-)(?=/|$)")
_STATIC = frozenset({"echo", "printf", "dirname", "basename", "pwd", "mktemp"})
# What `$(mktemp)` stands for: a path that did not exist before the line made it, so
# writing or deleting there harms nobody's data (`scope.py` treats it as private temp).
FRESH_TEMP = "/tmp/.massgen-hook-fresh-mktemp/tmp.X"


def _matching_brace(text: str, start: int) -> int:
    depth = 0
    for j in range(start, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _split_top(body: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for c in body:
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        depth += c == "{"
        depth -= c == "}"
        cur.append(c)
    parts.append("".join(cur))
    return parts


def _sequence(body: str) -> list[str] | None:
    m = _SEQ.match(body)
    if not m:
        return None
    a, b, step = m.group(1), m.group(2), abs(int(m.group(3) or 1)) or 1
    if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
        lo, hi = int(a), int(b)
        rng = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
        return [str(n) for n in rng[:_MAX_WORDS]]
    if a.isalpha() and b.isalpha():
        lo, hi = ord(a), ord(b)
        rng = range(lo, hi + 1, step) if lo <= hi else range(lo, hi - 1, -step)
        return [chr(n) for n in rng][:_MAX_WORDS]
    return None


def braces(text: str) -> list[str]:
    """Bash brace expansion of one unquoted word (`${...}` is left alone)."""
    i = 0
    while True:
        i = text.find("{", i)
        if i < 0:
            return [text]
        if i and text[i - 1] == "$":
            i += 1
            continue
        end = _matching_brace(text, i)
        if end < 0:
            return [text]
        body = text[i + 1:end]
        parts = _split_top(body)
        alternatives = parts if len(parts) > 1 else _sequence(body)
        if alternatives is None:
            i += 1
            continue
        head, tail = text[:i], text[end + 1:]
        out: list[str] = []
        for alt in alternatives:
            out.extend(braces(head + alt + tail))
            if len(out) >= _MAX_WORDS:
                return out[:_MAX_WORDS]
        return out


def tilde_user(text: str) -> str:
    """`~root/x` -> `/root/x`; `~-` -> unknown; `~` and unknown users are left as written."""
    m = _TILDE_USER.match(text)
    if not m:
        return text
    if m.group(1) == "-":
        return UNKNOWN + text[m.end():]
    try:
        import pwd

        home = pwd.getpwnam(m.group(1)).pw_dir
    except (KeyError, ImportError):
        return text
    return home + text[m.end():]


_PARAM = lazy(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-=+?]|%%|%|##|#)"
                    r"((?:[^{}]|\{[^{}]*\})*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _strip(value: str, op: str, pattern: str) -> str:
    """`${v%pat}`, `${v%%pat}`, `${v#pat}`, `${v##pat}` as bash does them (glob patterns)."""
    import fnmatch

    cuts = range(len(value) + 1)
    if op in ("%", "%%"):
        order = reversed(cuts) if op == "%" else cuts
        for k in order:
            if fnmatch.fnmatchcase(value[k:], pattern):
                return value[:k]
    else:
        order = cuts if op == "#" else reversed(cuts)
        for k in order:
            if fnmatch.fnmatchcase(value[:k], pattern):
                return value[k:]
    return value


def param_expand(text: str, lookup: Callable[[str], str | None]) -> str:
    """`$NAME`, `${NAME}`, `${NAME:-x}`, `${NAME%pat}`, ... expanded where `lookup` knows
    NAME; an unknown parameter stays as written (the caller decides what unknown means)."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(4)
        value = lookup(name)
        op, arg = m.group(2), m.group(3) or ""
        if not op:
            return m.group(0) if value is None else value
        if op in (":-", "-", ":=", "="):
            if value is None or (op.startswith(":") and value == ""):
                return arg if "$" not in arg else m.group(0)
            return value
        if op in (":?", "?"):  # `${HOME:?}`: the value, or the shell stops
            return value if value is not None and (op == "?" or value) else m.group(0)
        if op in (":+", "+"):
            return (arg if value else "") if value is not None else m.group(0)
        if op in ("%", "%%", "#", "##") and value is not None and UNKNOWN not in value:
            return _strip(value, op, arg)
        return m.group(0)

    return _PARAM.sub(sub, text)


def _copy(word: Word, value: str) -> Word:
    new = Word()
    new.value, new.quoted, new.dynamic, new.subs = value, word.quoted, word.dynamic, word.subs
    return new


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "a": "\a", "r": "\r", "e": "\x1b", "0": "\0"}


def _unescape(text: str) -> str:
    """printf's backslash escapes: `\162\155` and `\x72\x6d` are `rm`."""
    def one(m: re.Match[str]) -> str:
        if m.group(1):
            return chr(int(m.group(1), 8) & 0xFF)
        if m.group(2):
            return chr(int(m.group(2), 16))
        return _ESCAPES.get(m.group(3), "\\" + m.group(3))
    return re.sub(r"\\(?:0?([0-7]{1,3})|x([0-9a-fA-F]{1,2})|(.))", one, text)


def static_output(script: str, home: str, parse: Parser) -> str | None:
    """The output of a substitution that needs nothing run to know (`$(echo /)`), or None.
    `parse` is the shell's own reader of simple commands (passed in: the shell module calls
    this one, and the two must not import each other)."""
    cmds = parse(script)
    if len(cmds) != 1 or cmds[0].program not in _STATIC or cmds[0].redirects:
        return None
    cmd = cmds[0]
    args = [home + a[1:] if a == "~" or a.startswith("~/") else a for a in cmd.args]
    if any(UNKNOWN in a or "$" in a for a in args):
        return None
    if cmd.program == "echo":  # `echo -e '\162\155'` (and dash's plain echo) decodes escapes
        return _unescape(" ".join(a for a in args if a not in ("-n", "-e", "-E")))
    if cmd.program == "printf":
        if not args or "%" in args[0].replace("%s", ""):
            return None
        fmt = _unescape(args[0])
        return (fmt.replace("%s", "{}").format(*args[1:]) if "%s" in fmt else fmt).strip("\n")
    if cmd.program == "pwd":
        return None  # the directory the line is in at that point: judged by `cd` tracking
    if cmd.program == "mktemp":
        # a template or `-p DIR` may place it elsewhere: only the default form is fresh
        return FRESH_TEMP if all(a in ("-d", "-q", "-u", "--directory", "--quiet")
                                            for a in args) else None
    if not args:
        return None
    path = args[-1].rstrip("/") or "/"
    return os.path.dirname(path) or "." if cmd.program == "dirname" else os.path.basename(path)


def _substitute(word: Word, home: str, parse: Parser) -> Word:
    """Replace static command substitutions in the word by their output."""
    if not word.subs or word.value.count(UNKNOWN) != len(word.subs):
        return word
    outputs = []
    for kind, body in word.subs:
        out = static_output(body, home, parse) if kind == "cmd" else None
        if out is None:
            return word
        outputs.append(out)
    value = word.value
    for out in outputs:
        value = value.replace(UNKNOWN, out, 1)
    new = _copy(word, value)
    new.subs = []
    return new


def expand_words(words: list[Word], home: str, parse: Parser) -> list[Word]:
    """The words of one simple command after brace, `~user` and static substitutions."""
    out: list[Word] = []
    for word in words:
        word = _substitute(word, home, parse)
        values = [word.value] if word.quoted or "{" not in word.value else braces(word.value)
        for value in values:
            if not word.quoted:
                value = tilde_user(value)
            out.append(word if value == word.value else _copy(word, value))
    return out


def _glob_last(pattern: str) -> list[str] | None:
    """Matches of a glob whose wildcards are all in its last part: one directory listing,
    bounded (a pattern like `/*/*/*/*` could walk the whole disk). None: not bounded."""
    head, _, last = pattern.rpartition("/")
    if _GLOB.search(head):
        return None
    directory = head or ("/" if pattern.startswith("/") else ".")
    try:
        with os.scandir(directory) as it:
            names = [e.name for _, e in zip(range(_MAX_LISTING), it, strict=False)]
    except OSError:
        return []
    hidden = last.startswith(".")
    found = [n for n in names if fnmatch.fnmatchcase(n, last) and (hidden or n[:1] != ".")]
    return [f"{head}/{n}" if head or pattern.startswith("/") else n for n in sorted(found)][
        :_MAX_WORDS]


def glob_program(value: str) -> list[str] | None:
    """A program name written as a glob (`/bin/r?`): what it matches, or None if no glob.

    A pattern the hook will not walk (wildcards before the last part) matches nothing it
    can name, so the program stays unknown and is gated."""
    if not is_glob(value) or UNKNOWN in value:
        return None
    return _glob_last(value) or []


def is_glob(text: str) -> bool:
    """A pattern bash would expand: `*`, `?`, or a closed `[...]` (`[` and `[[` are not)."""
    return bool(re.search(r"[*?]|\[[^\]]+\]", text))


def glob_matches(pattern: str, cwd: str, home: str) -> list[str]:
    """Existing paths an unquoted glob argument matches (what the shell would pass)."""
    if not _GLOB.search(pattern) or UNKNOWN in pattern or "$" in pattern:
        return []
    if pattern == "~" or pattern.startswith("~/"):
        pattern = home + pattern[1:]
    base = pattern if os.path.isabs(pattern) else os.path.join(cwd, pattern)
    return _glob_last(base) or []
