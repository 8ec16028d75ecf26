"""One agent's state during a run, and the MCP toolbox it may use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from massgen_mcp.backends import Backend
from massgen_mcp.config.prices import Price
from massgen_mcp.config.team import AgentSpec
from massgen_mcp.coordination.answers import ParsedAnswer
from massgen_mcp.coordination.workflow import Decision
from massgen_mcp.messages import ToolCall, ToolSpec, Usage


class Toolbox(Protocol):
    """An agent's MCP tools (see tools/session.py)."""

    tools: list[ToolSpec]
    notes: list[str]

    def owns(self, tool_name: str) -> bool: ...

    async def call(self, call: ToolCall) -> tuple[str, bool]: ...


@dataclass(eq=False)
class AgentState:
    spec: AgentSpec
    anon: str
    backend: Backend
    toolbox: Toolbox | None = None
    price: Price | None = None  # None: this model's cost is unknown
    answers: list[ParsedAnswer] = field(default_factory=list)
    vote: Decision | None = None
    vote_label: str = ""
    restart_pending: bool = False
    error: str | None = None
    failed_turns: int = 0
    usage: Usage = field(default_factory=Usage)
    scope: anyio.CancelScope | None = None
    notes: list[str] = field(default_factory=list)
    # Provider-native tools (web search, code execution): what they cited and cost.
    turn_sources: list[dict[str, str]] = field(default_factory=list)
    answer_sources: list[dict[str, str]] = field(default_factory=list)
    native_calls: dict[str, int] = field(default_factory=dict)
    # When this agent stops waiting for its peers' first answers (see Orchestrator._wait).
    wait_until: float | None = None
    # Turn timing, for the straggler grace (stragglers.py) and the answer order (turns.py).
    turn_started: float | None = None
    longest_turn: float = 0.0
    turns: int = 0
    #: k reviewers (reviewers.py): the anonymous ids whose answers it reads; None: all.
    reads: frozenset[str] | None = None

    @property
    def live(self) -> bool:
        return self.error is None

    @property
    def label(self) -> str | None:
        return f"{self.anon}.{len(self.answers)}" if self.answers else None

    @property
    def cost_usd(self) -> float | None:
        if self.price is None:
            return None
        return self.price.cost(self.usage.input_tokens, self.usage.output_tokens)

    def add_native(self, provider_data: Any) -> None:
        """Sources and billed calls of the provider's own tools (backends/native_tools.py)."""
        native = provider_data.get("native") if isinstance(provider_data, dict) else None
        if not isinstance(native, dict):
            return
        for source in native.get("sources") or []:
            if source not in self.turn_sources:
                self.turn_sources.append(source)
        for tool, n in (native.get("calls") or {}).items():
            self.native_calls[tool] = self.native_calls.get(tool, 0) + int(n)

    def describe(self) -> dict[str, Any]:
        """Who this agent is, for the run_started event."""
        s = self.spec
        return {"agent": s.id, "anonymous_id": self.anon, "model": s.model,
                "provider": s.provider.name, "key": s.key_source, "endpoint": s.endpoint,
                "stance": s.stance}

    def note(self, text: str) -> None:
        """Record a repair or a recovered failure, once per distinct text."""
        if text not in self.notes and len(self.notes) < 50:
            self.notes.append(text)
