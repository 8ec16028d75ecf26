"""A shell lexer for the hook: words, operators, redirections, substitutions, heredocs.

It reads a command line the way bash splits it, so that what the shell runs is what the
hook judges: quotes (`'...'`, `"..."`, `$'...'` with its escapes decoded) and backslashes
are removed, `$(...)`, backquotes and `<(...)`/`>(...)` are found with their nesting and
kept as inner scripts to analyse, `${...}` and `$((...))` are skipped whole, extended globs
(`!(x)`) stay one word, comments are dropped, and heredoc bodies are attached to their
redirection. A substituted part of a word becomes NUL in its value: the value is then
"unknown" to `scope.py`. What it cannot lex (an unterminated quote or substitution) is
reported as a problem, and the hook treats such a line as gated. Standard library only.
"""

from __future__ import annotations

import re

from massgen_mcp.regex import lazy

UNKNOWN = "\0"
_WORD_END = frozenset(" \t\r\n;&|()<>")
_PLAIN = lazy(r"[^ \t\r\n;&|()<>'\"\\$`@!?*+]+")
_OPS = ("&&", "||", ";;&", ";;", ";&", "|&", ";", "&", "|", "(", ")")
_REDIRS = ("<<<", "<<-", "<<", "&>>", "&>", ">>", ">|", ">&", "<&", "<>", ">", "<")
_ANSI = lazy(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|[0-7]{1,3}|c.|.)", re.S)
_ANSI_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b",
                "E": "\x1b", "f": "\f", "v": "\v"}
MAX_DEPTH = 6


class Word:
    """One shell word: its value, whether any of it was quoted, and its substitutions.

    `subs` holds (kind, script) pairs: kind "cmd" for `$(...)` and backquotes, "in" / "out"
    for `<(...)` / `>(...)`. `dynamic` is True when the value holds `$` expansions or
    substitutions (the shell, not the text, decides the final word).
    """

    __slots__ = ("dynamic", "quoted", "subs", "value")

    def __init__(self) -> None:
        self.value = ""
        self.quoted = False
        self.dynamic = False
        self.subs: list[tuple[str, str]] = []

    def __repr__(self) -> str:
        return f"Word({self.value!r})"


