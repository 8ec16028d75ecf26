"""What an answer is: free text by default, or structured data (plans, checkpoint plans).

The orchestrator does not know what an answer contains. An `AnswerFormat` says what the
`new_answer` tool takes, checks a submission (a rejected one goes back to the agent as a tool
error listing every problem), and renders an accepted answer for the other agents.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    """An accepted answer: `text` is what people read; `data` is the structured value, if any."""

    text: str
    data: Any = None


class AnswerRejected(Exception):
    """A submitted answer is invalid; `problems` are shown to the agent so it can fix them."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


class AnswerFormat(Protocol):
    #: Words used in prompts, e.g. "answer", "plan".
    noun: str

    def tool_description(self) -> str:
        """Description of the `new_answer` tool."""
        ...

    def tool_parameters(self) -> dict[str, Any]:
        """JSON schema of the `new_answer` arguments."""
        ...

    def parse(self, arguments: dict[str, Any]) -> ParsedAnswer:
        """Validate `new_answer` arguments; raise `AnswerRejected` listing every problem."""
        ...

    def render(self, answer: ParsedAnswer) -> str:
        """How other agents see this answer when they compare and vote (compact, not raw JSON)."""
        ...

    def instructions(self) -> str:
        """Extra task instructions for this kind of answer ("" for none)."""
        ...


def tool_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of `model` for tool parameters: self-contained (no `$ref`/`$defs`),
    without titles, defaults or `additionalProperties`, which some providers reject. An
    optional field is offered as its type alone: leaving it out already says null. A copy
    the caller may change."""
    return copy.deepcopy(_tool_json_schema(model))


@functools.cache
def _tool_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    # Made once per model: pydantic takes milliseconds, and the schema is offered every turn.
    raw = model.model_json_schema()
    inlined: dict[str, Any] = _inline(raw, raw.get("$defs", {}))
    return inlined


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_inline(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _inline(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    choices = [c for c in node.get("anyOf", []) if c != {"type": "null"}]
    if len(choices) == 1 and len(node["anyOf"]) == 2:
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        return {**_inline(choices[0], defs), **_inline(rest, defs)}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("$defs", "title", "default", "additionalProperties"):
            continue
        if key == "properties":
            out[key] = {name: _inline(sub, defs) for name, sub in value.items()}
        else:
            out[key] = _inline(value, defs)
    return out


_ANSWER_KEYS = frozenset({"answer", "text", "response", "final_answer", "message", "result"})


class TextAnswer:
    """The default: an answer is free text in `content`."""

    noun = "answer"

    def tool_description(self) -> str:
        return (
            "Submit your complete answer to the task. It replaces your previous answer and "
            "every agent re-evaluates. Write the full answer, not a diff or a comment on others."
        )

    def tool_parameters(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "Your complete answer."}
            },
            "required": ["content"],
        }

    def parse(self, arguments: dict[str, Any]) -> ParsedAnswer:
        content = arguments.get("content")
        if content is None:
            # Small models rename the field ("answer", "text"); one string field is the answer.
            strings = [v for k, v in arguments.items() if isinstance(v, str) and v.strip()
                       and k in _ANSWER_KEYS]
            content = strings[0] if len(strings) == 1 else None
        if not isinstance(content, str) or not content.strip():
            raise AnswerRejected(["'content' must be a non-empty string holding your answer"])
        return ParsedAnswer(content.strip())

    def render(self, answer: ParsedAnswer) -> str:
        return answer.text

    def instructions(self) -> str:
        return ""
