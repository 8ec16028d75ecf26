"""Cheap, deterministic checks that a text is a real answer: kept content, no loops, no echo.

Used on the winner's presentation (presentation.py) and on text replies (converse.py). None
of them calls a model; each is a plain function of the texts, so a run's outcome does not
depend on a judge.

- `key_terms`: what an answer says that a faithful restatement keeps: numbers, code-like
  tokens (identifiers with `_`, `.`, `(`, `/`, digits or inner capitals), capitalised words
  and long words, minus a small stop list. Plurals fold (`queues` = `queue`).
- `kept_share`: the share of the stored answer's key terms (and of its code lines) that a
  presentation still contains.
- `repetition`: the share of a text's sentences that repeat an earlier one.
- `is_chatter`: a short reply that only reports on the protocol ("Submitted.", "Done",
  "I have already answered") and carries no answer.
- `echoes`: a text that restates a vote reason, or names the anonymous agents (agent2)
  when the stored answer does not: the model is talking about the vote, not the task.
"""

from __future__ import annotations

import re

#: A presentation must keep at least this share of the stored answer's key terms...
KEEP_SHARE = 0.5
#: ... and of its code lines, when it has any.
KEEP_CODE_LINES = 0.5
#: At most this share of a text's sentences may repeat an earlier sentence.
MAX_REPETITION = 0.5
#: Sentences shorter than this (characters) are not counted as repeats ("Yes." twice is fine).
_MIN_SENTENCE = 12

_STOP = frozenset((
    "about", "above", "after", "again", "against", "also", "because", "been", "before",
    "being", "below", "between", "both", "could", "does", "doing", "down", "during", "each",
    "from", "further", "have", "having", "here", "hers", "herself", "himself", "into",
    "itself", "just", "more", "most", "myself", "once", "only", "other", "ought", "ours",
    "ourselves", "over", "same", "should", "some", "such", "than", "that", "their", "theirs",
    "them", "themselves", "then", "there", "these", "they", "this", "those", "through",
    "under", "until", "very", "were", "what", "when", "where", "which", "while", "whom",
    "with", "would", "your", "yours", "yourself", "yourselves", "will", "shall", "answer",
    "answers", "final", "best", "team", "agent", "agents", "vote", "votes", "voted",
    "question", "following", "however", "therefore", "thus", "here's", "it's", "that's",
    "there's", "i'm", "i've", "you're", "we're", "they're",
))
_TERM = re.compile(r"[A-Za-z_][\w.\-/()]*[\w)]|\d+(?:[.,:/]\d+)*%?")
_CODE_CHARS = re.compile(r"[_.(/]|\d|[a-z][A-Z]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_LABEL = re.compile(r"\bagent\s?\d+(?:\.\d+)?\b", re.IGNORECASE)
_CHATTER = re.compile(
    r"^(?:(?:ok(?:ay)?|sure|yes|done|thanks?(?: you)?|understood|noted|finished|complete[d]?|"
    r"submitted|sent|voted|ready)\b|(?:i(?:'ve| have)?|my answer|answer|the answer|task|"
    r"it)\b.{0,40}\b(?:already|submitted|answered|voted|sent|done|complete[d]?|finished|"
    r"stands?|provided|given|above|unchanged)\b|(?:see|as) (?:above|my (?:previous|earlier|"
    r"last) (?:answer|reply|message))|no (?:change|changes|update|updates)\b|"
    r"(?:i )?(?:stand|stick) by my\b|nothing (?:to add|more|else)\b|"
    r"(?:calling|called|call(?:ed)? the) (?:new_answer|vote)\b)", re.IGNORECASE)
#: Words chatter is made of: a reply whose key terms are all here says nothing else.
_PROTOCOL_WORDS = frozenset((
    "submitted", "answered", "already", "voted", "complete", "completed", "finished", "stand",
    "provided", "given", "above", "unchanged", "change", "update", "previous", "earlier",
    "reply", "message", "new_answer", "vote", "thank", "thanks", "understood", "noted",
    "ready", "nothing", "sent", "calling", "called", "stick", "okay", "sure", "tool", "call",
    "done",
))  # folded forms: "changes" is "change"
#: Replies longer than this are never chatter, whatever words they start with.
_CHATTER_MAX_WORDS = 16


def _fold(word: str) -> str:
    w = word.lower().strip(".-/")
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def key_terms(text: str) -> set[str]:
    """The terms a faithful restatement of `text` keeps (see the module docstring)."""
    terms = set()
    for m in _TERM.finditer(text):
        token = m.group().rstrip(".,;:")
        if not token:
            continue
        if token[0].isdigit() or _CODE_CHARS.search(token[1:] if token[0].isupper() else token):
            terms.add(token.lower())
            continue
        word = _fold(token)
        if word in _STOP:
            continue
        before = text[:m.start()].rstrip()
        # a capital that does not start a sentence marks a name (Paris, SQS)
        proper = token[0].isupper() and bool(before) and before[-1] not in ".!?:\n-*#>"
        if len(token) >= 5 or (proper and len(token) >= 3):
            terms.add(word)
    return terms


def _code_lines(text: str) -> list[str]:
    """Non-trivial lines inside fenced code blocks, whitespace-normalised."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            inside = not inside
            continue
        squeezed = " ".join(line.split())
        if inside and len(squeezed) >= 8:
            lines.append(squeezed)
    return lines


def kept_share(presented: str, stored: str) -> tuple[float, list[str]]:
    """The share of `stored`'s key content that `presented` keeps, and the terms it lost
    (the smaller of the key-term and code-line shares; 1.0 when `stored` has none)."""
    want = key_terms(stored)
    have = key_terms(presented)
    lost = sorted(want - have)
    share = 1.0 if not want else 1 - len(lost) / len(want)
    code = _code_lines(stored)
    if code:
        text = " ".join(presented.split())
        code_share = sum(1 for line in code if line in text) / len(code)
        if code_share < KEEP_CODE_LINES:
            share = min(share, code_share)
            lost = [*lost, *(line for line in code if line not in text)]
    return share, lost


def repetition(text: str) -> float:
    """The share of `text`'s sentences (of some length) that repeat an earlier one."""
    sentences = [" ".join(s.lower().split()) for s in _SENTENCE.split(text)]
    sentences = [s for s in sentences if len(s) >= _MIN_SENTENCE]
    if len(sentences) < 3:
        return 0.0
    seen: set[str] = set()
    repeats = 0
    for s in sentences:
        if s in seen:
            repeats += 1
        seen.add(s)
    return repeats / len(sentences)


def is_chatter(text: str) -> bool:
    """A short reply that only reports on the protocol and holds no answer: it matches a
    chatter phrase and says nothing else ("Submitted.", "Done", "I have already answered";
    not "Done: Paris")."""
    words = text.split()
    if not words or len(words) > _CHATTER_MAX_WORDS:
        return False
    if not _CHATTER.search(text.strip().strip("*_`\"'").lstrip("-• ")):
        return False
    return key_terms(text) <= _PROTOCOL_WORDS


def echoes(text: str, stored: str, reasons: list[str]) -> str | None:
    """What `text` echoes instead of answering (a vote reason, the agents' labels), or None."""
    squeezed = " ".join(text.lower().split())
    for reason in reasons:
        r = " ".join(reason.lower().split())
        if len(r) >= 20 and r in squeezed and r not in " ".join(stored.lower().split()):
            return f"it repeats a vote's reason ({reason[:60]!r})"
    if _LABEL.search(text) and not _LABEL.search(stored):
        return "it talks about the agents (agent1, agent2, ...) instead of the task"
    return None
