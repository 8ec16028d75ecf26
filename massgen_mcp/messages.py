"""Provider-neutral conversation types.

Backends translate these to and from their wire formats; nothing else in the package
knows what an OpenAI, Anthropic or Gemini request looks like.

A conversation is a list of `Message`:

- ``system`` / ``user``: plain text.
- ``assistant``: the model's text plus the tool calls it made (``tool_calls``).
- ``tool``: the result of one tool call, linked by ``tool_call_id`` and ``name``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]

#: The workflow tools every coordination turn ends with (coordination/workflow.py defines
#: them; a coding-agent CLI reaches them through its MCP server).
NEW_ANSWER = "new_answer"
VOTE = "vote"
WORKFLOW_TOOLS = frozenset({NEW_ANSWER, VOTE})


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool offered to the model: a name, what it does, and a JSON schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model made.

    ``arguments`` is the parsed JSON object. When the model sent arguments that are not a
    JSON object, ``arguments`` is empty and ``arguments_error`` says what was wrong, so the
    caller can answer with a tool error instead of crashing. ``repaired`` names what had to be
    fixed to read sloppy JSON (a code fence, single quotes, ...), for the run record.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    arguments_error: str | None = None
    repaired: str | None = None


def new_call_id() -> str:
    """A tool call id for providers (and repairs) that do not give one."""
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None  # tool name, for role="tool"
    is_error: bool = False  # for role="tool": the call failed
    # Opaque provider data that must be echoed back verbatim (e.g. Gemini thought
    # signatures, Anthropic thinking blocks). Only the backend that produced it reads it.
    provider_data: Any = None


@dataclass(slots=True)
class Usage:
    """Tokens and provider calls. A cancelled call is still a call (the provider computed and
    billed it); when the provider reported nothing, its prompt tokens are estimated and the
    estimate is also counted in `estimated_input_tokens`."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cancelled_calls: int = 0
    estimated_input_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.calls += other.calls
        self.cancelled_calls += other.cancelled_calls
        self.estimated_input_tokens += other.estimated_input_tokens


@dataclass(frozen=True, slots=True)
class Turn:
    """One model reply: its text, its tool calls, and what it cost."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    provider_data: Any = None

    def as_message(self) -> Message:
        """The assistant message to append to the conversation before answering tool calls."""
        return Message(
            role="assistant",
            content=self.text,
            tool_calls=self.tool_calls,
            provider_data=self.provider_data,
        )


def system(text: str) -> Message:
    return Message(role="system", content=text)


def user(text: str) -> Message:
    return Message(role="user", content=text)


def tool_result(call: ToolCall, content: str, *, is_error: bool = False) -> Message:
    return Message(
        role="tool", content=content, tool_call_id=call.id, name=call.name, is_error=is_error
    )
