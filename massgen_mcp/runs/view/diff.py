"""What changed between two answer versions, as a compact diff in HTML: lines first, then
words inside the lines that changed (fast on long answers, precise on short edits)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from html import escape

_WORDS = re.compile(r"\S+\s*|\s+")  # a word with the space after it: no run of equal tokens
_CONTEXT_LINES = 2  # unchanged lines kept on each side of a change
#: Above this many words on a side, a changed block is shown as removed + added, not word by
#: word: SequenceMatcher's cost grows with the product of the sides.
_MAX_WORDS = 1000


@dataclass
class Diff:
    html: str
    added: int
    removed: int

    @property
    def summary(self) -> str:
        if not (self.added or self.removed):
            return "no textual change"
        return f"+{self.added} / \u2212{self.removed} words"


def diff_html(old: str, new: str) -> Diff:
    """`<ins>`/`<del>` marks over escaped text; long unchanged stretches shortened to `…`."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    out: list[str] = []
    added = removed = 0
    for n, (op, i1, i2, j1, j2) in enumerate(ops):
        if op == "equal":
            out.append(_context(a[i1:i2], first=n == 0, last=n == len(ops) - 1))
            continue
        old_words, new_words = _WORDS.findall("".join(a[i1:i2])), _WORDS.findall(
            "".join(b[j1:j2]))
        if op == "replace" and max(len(old_words), len(new_words)) <= _MAX_WORDS:
            html, plus, minus = _words(old_words, new_words)
        else:
            html = _mark("del", old_words) + _mark("ins", new_words)
            plus, minus = _count(new_words), _count(old_words)
        out.append(html)
        added, removed = added + plus, removed + minus
    return Diff("".join(out), added, removed)


def _words(a: list[str], b: list[str]) -> tuple[str, int, int]:
    out: list[str] = []
    added = removed = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(escape("".join(a[i1:i2])))
            continue
        out.append(_mark("del", a[i1:i2]) + _mark("ins", b[j1:j2]))
        added, removed = added + _count(b[j1:j2]), removed + _count(a[i1:i2])
    return "".join(out), added, removed


def _mark(tag: str, tokens: list[str]) -> str:
    return f"<{tag}>{escape(''.join(tokens))}</{tag}>" if tokens else ""


def _count(tokens: list[str]) -> int:
    return sum(1 for t in tokens if not t.isspace())


def _context(lines: list[str], *, first: bool, last: bool) -> str:
    keep = _CONTEXT_LINES
    if len(lines) <= keep * 2 + 1:
        return escape("".join(lines))
    head = [] if first else lines[:keep]
    tail = [] if last else lines[-keep:]
    return escape("".join(head)) + '<span class="gap">\u2026\n</span>' + escape("".join(tail))
