"""A test agent that needs no script: it makes valid calls of whatever workflow tools it is
offered, built from their JSON schemas (like pydantic-ai's `TestModel`).

In a run it answers first, then votes for the first answer it may vote for, and presents
when it won; its answers are generated from the `new_answer` schema of the run's mode (free
text, a plan, a checkpoint plan). A team names it like any backend::

    agents:
      - {id: a, backend: {type: test}}
      - {id: b, backend: {type: test, model: terse}}   # the model name is in its answers

It reads the run's step (`messages.current_step()`), never the prompt, and calls no
provider: a team of test agents runs the real orchestrator, engine and modes in
milliseconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from massgen_mcp.messages import (
    NEW_ANSWER,
    VOTE,
    Message,
    Step,
    ToolCall,
    ToolSpec,
    Turn,
    Usage,
    current_step,
)

if TYPE_CHECKING:
    from massgen_mcp.backends import BackendContext
    from massgen_mcp.config.team import AgentSpec

_MAX_DEPTH = 12


class SchemaAgentBackend:
    """Answers, votes and presents with arguments generated from the offered tools. The demo
    agent is this agent with scripted texts and votes: it overrides `_vote` and `_answer`."""

    #: The provider it reports, also the prefix of its call ids.
    name = "test"

    def __init__(self, spec: AgentSpec, context: BackendContext | None = None) -> None:
        self.provider, self.model, self.agent_id = self.name, spec.model, spec.id
        self.calls = 0

    async def turn(self, messages: list[Message], tools: list[ToolSpec]) -> Turn:
        self.calls += 1
        step = current_step() or Step("coordinate")
        offered = {t.name: t for t in tools}
        answer, vote = offered.get(NEW_ANSWER), offered.get(VOTE)
        targets = list(step.vote_targets) or _enum(vote)
        prompt = next((m.content for m in reversed(messages) if m.role == "user"), "")
        if vote is not None and targets and not step.presenting and (
                step.answered or answer is None):
            call = ToolCall(f"{self.name}-{self.calls}", VOTE, self._vote(step, targets, prompt))
        elif answer is not None:
            call = ToolCall(f"{self.name}-{self.calls}", NEW_ANSWER,
                            self._answer(answer, step, prompt))
        else:
            return Turn(text=self._no_tool_text(), usage=Usage(1, 1))
        return Turn(tool_calls=(call,), usage=Usage(1, 1))

    def _no_tool_text(self) -> str:
        return f"{self.agent_id}: no workflow tool offered"

    def _vote(self, step: Step, targets: list[str], prompt: str) -> dict[str, Any]:
        return {"agent_id": targets[0], "reason": f"{self.agent_id} finds it complete"}

    def _answer(self, tool: ToolSpec, step: Step, prompt: str) -> dict[str, Any]:
        what = "final" if step.presenting else "answer"
        return dict(example(tool.parameters, f"{self.agent_id} {self.model} {what}"))

    async def aclose(self) -> None:
        return None


def _enum(tool: ToolSpec | None) -> list[str]:
    if tool is None:
        return []
    prop = tool.parameters.get("properties", {}).get("agent_id", {})
    return [str(v) for v in prop.get("enum", [])]


def example(schema: dict[str, Any], text: str) -> Any:
    """A value valid for `schema` (the JSON Schema subset tool parameters use): the schema's
    own `examples` where it has them, else every property filled; an array gets its
    `minItems`, else no strings (an optional list) or three objects (a few, e.g. a plan's
    tasks); strings are made from `text` and the property names, so items stay distinct,
    and ids (`id`, `*_id`) have no spaces."""
    return _example(schema, text, schema.get("$defs", {}), 0)


def _example(schema: dict[str, Any], text: str, defs: dict[str, Any], depth: int,
             name: str = "") -> Any:
    if depth > _MAX_DEPTH:
        return None
    if "$ref" in schema:
        target = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
        return _example(target, text, defs, depth + 1, name)
    for key in ("const", "default"):
        if schema.get(key) is not None:
            return schema[key]
    if schema.get("examples"):
        return schema["examples"][0]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key, []) if o.get("type") != "null"]
        if options:
            return _example(options[0], text, defs, depth + 1, name)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object" or "properties" in schema:
        return {key: _example(sub, f"{text} {key}", defs, depth + 1, key)
                for key, sub in schema.get("properties", {}).items()}
    if kind == "array":
        item = schema.get("items", {})
        count = schema.get("minItems")
        if count is None:
            count = 3 if item.get("type") == "object" or "$ref" in item else 0
        return [_example(item, f"{text} {i + 1}", defs, depth + 1, name)
                for i in range(int(count))]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = low + 1 if "exclusiveMinimum" in schema else low
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    value = text
    if name == "id" or name.endswith("_id"):
        value = "-".join(text.split()[-3:])
    while len(value) < int(schema.get("minLength", 0)):
        value += f" {text}"
    return value[: int(schema.get("maxLength", len(value)))]
