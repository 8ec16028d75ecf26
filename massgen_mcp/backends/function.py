"""A backend whose model is a plain Python function of the conversation.

It is the orchestrator's test seam (like pydantic-ai's `FunctionModel`) and a way to put
deterministic or local logic on a team from Python. The function is registered in this
process under a name, and a team names it as its model::

    register_function("echo", lambda call: call.answer("same as before"))
    team = {"agents": [{"id": "a", "backend": {"type": "function", "model": "echo"}}]}

Only code running in this process can register a function, so a team file or a tool
argument can name one but never load code. Async functions may await anything (an event,
another agent's progress): tests use that to order agents by events instead of sleeps.

`call.step` says where in the run the call is (coordinating or presenting, the agent's own
latest answer, what it may vote for), so a function never has to read the prompt's wording::

    def agent(call):
        if call.step.presenting:
            return call.answer("the final answer")
        if not call.step.answered:
            return call.answer("my first answer")
        return call.vote(call.step.vote_targets[0])
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from massgen_mcp.errors import PermanentBackendError
from massgen_mcp.messages import Message, Step, ToolCall, ToolSpec, Turn, Usage, current_step

if TYPE_CHECKING:
    from massgen_mcp.backends import BackendContext
    from massgen_mcp.config.team import AgentSpec


FIRST_TURN = Step("coordinate")  # a call outside a run's turn


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """What the function sees: the agent, the conversation, the tools on offer and the step
    of the run (outside a run, a first coordination turn)."""

    agent_id: str
    messages: list[Message]
    tools: list[ToolSpec]
    step: Step = FIRST_TURN

    @property
    def prompt(self) -> str:
        """The text of the last user message (the current task view)."""
        return next((m.content for m in reversed(self.messages) if m.role == "user"), "")

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]

    def vote_targets(self) -> list[str]:
        """The anonymous agent ids the `vote` tool accepts right now (empty: no vote)."""
        for t in self.tools:
            if t.name == "vote":
                return list(t.parameters["properties"]["agent_id"].get("enum", []))
        return []

    def call(self, name: str, **arguments: Any) -> Turn:
        """A reply that calls one tool."""
        return Turn(tool_calls=(ToolCall(f"call-{name}", name, arguments),),
                    usage=Usage(1, 1))

    def answer(self, content: str) -> Turn:
        return self.call("new_answer", content=content)

    def vote(self, agent_id: str, reason: str = "most complete") -> Turn:
        return self.call("vote", agent_id=agent_id, reason=reason)

    def text(self, content: str) -> Turn:
        """A reply with text and no tool call."""
        return Turn(text=content, usage=Usage(1, 1))


ModelFunction = Callable[[FunctionCall], Turn | Awaitable[Turn]]

_FUNCTIONS: dict[str, ModelFunction] = {}


def register_function(name: str, fn: ModelFunction) -> None:
    """Make `fn` available as `{"type": "function", "model": name}` in this process."""
    _FUNCTIONS[name] = fn


def unregister_function(name: str) -> None:
    _FUNCTIONS.pop(name, None)


class FunctionBackend:
    """Calls the registered function once per turn; its exceptions are the agent's errors."""

    def __init__(self, spec: AgentSpec, context: BackendContext | None = None) -> None:
        self.provider, self.model, self.agent_id = "function", spec.model, spec.id

    async def turn(self, messages: list[Message], tools: list[ToolSpec]) -> Turn:
        fn = _FUNCTIONS.get(self.model)
        if fn is None:
            raise PermanentBackendError(
                f"no function named '{self.model}' is registered in this process "
                "(call massgen_mcp.backends.function.register_function first)",
                provider=self.provider, model=self.model)
        reply = fn(FunctionCall(self.agent_id, list(messages), list(tools),
                                current_step() or FIRST_TURN))
        if inspect.isawaitable(reply):
            reply = await reply
        return reply

    async def aclose(self) -> None:
        return None
