"""How a run's vote ends: decided (every live agent voted, or early stop), the verdict, the
winner's presentation of the final answer, the vote turns cut once it is out, and the best
answer so far when the run stops first.

The orchestrator (orchestrator.py) runs the agents and asks `Ending` at each vote, drop and
cut-off whether the vote is decided; what the end found is read back by its `result()`.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from massgen_mcp.config.team import OrchestratorConfig
from massgen_mcp.coordination.agent import AgentState
from massgen_mcp.coordination.answers import AnswerFormat, ParsedAnswer
from massgen_mcp.coordination.budget import Budget
from massgen_mcp.coordination.early_stop import cut_at_final, settled_vote, verdict
from massgen_mcp.coordination.families import independence_shortfall
from massgen_mcp.coordination.presentation import present
from massgen_mcp.coordination.result import RunStatus

Emit = Callable[..., None]


class Ending:
    def __init__(self, cfg: OrchestratorConfig, agents: list[AgentState], emit: Emit) -> None:
        self.cfg = cfg
        self.agents = agents
        self._emit = emit
        #: The vote is decided: no new turn starts; the winner presents.
        self.decided = False
        #: The final answer is out: a vote arriving now no longer counts.
        self.final_out = False
        #: The run is over (`settle`): its status is no longer `running`.
        self.settled = False
        self.winner: AgentState | None = None
        self.final: ParsedAnswer | None = None
        #: The final answer is the winner's presentation (else its stored answer).
        self.presented = False
        #: Why a decided vote is still no consensus (a split, too few independent votes).
        self.split: str | None = None
        #: Vote turns still running when the final answer was out (cancelled, counted).
        self.cut_turns = 0
        #: Agent id -> why it cast no vote.
        self.why_not_voted: dict[str, str] = {}

    def status(self, stopped: RunStatus | None) -> RunStatus:
        """The run's status: how it was stopped, if it was; else what the vote came to."""
        if stopped is not None:
            return stopped
        if not self.settled:
            return "running"
        if not self.decided:
            return "failed"  # no live agent is left to vote
        if self.split is not None:
            return "no_consensus"
        return "degraded" if any(not a.live for a in self.agents) else "completed"

    def decide(self) -> bool:
        """True once, when the vote becomes decided: every live agent has voted, or the votes
        still out can no longer change the winner (early stop, early_stop.py)."""
        if self.decided:
            return False
        live = [b for b in self.agents if b.live]
        if not (live and all(b.vote is not None and not b.restart_pending for b in live)):
            early = settled_vote(self.cfg, self.agents)
            if early is None:
                return False
            winner, outstanding = early
            self._emit("early_stop", winner=winner, outstanding=len(outstanding),
                       agents=[b.spec.id for b in outstanding],
                       message=f"outcome decided: the final answer starts while "
                               f"{len(outstanding)} vote(s) are still on their way (they "
                               "count if they arrive first)")
        self.decided = True
        return True

    async def present(self, *, task: str, context: str | None, fmt: AnswerFormat,
                      budget: Budget, changed: Callable[[], anyio.Event]) -> None:
        """The verdict, and the winner's presentation of the final answer (unless the vote is
        no consensus, or presentation is off). `changed` is the orchestrator's state-change
        event: the winner presents once its own vote turn is over."""
        v = verdict(self.cfg, self.agents)
        if v.winner is None:
            return
        w = self.winner = v.winner
        self._emit("consensus", winner=w.spec.id, label=w.label, tally=dict(v.tally),
                   message=f"{w.spec.id} wins with {v.tally[w.spec.id]} votes")
        self.final = w.answers[-1]  # stands if the presentation fails or is cut short
        if v.problem:
            self.split = v.problem
            self._emit("no_consensus", leader=w.spec.id, min_agreement=self.cfg.min_agreement,
                       tally=dict(v.tally), message=v.problem)
            return
        short = independence_shortfall(self.cfg.min_independent_share, self.agents, w)
        if short is not None:  # one model family's votes are not independent votes
            self.split = short
            self._emit("no_consensus", leader=w.spec.id, message=short)
            return
        if self.cfg.skip_final_presentation or not w.live:
            return
        while w.scope is not None:  # one agent does one thing at a time: its own vote first
            await changed().wait()
        self._emit("presentation_started", agent=w.spec.id,
                   message=f"{w.spec.id} is presenting the final answer")
        self.final, self.presented = await present(w, self.agents, task=task, context=context,
                                                   fmt=fmt, budget=budget)
        self._emit("presentation_done", agent=w.spec.id, presented=self.presented)

    def cut_at_final(self) -> list[str]:
        """The final answer is out: the agents whose vote turns are still running (to be
        cancelled; each one's `why_not_voted` says so)."""
        self.final_out = True
        running = cut_at_final(self.agents, self.why_not_voted)
        self.cut_turns = len(running)
        return running

    def settle(self) -> None:
        """Mark the run over; after a timeout/budget stop/cancel, pick the best answer so far:
        most votes so far, else the first answer in config order (a deliberate deviation
        from MassGen's "latest answer": it does not depend on which provider was slowest)."""
        self.settled = True
        if self.final is not None:
            return
        self.winner = verdict(self.cfg, self.agents).winner
        if self.winner is not None:
            self.final = self.winner.answers[-1]
