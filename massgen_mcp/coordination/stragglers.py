"""No stragglers: a member still working after its peers are done gets a bounded grace.

A member is *straggling* when it is in a turn and every other live member is done with
the phase it is in: all have answered (while it works on its first answer), or all have
voted (while it works on a later turn). From the moment that is true it has

    max(straggler_grace_seconds, straggler_grace_factor x its peers' longest turn)

to finish; then it is cut off (its call cancelled, the agent dropped with a reason) and
the run goes on without it, ending `degraded`. The grace is relative to how long the
peers' turns took, so a team of slow models is not cut short, while one model that does
not stop is never allowed to hold the team to the whole run's limit.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from massgen_mcp.config.orchestration import OrchestratorConfig
from massgen_mcp.coordination.agent import AgentState

CutOff = Callable[[AgentState, str], None]


class Stragglers:
    def __init__(self, cfg: OrchestratorConfig, agents: list[AgentState], cut_off: CutOff) -> None:
        self.cfg = cfg
        self.agents = agents
        self._cut_off = cut_off
        self._since: dict[str, float] = {}  # agent id -> when it started straggling

    def straggling(self, a: AgentState) -> bool:
        """Is `a` working while every other live member is done with this phase?"""
        if not a.live or a.scope is None:
            return False
        peers = [b for b in self.agents if b is not a and b.live]
        if not peers:
            return False
        if not a.answers:
            return all(b.answers for b in peers)
        return all(b.vote is not None and not b.restart_pending for b in peers)

    def grace(self, a: AgentState) -> float:
        """How long `a` may go on once it is straggling."""
        assert self.cfg.straggler_grace_seconds is not None
        longest = max((b.longest_turn for b in self.agents if b is not a and b.live),
                      default=0.0)
        return max(self.cfg.straggler_grace_seconds, self.cfg.straggler_grace_factor * longest)

    def _deadlines(self, now: float) -> dict[str, tuple[AgentState, float]]:
        out = {}
        for a in self.agents:
            if not self.straggling(a):
                self._since.pop(a.spec.id, None)
                continue
            since = self._since.setdefault(a.spec.id, now)
            out[a.spec.id] = (a, since + self.grace(a))
        return out

    async def watch(self, changed: Callable[[], anyio.Event]) -> None:
        """Run until cancelled: cut off each member whose grace is over. `changed()` is the
        event the run sets on every answer, vote and drop."""
        if self.cfg.straggler_grace_seconds is None:
            return
        while True:
            now = anyio.current_time()
            deadlines = self._deadlines(now)
            for a, until in deadlines.values():
                if until <= now:
                    waited = now - self._since.pop(a.spec.id)
                    what = "first answer" if not a.answers else "turn"
                    peers = "answered" if not a.answers else "voted"
                    self._cut_off(a, f"cut off: still on its {what} {waited:.0f}s after every "
                                     f"other agent had {peers} (straggler grace "
                                     f"{self.grace(a):.0f}s)")
            pending = [until for _, until in deadlines.values() if until > now]
            event = changed()
            with anyio.move_on_after(min(pending) - now if pending else float("inf")):
                await event.wait()
