"""The consensus loop: agents answer in parallel, see each other's answers, vote.

One task per agent. Rules (see shared/reference/consensus-semantics.md):

- every turn ends in exactly one `new_answer` or `vote`;
- a new answer clears every vote and restarts every other agent (its in-flight provider
  call is cancelled), except an agent still working on its first answer;
- an agent that has answered waits (`first_answer_wait_seconds`) while a live peer is on its
  first answer: that turn would be cancelled by the peer's answer (turns.py);
- a vote from an agent whose restart is pending is ignored;
- the vote is decided when every live agent has voted, or sooner when the outstanding votes
  can no longer change the winner (early stop, early_stop.py); most votes wins, ties go to
  config order (tally.py); what follows the decision is ending.py's;
- a winner below `min_agreement` of the votes, or (by default, in a team of three or more)
  with a single vote, is no winner: the run ends `no_consensus` (agreement.split_problem);
- the winner presents the final answer (unless `skip_final_presentation`), checked against
  its stored answer (presentation.py); votes still outstanding keep running beside it and
  count if they arrive before the final answer is out; then their turns are cancelled;
- a member still working once its peers are done is cut off after a grace (stragglers.py);
- answers are shown in a seeded order per voter and round (turns.py).

Bounds (time, tokens, cost, provider calls) stop the run with the best answer so far
(budget.py), as a cancel does: every stop goes through the run's one `RunStop` (stop.py).
`max_new_answers_per_agent` makes an agent vote-only. A failed turn is retried once; a
second failed turn, or a permanent error (auth, unknown model), drops the agent.
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
from massgen_mcp.coordination.answers import AnswerFormat, ParsedAnswer, TextAnswer
from massgen_mcp.coordination.budget import Budget
from massgen_mcp.coordination.early_stop import CUT_AT_FINAL, NO_NEW_TURN, late_reason
from massgen_mcp.coordination.ending import Ending
from massgen_mcp.coordination.result import RunResult
from massgen_mcp.coordination.reviewers import reads, set_up_reviews
from massgen_mcp.coordination.snapshot import build_result, status_error
from massgen_mcp.coordination.stop import RunStop
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
        redact: Callable[[str], str] | None = None,
        stop: RunStop | None = None,
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
        self.reviews = set_up_reviews(self.cfg, task, self.agents)
        #: Why the run stops early, if it does: the run's one stop state (stop.py).
        self.stop = stop or RunStop()
        self.budget = Budget(self.cfg, self.agents, with_tools=len(toolboxes), stop=self.stop,
                             emit=self._emit, redact=redact)
        self.stragglers = Stragglers(self.cfg, self.agents, self._cut_off)
        self.seed = shuffle_seed(self.cfg, task, [a.spec.id for a in self.agents])
        #: How the vote ends: decided, winner, final answer, who cast no vote (ending.py).
        self.ending = Ending(self.cfg, self.agents, self._emit)
        self._changed: anyio.Event | None = None
        self._watch_scope = anyio.CancelScope()
        self._loops: anyio.abc.TaskGroup | None = None
        self._restarts = 0
        self._tg: anyio.abc.TaskGroup | None = None
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
                   shuffle_seed=self.seed, agents=[a.describe() for a in self.agents])
        if self.cfg.max_cost_usd is not None:
            for a in self.agents:
                if a.price is None:
                    a.note(f"no price is known for {a.spec.provider.name}/{a.spec.model}: "
                           "max_cost_usd cannot count this agent's calls")
        with anyio.CancelScope(deadline=anyio.current_time()
                               + self.cfg.orchestrator_timeout_seconds) as outer:
            self.stop.bind(outer)  # a stop asked before the run started stops it now
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self._watch_stragglers)
                async with anyio.create_task_group() as loops:
                    self._loops = loops
                    for agent in self.agents:
                        loops.start_soon(self._agent_loop, agent)
                self._watch_scope.cancel()  # every agent is done: stop the straggler watch
                # leaving `tg` waits for the final presentation (`_finish`), if it started
        if outer.cancelled_caught and not self.stop.requested:
            self.stop.request("timeout")
            self._emit("timeout", seconds=self.cfg.orchestrator_timeout_seconds)
        self.ending.settle()
        result = self.result()
        self._emit("run_finished", status=result.status,
                   winner=result.winner.agent_id if result.winner else None,
                   elapsed=round(result.elapsed_seconds, 3))
        return result

    def result(self) -> RunResult:
        """The current state as a RunResult (status `running` while the run is live)."""
        end = self.ending
        status = end.status(self.stop.status)
        return build_result(
            self.agents, run_id=self.run_id, status=status, task=self.task,
            final=end.final, winner=end.winner, restarts=self._restarts,
            error=status_error(status, self.agents, self.cfg.orchestrator_timeout_seconds,
                               has_answer=end.final is not None,
                               detail=self.stop.detail or end.split),
            elapsed=round(time.monotonic() - self._t0, 3) if self._t0 else 0.0,
            started_at=self.started_at, team=self.team.name, log_dir=self.log_dir,
            presented=end.presented, shuffle_seed=self.seed,
            early_stop_cancelled_turns=end.cut_turns, not_voted=end.why_not_voted,
            reviews=self.reviews)

    # ------------------------------------------------------------------ the loop

    async def _agent_loop(self, a: AgentState) -> None:
        while a.live:
            if self.ending.decided:  # no new turn starts
                if a.vote is None:
                    self.ending.why_not_voted.setdefault(a.spec.id, NO_NEW_TURN)
                return
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
                permanent = False  # a failed turn's error: is it for good (auth, model)?
                try:
                    outcome: Decision | str = await coordination_turn(
                        a, self.agents, cfg=self.cfg, fmt=self.fmt, task=self.task,
                        context=self.context, budget=self.budget, seed=self.seed,
                        emit=self._emit)
                except BackendError as e:
                    outcome, permanent = str(e), not isinstance(e, TransientBackendError)
                except Exception as e:  # a backend bug must cost this agent a turn, not the run
                    log.exception("agent %s: unexpected error", a.spec.id)
                    outcome = f"unexpected error: {type(e).__name__}: {e}"
                finally:
                    a.scope = None
            if scope.cancelled_caught:
                continue  # a newer answer arrived (or it was cut off): look again
            if self.ending.decided:  # the vote was decided while this turn ran
                self._late(a, outcome)
                return
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
            if not reads(b, a):  # k reviewers: its view did not change (reviewers.py)
                continue
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

    def _late(self, a: AgentState, outcome: Decision | str) -> None:
        """A turn that ended after the vote was decided: a vote counts (the final answer is
        not out yet); anything else is recorded as why the agent cast no vote."""
        why = late_reason(outcome, a.restart_pending, self.ending.final_out)
        if why is None and isinstance(outcome, Decision):
            return self._on_vote(a, outcome)
        self.ending.why_not_voted[a.spec.id] = why = why or CUT_AT_FINAL
        a.note(f"cast no vote: {why}")
        self._emit("vote_missing", agent=a.spec.id, reason=why,
                   message=f"{a.spec.id} cast no vote: {why}")
        self._signal_change()  # a presentation waiting for this agent's turn goes on

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
        """When the vote becomes decided, the winner presents now, beside any outstanding
        votes."""
        if not self.ending.decide():
            return
        self._watch_scope.cancel()  # a vote slower than the presentation is no straggler
        if self._tg is not None:
            self._tg.start_soon(self._finish)

    async def _watch_stragglers(self) -> None:
        with self._watch_scope:
            await self.stragglers.watch(self._changed_event)

    async def _finish(self) -> None:
        """Present the final answer; then cancel the vote turns still running (counted)."""
        await self.ending.present(task=self.task, context=self.context, fmt=self.fmt,
                                  budget=self.budget, changed=self._changed_event)
        running = self.ending.cut_at_final()
        if running:
            self._emit("votes_cancelled", agents=running,
                       message=f"{len(running)} vote turn(s) still running when the final "
                               f"answer was out were cancelled: {', '.join(running)}")
        if self._loops is not None:
            self._loops.cancel_scope.cancel()

    def _changed_event(self) -> anyio.Event:
        assert self._changed is not None
        return self._changed

    def _signal_change(self) -> None:
        assert self._changed is not None
        self._changed.set()
        self._changed = anyio.Event()

    def _emit(self, kind: str, **data: Any) -> None:
        if self._emit_sink is None:
            return
        data["t"] = round(time.monotonic() - self._t0, 4)
        try:
            self._emit_sink(kind, data)
        except Exception:  # a broken sink must not break the run
            log.exception("event sink failed for %s", kind)

