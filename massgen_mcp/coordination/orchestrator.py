"""The consensus loop: agents answer in parallel, see each other's answers, vote.

One task per agent. Rules (see shared/reference/consensus-semantics.md):

- every turn ends in exactly one `new_answer` or `vote`;
- a new answer clears every vote and restarts every other agent (its in-flight provider
  call is cancelled), except an agent still working on its first answer;
- an agent that has answered does not start its next turn while a live peer is still on its
  first answer (up to `first_answer_wait_seconds`): that turn would be cancelled by the
  peer's answer, so waiting costs no time and saves a call per agent;
- a vote from an agent whose restart is pending is ignored;
- the run ends when every live agent has voted; most votes wins, ties go to config order;
- the winner presents the final answer (unless `skip_final_presentation`), checked against
  its stored answer (presentation.py).

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
from massgen_mcp.config.prices import price_for
from massgen_mcp.config.team import Team
from massgen_mcp.coordination import prompts
from massgen_mcp.coordination.agent import AgentState, Toolbox
from massgen_mcp.coordination.answers import AnswerFormat, ParsedAnswer, TextAnswer
from massgen_mcp.coordination.budget import Budget
from massgen_mcp.coordination.converse import converse
from massgen_mcp.coordination.presentation import present
from massgen_mcp.coordination.result import (
    RunResult,
    RunStatus,
    build_result,
    candidates,
    current_votes,
    pick_winner,
)
from massgen_mcp.coordination.workflow import (
    REPEATED,
    Decision,
    decide,
    new_answer_tool,
    vote_tool,
)
from massgen_mcp.errors import BackendError, TransientBackendError
from massgen_mcp.messages import Step, ToolCall
from massgen_mcp.urls import is_loopback_url

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
                       price_for(spec.provider.name, spec.model, local=spec.provider.local or (
                           spec.provider.name == "chatcompletion"
                           and is_loopback_url(spec.base_url or ""))))
            for spec in team.agents
        ]
        self._by_anon = {a.anon: a for a in self.agents}
        self.budget = Budget(self.cfg, self.agents, with_tools=len(toolboxes),
                             stop=lambda detail: self.cancel("budget_exceeded", detail),
                             emit=self._emit)
        self._changed: anyio.Event | None = None
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
        self._emit("run_started", max_provider_calls=self.budget.call_cap, agents=[
            {"agent": a.spec.id, "anonymous_id": a.anon, "model": a.spec.model,
             "provider": a.spec.provider.name} for a in self.agents])
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
                for agent in self.agents:
                    tg.start_soon(self._agent_loop, agent)
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
        elif self._consensus:
            status = "degraded" if any(not a.live for a in self.agents) else "completed"
        else:
            status = "failed"
        return build_result(
            self.agents, run_id=self.run_id, status=status, task=self.task,
            final=self._final, winner=self._winner, restarts=self._restarts,
            error=self._error_text(status),
            elapsed=round(time.monotonic() - self._t0, 3) if self._t0 else 0.0,
            started_at=self.started_at, team=self.team.name, log_dir=self.log_dir)

    def _error_text(self, status: RunStatus) -> str | None:
        dropped = "; ".join(f"{a.spec.id}: {a.error}" for a in self.agents if not a.live)
        if status == "failed":
            best = " (the best answer so far is returned)" if self._final else ""
            return f"every agent failed{best}: {dropped}"
        if status == "degraded":
            return f"the live agents agreed, but some agents were dropped: {dropped}"
        if status == "timeout":
            return (f"the run hit its {self.cfg.orchestrator_timeout_seconds:g}s time limit; "
                    "this is the best answer so far")
        if status == "budget_exceeded":
            return (f"{self._stop_detail or 'the run used up its budget'}; "
                    "this is the best answer so far")
        return None

    # ------------------------------------------------------------------ the loop

    async def _agent_loop(self, a: AgentState) -> None:
        while a.live:
            if a.vote is not None and not a.restart_pending:
                assert self._changed is not None
                await self._changed.wait()
                continue
            if await self._wait_for_first_answers(a):
                continue
            a.restart_pending = False
            a.turn_sources = []
            with anyio.CancelScope() as scope:
                a.scope = scope
                try:
                    outcome: Decision | str = await self._coordination_turn(a)
                    permanent = False
                except BackendError as e:
                    outcome, permanent = str(e), not isinstance(e, TransientBackendError)
                except Exception as e:  # a backend bug must cost this agent a turn, not the run
                    log.exception("agent %s: unexpected error", a.spec.id)
                    outcome, permanent = f"unexpected error: {type(e).__name__}: {e}", False
                finally:
                    a.scope = None
            if scope.cancelled_caught:
                continue  # a newer answer arrived: look again
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

    async def _wait_for_first_answers(self, a: AgentState) -> bool:
        """Hold an agent that has answered while a live peer is on its first answer (see the
        module docstring). True when it waited (the caller looks at the state again)."""
        wait = self.cfg.first_answer_wait_seconds
        if not wait or not a.answers or not any(
                b.live and not b.answers for b in self.agents if b is not a):
            return False
        now = anyio.current_time()
        if a.wait_until is None:
            a.wait_until = now + wait
        if now >= a.wait_until:
            return False
        assert self._changed is not None
        with anyio.move_on_after(a.wait_until - now):
            await self._changed.wait()
        return True

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
                   message=f"{a.spec.id} voted for {target.spec.id} (votes {voted}/{len(live)})")
        self._check_consensus()

    def _fail(self, a: AgentState, error: str) -> None:
        a.error = error
        a.vote = None
        self._emit("agent_failed", agent=a.spec.id, error=error,
                   message=f"{a.spec.id} dropped: {error}")
        self._check_consensus()
        self._signal_change()  # peers waiting for its first answer stop waiting

    def _check_consensus(self) -> None:
        live = [b for b in self.agents if b.live]
        if live and all(b.vote is not None and not b.restart_pending for b in live):
            self._consensus = True
            if self._tg is not None:
                self._tg.cancel_scope.cancel()

    def _signal_change(self) -> None:
        assert self._changed is not None
        self._changed.set()
        self._changed = anyio.Event()

    # ------------------------------------------------------------------ one turn

    def _may_answer(self, a: AgentState) -> bool:
        limit = self.cfg.max_new_answers_per_agent
        if limit is not None and len(a.answers) >= limit:
            return False
        cap = self.cfg.fairness_lead_cap
        peers = [len(b.answers) for b in self.agents if b is not a and b.live]
        return not (cap is not None and peers and len(a.answers) - min(peers) >= cap)

    async def _coordination_turn(self, a: AgentState) -> Decision | str:
        shown = [prompts.ShownAnswer(b.label or "", self.fmt.render(b.answers[-1]))
                 for b in sorted(self.agents, key=lambda b: (b is a, b.anon)) if b.answers]
        targets = sorted(b.anon for b in self.agents if b.answers)
        may_answer = self._may_answer(a) or not targets
        tools = ([new_answer_tool(self.fmt)] if may_answer else []) + (
            [vote_tool(targets)] if targets else [])
        messages = prompts.turn_messages(
            own_system=a.spec.system_message, task=self.task, context=self.context,
            instructions=self.fmt.instructions(), shown=shown, own_label=a.label,
            noun=self.fmt.noun, sensitivity=self.cfg.voting_sensitivity,
            vote_only=not may_answer)
        self._emit("turn_started", agent=a.spec.id, sees=[s.label for s in shown])
        previous = a.answers[-1].text if a.answers else None
        told_to_vote = False

        def check(calls: list[ToolCall]) -> Decision | list[str]:
            nonlocal told_to_vote
            outcome = decide(calls, fmt=self.fmt, may_answer=may_answer,
                             may_vote=bool(targets), vote_targets=targets,
                             previous_answer=previous,
                             novelty=self.cfg.answer_novelty_requirement)
            if isinstance(outcome, list) and outcome[0].startswith(REPEATED):
                if told_to_vote:  # it stands by its answer: that is a vote for it
                    return Decision("vote", voted_for=a.anon,
                                    reason="re-submitted its answer unchanged",
                                    note="re-submitted its answer unchanged after being told "
                                         "to vote; counted as a vote for its own answer")
                told_to_vote = True
            return outcome

        step = Step("coordinate", self.fmt.noun, a.label, tuple(targets), may_answer)
        return await converse(a, messages, tools, check, self.budget, step)

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
        if self.cfg.skip_final_presentation or not w.live:
            return
        self._emit("presentation_started", agent=w.spec.id,
                   message=f"{w.spec.id} is presenting the final answer")
        self._final, presented = await present(w, self.agents, task=self.task,
                                               context=self.context, fmt=self.fmt,
                                               hooks=self.budget)
        self._emit("presentation_done", agent=w.spec.id, presented=presented)

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