class Op:
    """A control operator: `;`, `&&`, `||`, `|`, `|&`, `&`, `(`, `)`, `;;`, newline."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Op({self.value!r})"


class Redir:
    """A redirection: operator, target word (the delimiter for a heredoc), heredoc body."""

    __slots__ = ("body", "op", "target")

    def __init__(self, op: str, target: Word | None) -> None:
        self.op = op
        self.target = target
        self.body: str | None = None

    def __repr__(self) -> str:
        return f"Redir({self.op!r}, {self.target!r})"


Token = Word | Op | Redir


def _decode_ansi(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        esc = m.group(1)
        if esc[0] in "xu" and len(esc) > 1:
            return chr(int(esc[1:], 16))
        if esc[0] in "01234567":
            return chr(int(esc, 8))
        if esc[0] == "c" and len(esc) > 1:
            return chr(ord(esc[1]) & 0x1F)
        return _ANSI_SIMPLE.get(esc, esc)

    return _ANSI.sub(sub, text)


class _Lexer:
    def __init__(self, text: str, start: int = 0, nested: bool = False, depth: int = 0) -> None:
        self.s = text
        self.depth = depth
        self.i = start
        self.nested = nested  # inside `$(...)`: stop at the unmatched `)`
        self.tokens: list[Token] = []
        self.problems: list[str] = []
        self.pending: list[tuple[Redir, str, bool]] = []

    def run(self) -> int:
        s, depth = self.s, 0
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r":
                self.i += 1
            elif s.startswith("\\\n", self.i):
                self.i += 2
            elif c == "#":
                end = s.find("\n", self.i)
                self.i = len(s) if end < 0 else end
            elif c == "\n":
                self.tokens.append(Op("\n"))
                self.i += 1
                self._heredocs()
            elif c in "<>" and s.startswith("(", self.i + 1):
                self.tokens.append(self._word())
            elif c in "<>&" and (redir := self._match(_REDIRS)) is not None:
                self._redirect(redir)
            elif c in ";&|()" and (op := self._match(_OPS)) is not None:
                if op == "(":
                    depth += 1
                elif op == ")":
                    if self.nested and depth == 0:
                        return self.i - 1
                    depth -= 1
                self.tokens.append(Op(op))
            else:
                word = self._word()
                if word.value.isdigit() and not word.quoted and self.s[self.i:self.i + 1] in (
                        "<", ">"):
                    continue  # `2>file`: the fd number belongs to the redirection
                self.tokens.append(word)
        if self.nested:
            self.problems.append("a `$(` or `<(` is never closed")
        for pending, _, _ in self.pending:
            pending.body = ""
        return len(s)

    def _match(self, options: tuple[str, ...]) -> str | None:
        for option in options:
            if self.s.startswith(option, self.i):
                self.i += len(option)
                return option
        return None

    def _redirect(self, op: str) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1
        target = None
        if (self.i < len(self.s) and self.s[self.i] not in _WORD_END) or self.s.startswith(
                ("<(", ">("), self.i):
            target = self._word()
        redir = Redir(op, target)
        self.tokens.append(redir)
        if op in ("<<", "<<-"):
            self.pending.append((redir, target.value if target else "", op == "<<-"))

    def _heredocs(self) -> None:
        for redir, delim, strip_tabs in self.pending:
            lines: list[str] = []
            while self.i < len(self.s):
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                line = self.s[self.i:end]
                self.i = end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    break
                lines.append(line)
            redir.body = "\n".join(lines)
        self.pending = []

    def _word(self) -> Word:
        w = Word()
        s, out = self.s, []
        while self.i < len(s):
            if plain := _PLAIN.match(s, self.i):
                out.append(plain.group(0))
                self.i = plain.end()
                continue
            c = s[self.i]
            if c in "<>" and s.startswith("(", self.i + 1) and not out:
                out.append(self._subst(w, "in" if c == "<" else "out", self.i + 2))
            elif c in _WORD_END:
                break
            elif c in "@!?*+" and s.startswith("(", self.i + 1):
                end = self._close_paren(self.i + 2)
                out.append("*")  # an extended glob: it matches names, like `*`
                self.i = end + 1
            elif c == "'":
                w.quoted = True
                end = s.find("'", self.i + 1)
                if end < 0:
                    self.problems.append("a single quote is never closed")
                    end = len(s)
                out.append(s[self.i + 1:end])
                self.i = end + 1
            elif c == '"':
                w.quoted = True
                self.i += 1
                out.append(self._double(w))
            elif c == "\\":
                out.append(s[self.i + 1:self.i + 2])
                self.i += 2
            else:
                out.append(self._expansion_or(c, w))
        w.value = "".join(out)
        return w

    def _double(self, w: Word) -> str:
        s, out = self.s, list[str]()
        while self.i < len(s):
            c = s[self.i]
            if c == '"':
                self.i += 1
                return "".join(out)
            if c == "\\" and s[self.i + 1:self.i + 2] in ('$', '`', '"', "\\", "\n"):
                out.append(s[self.i + 1] if s[self.i + 1] != "\n" else "")
                self.i += 2
            else:
                out.append(self._expansion_or(c, w))
        self.problems.append("a double quote is never closed")
        return "".join(out)

    def _expansion_or(self, c: str, w: Word) -> str:
        """What `c` stands for outside single quotes: an expansion it starts, or itself."""
        if c == "$":
            return self._dollar(w)
        if c == "`":
            return self._backquote(w)
        self.i += 1
        return c

    def _dollar(self, w: Word) -> str:
        s, i = self.s, self.i
        nxt = s[i + 1:i + 2]
        if nxt == "'":
            w.quoted = True
            j = i + 2
            while j < len(s) and s[j] != "'":
                j += 2 if s[j] == "\\" else 1
            if j >= len(s):
                self.problems.append("a $'...' string is never closed")
            self.i = j + 1
            return _decode_ansi(s[i + 2:j])
        if nxt == '"':
            w.quoted = True
            self.i = i + 2
            return self._double(w)
        if s.startswith("((", i + 1):
            w.dynamic = True
            end = self._close_paren(i + 3, closer="))")
            # `$(( a[$(cmd)] ))`: bash runs substitutions inside an arithmetic expansion
            w.subs.extend(("cmd", inner) for inner in _inner_commands(s[i + 3:end]))
            self.i = end + 2
            return UNKNOWN
        if nxt == "(":
            return self._subst(w, "cmd", i + 2)
        if nxt == "{":
            w.dynamic = True
            end = self._close_brace(i + 2)
            body = s[i + 2:end]
            if "$(" in body or "`" in body:
                w.subs.append(("cmd", body.split("$(", 1)[-1].rstrip(")")))
            self.i = end + 1
            return "${" + body + "}"
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]", s[i + 1:])
        if not m:
            self.i = i + 1
            return "$"
        w.dynamic = True
        self.i = i + 1 + m.end()
        return "$" + m.group(0)

    def _subst(self, w: Word, kind: str, start: int) -> str:
        if self.depth >= MAX_DEPTH:
            self.problems.append("substitutions nested too deeply to analyse")
            self.i = len(self.s)
            return UNKNOWN
        inner = _Lexer(self.s, start, nested=True, depth=self.depth + 1)
        end = inner.run()
        self.problems.extend(inner.problems)
        w.subs.append((kind, self.s[start:end]))
        w.dynamic = True
        self.i = end + 1
        return UNKNOWN

    def _backquote(self, w: Word) -> str:
        s, j, out = self.s, self.i + 1, []
        while j < len(s) and s[j] != "`":
            if s[j] == "\\" and j + 1 < len(s):
                out.append(s[j + 1] if s[j + 1] in "`\\$" else s[j:j + 2])
                j += 2
            else:
                out.append(s[j])
                j += 1
        if j >= len(s):
            self.problems.append("a backquote is never closed")
        w.subs.append(("cmd", "".join(out)))
        w.dynamic = True
        self.i = j + 1
        return UNKNOWN

    def _close_paren(self, start: int, closer: str = ")") -> int:
        depth, j, s = 0, start, self.s
        while j < len(s):
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c in "'\"":
                end = s.find(c, j + 1)
                j = len(s) if end < 0 else end + 1
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0 and s.startswith(closer, j):
                    return j
                depth -= 1
            j += 1
        self.problems.append("a parenthesis is never closed")
        return len(s)

    def _close_brace(self, start: int) -> int:
        depth, j, s = 0, start, self.s
        while j < len(s):
            if s[j] == "{":
                depth += 1
            elif s[j] == "}":
                if depth == 0:
                    return j
                depth -= 1
            j += 1
        self.problems.append("a ${ is never closed")
        return len(s)


def lex(text: str) -> tuple[list[Token], list[str]]:
    """The tokens of a command line and the problems met lexing it (empty: understood)."""
    lexer = _Lexer(text)
    lexer.run()
    return lexer.tokens, lexer.problems


def _inner_commands(text: str) -> list[str]:
    """The scripts of the `$(...)` and backquote substitutions inside `text`."""
    out = re.findall(r"`([^`]*)`", text)
    start = text.find("$(")
    while start >= 0:
        depth, j = 1, start + 2
        while j < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        out.append(text[start + 2:j - 1])
        start = text.find("$(", j)
    return out
