"""The consensus loop: agents answer in parallel, see each other's answers, vote.

One task per agent. Rules (see shared/reference/consensus-semantics.md):

- every turn ends in exactly one `new_answer` or `vote`;
- a new answer clears every vote and restarts every other agent (its in-flight provider
  call is cancelled), except an agent still working on its first answer;
- an agent that has answered does not start its next turn while a live peer is still on its
  first answer (up to `first_answer_wait_seconds`): that turn would be cancelled by the
  peer's answer, so waiting costs no time and saves a call per agent;
- a vote from an agent whose restart is pending is ignored;
- the run ends when every live agent has voted, or sooner when the outstanding votes can no
  longer change the winner (early stop, agreement.py; their turns are cancelled and
  counted); most votes wins, ties go to config order;
- a winner below `min_agreement` of the votes is no winner: the run ends `no_consensus`;
- the winner presents the final answer (unless `skip_final_presentation`), checked against
  its stored answer (presentation.py);
- a member still working once its peers are done is cut off after a grace (stragglers.py);
- answers are shown in a seeded order per voter and round (turns.py).

Bounds: `orchestrator_timeout_seconds`, `max_total_tokens`, `max_cost_usd` and the per-run
provider-call cap stop the run with the best answer so far; `max_new_answers_per_agent`
(3 by default) makes an agent vote-only; an answer that repeats the agent's previous one is
never new. A failed turn (a transient provider error, or no valid call within the attempts)
is retried once; a second failed turn, or a permanent error (auth, unknown model), drops the
agent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import anyio

from massgen_mcp.backends import Backend
from massgen_mcp.config.prices import agent_price
from massgen_mcp.config.team import Team
from massgen_mcp.coordination.agent import AgentState, Toolbox
from massgen_mcp.coordination.agreement import agreement_of
from massgen_mcp.coordination.answers import AnswerFormat, ParsedAnswer, TextAnswer
from massgen_mcp.coordination.budget import Budget
from massgen_mcp.coordination.early_stop import settled_vote
from massgen_mcp.coordination.presentation import present
from massgen_mcp.coordination.result import (
    RunResult,
    RunStatus,
    build_result,
    candidates,
    current_votes,
    pick_winner,
    status_error,
)
from massgen_mcp.coordination.stragglers import Stragglers
from massgen_mcp.coordination.turns import (
    coordination_turn,
    shuffle_seed,
    wait_for_first_answers,
)
from massgen_mcp.coordination.workflow import Decision
from massgen_mcp.errors import BackendError, TransientBackendError

log = logging.getLogger(__name__)

EventSink = Callable[[str, dict[str, Any]], None]
#: Failed turns an agent may have; the next one drops it.
MAX_FAILED_TURNS = 1

__all__ = ["Orchestrator", "Toolbox"]


class Orchestrator:
    def __init__(
        self,
        team: Team,
        backends: dict[str, Backend],
        task: str,
        *,
        run_id: str = "",
        log_dir: str = "",
        context: str | None = None,
        answer_format: AnswerFormat | None = None,
        toolboxes: dict[str, Toolbox] | None = None,
        emit: EventSink | None = None,
    ) -> None:
        self.team = team
        self.cfg = team.orchestrator
        self.task = task
        self.context = context
        self.fmt = answer_format or TextAnswer()
        self.run_id = run_id
        self.log_dir = log_dir
        self._emit_sink = emit
        anon = {aid: f"agent{i}" for i, aid in enumerate(sorted(s.id for s in team.agents), 1)}
        toolboxes = toolboxes or {}
        # Config order matters for ties; anonymous ids come from the sorted real ids.
        self.agents = [
            AgentState(spec, anon[spec.id], backends[spec.id], toolboxes.get(spec.id),
                       agent_price(spec))
            for spec in team.agents
        ]
        self._by_anon = {a.anon: a for a in self.agents}
        self.budget = Budget(self.cfg, self.agents, with_tools=len(toolboxes),
                             stop=lambda detail: self.cancel("budget_exceeded", detail),
                             emit=self._emit)
        self.stragglers = Stragglers(self.cfg, self.agents, self._cut_off)
        self.seed = shuffle_seed(self.cfg, task, [a.spec.id for a in self.agents])
        self._changed: anyio.Event | None = None
        self._presented = False
        self._no_consensus = False
        self._early_stopped = 0
        self._stop_reason: RunStatus | None = None
        self._stop_detail: str | None = None
        self._consensus = False
        self._finished = False
        self._restarts = 0
        self._final: ParsedAnswer | None = None
        self._winner: AgentState | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._outer: anyio.CancelScope | None = None
        self._t0 = 0.0
        self.started_at = ""

    # ------------------------------------------------------------------ public

    async def run(self) -> RunResult:
        """Run to consensus (or timeout/budget/cancel) and return the result."""
        self._t0 = time.monotonic()
        self._changed = anyio.Event()
        self.started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self._emit("run_started", max_provider_calls=self.budget.call_cap,
                   call_timeout_seconds=self.budget.call_timeout_seconds,
                   shuffle_seed=self.seed, agents=[
            {"agent": a.spec.id, "anonymous_id": a.anon, "model": a.spec.model,
             "provider": a.spec.provider.name, "key": a.spec.key_source,
             "endpoint": a.spec.endpoint, "stance": a.spec.stance} for a in self.agents])
        if self.cfg.max_cost_usd is not None:
            for a in self.agents:
                if a.price is None:
                    a.note(f"no price is known for {a.spec.provider.name}/{a.spec.model}: "
                           "max_cost_usd cannot count this agent's calls")
        with anyio.CancelScope(deadline=anyio.current_time()
                               + self.cfg.orchestrator_timeout_seconds) as outer:
            self._outer = outer
            if self._stop_reason is not None:  # cancelled before it started
                outer.cancel()
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self.stragglers.watch, self._changed_event)
                async with anyio.create_task_group() as loops:
                    for agent in self.agents:
                        loops.start_soon(self._agent_loop, agent)
                tg.cancel_scope.cancel()  # every agent is done: stop the straggler watch
            if self._consensus:
                await self._finish_with_winner()
        if outer.cancelled_caught and self._stop_reason is None:
            self._stop_reason = "timeout"
            self._emit("timeout", seconds=self.cfg.orchestrator_timeout_seconds)
        self.settle()
        result = self.result()
        self._emit("run_finished", status=result.status,
                   winner=result.winner.agent_id if result.winner else None,
                   elapsed=round(result.elapsed_seconds, 3))
        return result

    def cancel(self, reason: RunStatus = "cancelled", detail: str | None = None) -> None:
        """Stop the run now; `run()` returns with this status and the best answer so far."""
        if self._stop_reason is None:
            self._stop_reason = reason
            self._stop_detail = detail
        if self._outer is not None:
            self._outer.cancel()

    def result(self) -> RunResult:
        """The current state as a RunResult (status `running` while the run is live)."""
        status: RunStatus
        if self._stop_reason is not None:
            status = self._stop_reason
        elif not self._finished:
            status = "running"
        elif self._no_consensus:
            status = "no_consensus"
        elif self._consensus:
            status = "degraded" if any(not a.live for a in self.agents) else "completed"
        else:
            status = "failed"
        return build_result(
            self.agents, run_id=self.run_id, status=status, task=self.task,
            final=self._final, winner=self._winner, restarts=self._restarts,
            error=status_error(status, self.agents, self.cfg.orchestrator_timeout_seconds,
                               has_answer=self._final is not None, detail=self._stop_detail),
            elapsed=round(time.monotonic() - self._t0, 3) if self._t0 else 0.0,
            started_at=self.started_at, team=self.team.name, log_dir=self.log_dir,
            presented=self._presented, shuffle_seed=self.seed,
            early_stop_cancelled_turns=self._early_stopped)

    # ------------------------------------------------------------------ the loop

    async def _agent_loop(self, a: AgentState) -> None:
        while a.live:
            if a.vote is not None and not a.restart_pending:
                assert self._changed is not None
                await self._changed.wait()
                continue
            if await wait_for_first_answers(a, self.agents, self.cfg, self._changed_event):
                continue
            a.restart_pending = False
            a.turn_sources = []
            with anyio.CancelScope() as scope:
                a.scope = scope
                a.turn_started = anyio.current_time()
                self._signal_change()  # the straggler watch looks at who is working
                try:
                    outcome: Decision | str = await coordination_turn(
                        a, self.agents, cfg=self.cfg, fmt=self.fmt, task=self.task,
                        context=self.context, hooks=self.budget, seed=self.seed,
                        emit=self._emit)
                    permanent = False
                except BackendError as e:
                    outcome, permanent = str(e), not isinstance(e, TransientBackendError)
                except Exception as e:  # a backend bug must cost this agent a turn, not the run
                    log.exception("agent %s: unexpected error", a.spec.id)
                    outcome, permanent = f"unexpected error: {type(e).__name__}: {e}", False
                finally:
                    a.scope = None
            if scope.cancelled_caught:
                continue  # a newer answer arrived (or it was cut off): look again
            if self._consensus:
                return  # the vote ended (early stop) while this reply was on its way
            a.longest_turn = max(a.longest_turn, anyio.current_time() - (a.turn_started or 0))
            if isinstance(outcome, str):
                if permanent or a.failed_turns >= MAX_FAILED_TURNS:
                    self._fail(a, outcome)
                    return
                a.failed_turns += 1
                a.note(f"a turn failed and was retried: {outcome}")
                self._emit("turn_failed", agent=a.spec.id, error=outcome,
                           message=f"{a.spec.id}: turn failed, retrying ({outcome[:160]})")
                continue
            if outcome.kind == "answer":
                assert outcome.answer is not None
                self._on_answer(a, outcome.answer)
            elif a.restart_pending:
                self._emit("vote_ignored", agent=a.spec.id,
                           reason="a newer answer arrived while this agent was voting")
            else:
                self._on_vote(a, outcome)

    def _on_answer(self, a: AgentState, answer: ParsedAnswer) -> None:
        a.answers.append(answer)
        a.answer_sources, a.turn_sources = a.turn_sources, []
        a.restart_pending = False
        restarted = []  # agents whose vote or in-flight turn this answer makes stale
        for b in self.agents:
            voted, b.vote = b.vote is not None, None
            if b is a or not b.live:
                continue
            b.restart_pending = True
            # first-answer protection: never interrupt an agent's first answer
            if b.answers and (voted or b.scope is not None):
                restarted.append(b.spec.id)
                if b.scope is not None:
                    b.scope.cancel()
        live = [b for b in self.agents if b.live]
        answered = sum(1 for b in live if b.answers)
        self._emit("answer", agent=a.spec.id, label=a.label, agents_with_answers=answered,
                   live_agents=len(live),
                   message=f"{a.spec.id} answered ({answered} of {len(live)} agents have "
                           f"answered)")
        if restarted:
            self._restarts += len(restarted)
            self._emit("restart", agents=restarted, cause=a.spec.id)
        self._signal_change()

    def _on_vote(self, a: AgentState, d: Decision) -> None:
        assert d.voted_for is not None
        a.vote = d
        target = self._by_anon[d.voted_for]
        a.vote_label = target.label or d.voted_for
        live = [b for b in self.agents if b.live]
        voted = sum(1 for b in live if b.vote is not None)
        self._emit("vote", agent=a.spec.id, voted_for=target.spec.id, label=a.vote_label,
                   reason=d.reason, votes=voted, live_agents=len(live),
                   message=f"{a.spec.id} voted for {target.spec.id} ({voted} of {len(live)} "
                           f"votes cast): {' '.join((d.reason or '-').split())[:160]}")
        self._check_consensus()
        self._signal_change()

    def _fail(self, a: AgentState, error: str) -> None:
        a.error = error
        a.vote = None
        self._emit("agent_failed", agent=a.spec.id, error=error,
                   message=f"{a.spec.id} dropped: {error}")
        self._check_consensus()
        self._signal_change()  # peers waiting for its first answer stop waiting

    def _cut_off(self, a: AgentState, why: str) -> None:
        """Drop a straggler (stragglers.py): its in-flight call is cancelled and counted."""
        if not a.live:
            return
        a.error = why
        a.vote = None
        if a.scope is not None:
            a.scope.cancel()
        self._emit("agent_cut_off", agent=a.spec.id, error=why, message=f"{a.spec.id} {why}")
        self._check_consensus()
        self._signal_change()

    def _check_consensus(self) -> None:
        if self._consensus:
            return
        live = [b for b in self.agents if b.live]
        if live and all(b.vote is not None and not b.restart_pending for b in live):
            self._end_voting()
            return
        early = settled_vote(self.cfg, self.agents)
        if early is None:
            return
        winner, outstanding = early
        self._early_stopped = len(outstanding)
        for b in outstanding:
            b.note("its vote turn was cancelled: the outcome was already decided (early stop)")
        self._emit("early_stop", winner=winner, cancelled_turns=len(outstanding),
                   agents=[b.spec.id for b in outstanding],
                   message=f"outcome decided: {len(outstanding)} outstanding vote turn(s) "
                           "cancelled")
        self._end_voting()

    def _end_voting(self) -> None:
        self._consensus = True
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    def _changed_event(self) -> anyio.Event:
        assert self._changed is not None
        return self._changed

    def _signal_change(self) -> None:
        assert self._changed is not None
        self._changed.set()
        self._changed = anyio.Event()

    # ------------------------------------------------------------------ the end

    async def _finish_with_winner(self) -> None:
        winner_id, tally = pick_winner(current_votes(self.agents), candidates(self.agents))
        if winner_id is None:
            return
        w = next(a for a in self.agents if a.spec.id == winner_id)
        self._winner = w
        self._emit("consensus", winner=w.spec.id, label=w.label, tally=dict(tally),
                   message=f"{w.spec.id} wins with {tally[w.spec.id]} votes")
        self._final = w.answers[-1]  # stands if the presentation fails or is cut short
        share = agreement_of(w.spec.id, tally, uncast=self._early_stopped).share
        need = self.cfg.min_agreement
        if need is not None and share < need:
            self._no_consensus = True
            self._stop_detail = (
                f"no consensus: the leading answer ({w.spec.id}) has {tally[w.spec.id]} of "
                f"{sum(tally.values())} votes ({share:.0%}), below min_agreement {need:g}")
            self._emit("no_consensus", leader=w.spec.id, share=round(share, 4),
                       min_agreement=need, tally=dict(tally), message=self._stop_detail)
            return
        if self.cfg.skip_final_presentation or not w.live:
            return
        self._emit("presentation_started", agent=w.spec.id,
                   message=f"{w.spec.id} is presenting the final answer")
        self._final, self._presented = await present(w, self.agents, task=self.task,
                                                     context=self.context, fmt=self.fmt,
                                                     hooks=self.budget)
        self._emit("presentation_done", agent=w.spec.id, presented=self._presented)

    def settle(self) -> None:
        """Mark the run over; after a timeout/budget stop/cancel, pick the best answer so far:
        most votes so far, else the first answer in config order (a deliberate deviation
        from MassGen's "latest answer": it does not depend on which provider was slowest)."""
        self._finished = True
        if self._final is not None:
            return
        winner_id, _ = pick_winner(current_votes(self.agents), candidates(self.agents))
        if winner_id is not None:
            self._winner = next(a for a in self.agents if a.spec.id == winner_id)
            self._final = self._winner.answers[-1]

    # ------------------------------------------------------------------ helpers

    def _emit(self, kind: str, **data: Any) -> None:
        if self._emit_sink is None:
            return
        data["t"] = round(time.monotonic() - self._t0, 4)
        try:
            self._emit_sink(kind, data)
        except Exception:  # a broken sink must not break the run
            log.exception("event sink failed for %s", kind)

