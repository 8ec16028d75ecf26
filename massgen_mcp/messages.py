"""Provider-neutral conversation types.

Backends translate these to and from their wire formats; nothing else in the package
knows what an OpenAI, Anthropic or Gemini request looks like.

A conversation is a list of `Message`:

- ``system`` / ``user``: plain text.
- ``assistant``: the model's text plus the tool calls it made (``tool_calls``).
- ``tool``: the result of one tool call, linked by ``tool_call_id`` and ``name``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
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
    return f"call_{os.urandom(12).hex()}"  # not uuid: this module is imported at start


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


@dataclass(frozen=True, slots=True)
class Step:
    """Which step of a run a model call belongs to, as the orchestrator asks it.

    Wire backends send only the messages; function and test backends read this instead of
    the prompt's wording. `phase` is "coordinate" (answer or vote) or "present" (the winner's
    final answer); `noun` names the mode's answer ("answer", "plan", "checkpoint plan").
    """

    phase: Literal["coordinate", "present"]
    noun: str = "answer"
    #: The agent's latest answer (`agent1.2`); None before its first.
    own_label: str | None = None
    #: The anonymous agents it may vote for now (empty: it may not vote).
    vote_targets: tuple[str, ...] = ()
    #: Whether it may submit a new answer now (False: it must vote).
    may_answer: bool = True

    @property
    def presenting(self) -> bool:
        return self.phase == "present"

    @property
    def answered(self) -> bool:
        """The agent has an answer of its own in this run."""
        return self.own_label is not None


_STEP: ContextVar[Step | None] = ContextVar("massgen_mcp_step", default=None)


def current_step() -> Step | None:
    """The step of the model call in progress in this task (None outside a run's turn)."""
    return _STEP.get()


@contextmanager
def at_step(step: Step | None) -> Iterator[None]:
    """Make `step` the current step while a backend is called (`current_step()`)."""
    token = _STEP.set(step)
    try:
        yield
    finally:
        _STEP.reset(token)
