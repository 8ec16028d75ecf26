"""An echo is not an answer: text that reproduces the protocol instead of answering the task.

Measured on SmolLM2-135M: "Your complete answer." (the tool schema's own field description)
was accepted as an answer, voted for, and won. Small and confused models also answer with
the reminder's placeholder ("<your complete answer>"), an instruction of the prompt ("Call
new_answer or vote."), the task itself, an agent's label ("agent2", "I vote for agent1") or
a vote's reason. `echo_problem` names what a candidate answer echoes, or returns None:

- a placeholder: the whole text is one `<your ...>` or `[Answer]` slot, or holds one of ours;
- protocol tags (`<ORIGINAL MESSAGE>`, `<CURRENT ANSWERS>`, `<end of agent2.1>`, ...);
- every sentence is a sentence (or a run of at least `_MIN_PHRASE_WORDS` words of one) of
  the protocol: the offered tools' descriptions and their parameters' descriptions, the
  system prompt, the format's instructions, the turn's closing lines and the reminder;
- the text is the task, word for word;
- the text names an agent label and says nothing else ("agent2 is the best");
- the text is a vote's reason, or a reason with little around it.

A vote's own reason is never checked: a reason may say anything. The checks are plain
functions of the texts, so a run's outcome never depends on a judge.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass

from massgen_mcp.coordination.faithful import key_terms
from massgen_mcp.messages import ToolSpec

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_LABEL = re.compile(r"\bagent[\s_#-]?\d+(?:\.\d+)?\b", re.IGNORECASE)
#: A whole text that is one slot: `<your answer here>`, `[Answer]`, `...` (not `<br>`, `[1, 2]`)
_SLOT = re.compile(r"^(?:[<\[][^<>\[\]\n]{0,40}\b(?:your|answer|here|insert|text|reason|why|"
                   r"content|placeholder|response)\b[^<>\[\]\n]{0,40}[>\]]|\.{3}|…)$",
                   re.IGNORECASE)
_OUR_SLOTS = ("<your complete answer>", "<why>", "<your answer>")
_TAGS = re.compile(r"</?(?:ORIGINAL MESSAGE|CURRENT ANSWERS|ALL ANSWERS|VOTES FOR YOU|CONTEXT)"
                   r"\b|<end of agent\d", re.IGNORECASE)
_MIN_PHRASE_WORDS = 4
#: Words that say nothing about the task next to a label ("agent2's answer is correct").
_FILLER = frozenset((
    "agree", "choose", "chose", "prefer", "select", "selected", "pick", "picked", "correct",
    "complete", "accurate", "better", "great", "right", "thorough", "detailed", "concise",
    "clear", "response", "solution", "option", "choice", "submit", "submitted", "because",
    "strongest", "strong", "good", "fine", "winner", "winning", "mine", "already", "reason",
    "support", "endorse", "agreed",
))


_WORD = re.compile(r"\w+")


def _unescaped(text: str) -> str:
    """`text` with HTML entities resolved, twice: SmolLM2 wrote "answer.&amp;#34;"."""
    return html.unescape(html.unescape(text))


def _norm(text: str) -> str:
    """The words of `text`, lowercased: punctuation, markup and stray entities do not make
    an echo new ("Your complete answer.&amp;#34;" is "your complete answer")."""
    return " ".join(_WORD.findall(_unescaped(text).lower()))


def _sentences(text: str) -> list[str]:
    return [s for s in (_norm(p) for p in _SENTENCE.split(text)) if s]


def schema_texts(tools: Iterable[ToolSpec]) -> list[str]:
    """Every description in the tools' specs: the tools' own and their parameters'."""
    texts: list[str] = []
    for tool in tools:
        texts.append(tool.description)
        stack: list[object] = [tool.parameters]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                if isinstance(node.get("description"), str):
                    texts.append(node["description"])
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
    return texts


@dataclass(frozen=True)
class EchoSources:
    """What an answer must not merely repeat, for one turn."""

    protocol: frozenset[str]  # normalized sentences of the protocol texts
    task: str
    reasons: tuple[str, ...]

    @classmethod
    def of(cls, protocol: Iterable[str], task: str = "",
           reasons: Iterable[str] = ()) -> EchoSources:
        sentences = {s for text in protocol if text for s in _sentences(text)}
        sentences |= {_norm(text) for text in protocol if text}
        return cls(frozenset(s for s in sentences if s), _norm(task),
                   tuple(_norm(r) for r in reasons if r and r.strip()))


def _in_protocol(sentence: str, protocol: frozenset[str]) -> bool:
    if sentence in protocol:
        return True
    if len(sentence.split()) < _MIN_PHRASE_WORDS:
        return False
    padded = f" {sentence} "
    return any(padded in f" {p} " for p in protocol)


def echo_problem(text: str, sources: EchoSources) -> str | None:
    """What `text` echoes instead of answering (see the module docstring), or None."""
    text = _unescaped(text)
    whole = _norm(text)
    stripped = text.strip().strip("\"'`*")
    if not whole and not stripped:
        return None  # an empty answer is the format's to refuse
    if _SLOT.match(stripped) or any(slot in text.lower() for slot in _OUR_SLOTS):
        return "it is a placeholder from the instructions, not an answer"
    if _TAGS.search(text):
        return "it repeats the coordination prompt's own tags, not an answer"
    sentences = _sentences(text)
    if sentences and all(_in_protocol(s, sources.protocol) for s in sentences):
        return (f"it repeats the instructions or the tool's description ({text.strip()[:60]!r}),"
                " not an answer")
    if sources.task and whole == sources.task:
        return "it repeats the task instead of answering it"
    if _LABEL.search(text) and len(text.split()) <= 16:
        rest = key_terms(_LABEL.sub(" ", text)) - _FILLER
        if not rest:
            return "it names an agent instead of answering (to back an answer, call vote)"
    for reason in sources.reasons:
        if len(reason) >= 8 and (whole == reason or (
                len(reason) >= 20 and reason in whole and len(whole) <= 1.5 * len(reason) + 20)):
            return "it repeats a vote's reason, not an answer"
    return None
