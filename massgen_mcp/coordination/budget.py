"""A run's budgets: provider calls, tokens and money, checked on every provider call.

`Budget` is what a conversation (converse.py) reports each call to, with the per-turn limits,
the call deadline and the redaction every outgoing message goes through. The call cap is checked
before a call starts, so a run never makes more calls than its cap; tokens and cost are
checked when a call ends (a call's cost is only known then). Reaching any of them stops the
run with status `budget_exceeded` and the best answer so far.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from massgen_mcp.config.orchestration import OrchestratorConfig
from massgen_mcp.coordination.agent import AgentState
from massgen_mcp.coordination.limits import call_deadline
from massgen_mcp.coordination.stop import RunStop
from massgen_mcp.messages import Usage

Emit = Callable[..., None]


class Budget:
    """One run's budgets, and what a conversation needs of the run besides (converse.py)."""

    def __init__(self, cfg: OrchestratorConfig, agents: list[AgentState], *, with_tools: int,
                 stop: RunStop, emit: Emit, redact: Callable[[str], str] | None = None
                 ) -> None:
        self.cfg = cfg
        self.agents = agents
        self.max_attempts_per_turn = cfg.max_attempts_per_turn
        self.max_tool_calls_per_turn = cfg.max_tool_calls_per_turn
        self.call_timeout_seconds: float | None = call_deadline(cfg)
        #: The run's redaction (configured keys, the server's token, ...), applied to every
        #: message before it goes to a provider: tool outputs and other agents' answers may
        #: carry a secret that the task and context screening never saw. None: none.
        self.redact = redact
        self.call_cap = cfg.provider_call_cap(len(agents), with_tools)
        self.calls_started = 0
        #: The run's stop state: a run that is stopping (for whatever reason) makes no call.
        self.run_stop = stop
        self._emit = emit

    def starting_call(self, a: AgentState) -> bool:
        """False when the run may make no more provider calls (it is being stopped)."""
        if self.run_stop.requested:
            return False
        if self.calls_started >= self.call_cap:
            self._emit("budget_exceeded", max_provider_calls=self.call_cap)
            self.stop(f"the run reached its cap of {self.call_cap} provider calls "
                      "(max_provider_calls)")
            return False
        self.calls_started += 1
        return True

    def finished_call(self, a: AgentState, usage: Usage) -> None:
        a.usage.add(usage)
        if self.run_stop.requested:
            return
        tokens = self.cfg.max_total_tokens
        if tokens is not None and sum(b.usage.total_tokens for b in self.agents) > tokens:
            self._emit("budget_exceeded", max_total_tokens=tokens)
            self.stop(f"the run used more than max_total_tokens={tokens}")
            return
        limit = self.cfg.max_cost_usd
        if limit is not None:
            cost = sum(b.cost_usd or 0.0 for b in self.agents)
            if cost > limit:
                self._emit("budget_exceeded", max_cost_usd=limit, cost_usd=round(cost, 6))
                self.stop(f"the run cost an estimated ${cost:.4f}, more than "
                          f"max_cost_usd={limit:g}")

    def stop(self, detail: str) -> None:
        self.run_stop.request("budget_exceeded", detail)

    def emit(self, kind: str, **data: Any) -> None:
        self._emit(kind, **data)
