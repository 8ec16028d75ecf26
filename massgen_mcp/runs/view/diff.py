"""What changed between two answer versions, as a compact word-level diff in HTML."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from html import escape

_TOKENS = re.compile(r"\s+|[^\s]+")
_CONTEXT = 8  # unchanged words kept on each side of a change
_MAX_TOKENS = 6000  # beyond this, compare lines instead of words (SequenceMatcher is O(n^2))


@dataclass
class Diff:
    html: str
    added: int
    removed: int
    unit: str  # "words" or "lines"

    @property
    def summary(self) -> str:
        if not (self.added or self.removed):
            return "no textual change"
        return f"+{self.added} / \u2212{self.removed} {self.unit}"


def diff_html(old: str, new: str) -> Diff:
    """`<ins>`/`<del>` marks over escaped text; long unchanged stretches shortened to `…`."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    unit = "words"
    if len(a) + len(b) > _MAX_TOKENS:
        a, b, unit = old.splitlines(keepends=True), new.splitlines(keepends=True), "lines"
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out: list[str] = []
    added = removed = 0
    ops = matcher.get_opcodes()
    for n, (op, i1, i2, j1, j2) in enumerate(ops):
        if op == "equal":
            out.append(_context(a[i1:i2], first=n == 0, last=n == len(ops) - 1))
            continue
        if i2 > i1:
            removed += _count(a[i1:i2], unit)
            out.append(f"<del>{escape(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            added += _count(b[j1:j2], unit)
            out.append(f"<ins>{escape(''.join(b[j1:j2]))}</ins>")
    return Diff("".join(out), added, removed, unit)


def _count(tokens: list[str], unit: str) -> int:
    return len(tokens) if unit == "lines" else sum(1 for t in tokens if not t.isspace())


def _context(tokens: list[str], *, first: bool, last: bool) -> str:
    keep = _CONTEXT * 2  # words and the spaces between them
    if len(tokens) <= keep * 2 + 1:
        return escape("".join(tokens))
    head = [] if first else tokens[:keep]
    tail = [] if last else tokens[-keep:]
    return (escape("".join(head)) + '<span class="gap">\u2026</span>' + escape("".join(tail)))
