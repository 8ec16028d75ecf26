"""The consensus loop: agents answer in parallel, see each other's answers, vote.

One task per agent. Rules (see shared/reference/consensus-semantics.md):

- every turn ends in exactly one `new_answer` or `vote`;
- a new answer clears every vote and restarts every other agent (its in-flight provider
  call is cancelled), except an agent still working on its first answer;
- a vote from an agent whose restart is pending is ignored;
- the run ends when every live agent has voted; most votes wins, ties go to config order;
- the winner presents the final answer (unless `skip_final_presentation`).

The whole run is bounded by `orchestrator_timeout_seconds` and `max_total_tokens`; when
either stops it, the best answer so far is returned with the votes so far.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from massgen_mcp.backends import Backend
from massgen_mcp.config.team import AgentSpec, Team
from massgen_mcp.coordination import prompts
from massgen_mcp.coordination.answers import AnswerFormat, AnswerRejected, ParsedAnswer, TextAnswer
from massgen_mcp.coordination.result import (
    AgentInfo,
    AnswerInfo,
    RunResult,
    RunStatus,
    Totals,
    UsageInfo,
    VoteInfo,
    WinnerInfo,
    pick_winner,
)
from massgen_mcp.coordination.workflow import (
    NEW_ANSWER,
    WORKFLOW_TOOLS,
    Decision,
    decide,
    new_answer_tool,
    vote_tool,
)
from massgen_mcp.errors import BackendError
from massgen_mcp.messages import Message, ToolCall, ToolSpec, Usage, tool_result, user

log = logging.getLogger(__name__)

EventSink = Callable[[str, dict[str, Any]], None]


class Toolbox(Protocol):
    """An agent's MCP tools (see agent_tools.py)."""

    tools: list[ToolSpec]
    notes: list[str]

    def owns(self, tool_name: str) -> bool: ...

    async def call(self, call: ToolCall) -> tuple[str, bool]: ...


@dataclass(eq=False)
class _Agent:
    spec: AgentSpec
    anon: str
    backend: Backend
    toolbox: Toolbox | None = None
    answers: list[ParsedAnswer] = field(default_factory=list)
    vote: Decision | None = None
    vote_label: str = ""
    restart_pending: bool = False
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    scope: anyio.CancelScope | None = None
    notes: list[str] = field(default_factory=list)
    # Provider-native tools (web search, code execution): what they cited and cost.
    turn_sources: list[dict[str, str]] = field(default_factory=list)
    answer_sources: list[dict[str, str]] = field(default_factory=list)
    native_calls: dict[str, int] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        return self.error is None

    @property
    def label(self) -> str | None:
        return f"{self.anon}.{len(self.answers)}" if self.answers else None


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
            _Agent(spec, anon[spec.id], backends[spec.id], toolboxes.get(spec.id))
            for spec in team.agents
        ]
        self._by_anon = {a.anon: a for a in self.agents}
        self._changed: anyio.Event | None = None
        self._stop_reason: RunStatus | None = None
        self._consensus = False
        self._finished = False
        self._restarts = 0
        self._final: ParsedAnswer | None = None
        self._winner: _Agent | None = None
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
        self._emit("run_started", agents=[
            {"agent": a.spec.id, "anonymous_id": a.anon, "model": a.spec.model,
             "provider": a.spec.provider.name} for a in self.agents])
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

    def cancel(self, reason: RunStatus = "cancelled") -> None:
        """Stop the run now; `run()` returns with this status and the best answer so far."""
        if self._stop_reason is None:
            self._stop_reason = reason
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
            status = "completed"
        else:
            status = "failed"
        candidates, votes = self._candidates(), self._votes()
        _, tally = pick_winner(votes, candidates)
        winner = None
        if self._winner is not None and self._winner.answers:
            w = self._winner
            winner = WinnerInfo(agent_id=w.spec.id, model=w.backend.model, label=w.label or "",
                                votes=tally[w.spec.id])
        totals = Totals(restarts=self._restarts, votes=len(votes),
                        answers=sum(len(a.answers) for a in self.agents))
        agents = []
        for a in self.agents:
            totals.input_tokens += a.usage.input_tokens
            totals.output_tokens += a.usage.output_tokens
            totals.provider_calls += a.usage.calls
            agents.append(AgentInfo(
                agent_id=a.spec.id, anonymous_id=a.anon, provider=a.spec.provider.name,
                model=a.backend.model, status=self._agent_state(a), answers=len(a.answers),
                usage=_usage_info(a.usage, a.native_calls), error=a.error,
                notes=[*a.notes, *(a.toolbox.notes if a.toolbox else [])]))
        totals.total_tokens = totals.input_tokens + totals.output_tokens
        error = None
        if status == "failed":
            error = "every agent failed: " + "; ".join(
                f"{a.spec.id}: {a.error}" for a in self.agents)
        elif status == "timeout":
            error = (f"the run hit its {self.cfg.orchestrator_timeout_seconds:g}s time limit; "
                     "this is the best answer so far")
        elif status == "budget_exceeded":
            error = (f"the run used more than max_total_tokens={self.cfg.max_total_tokens}; "
                     "this is the best answer so far")
        final = self._final
        return RunResult(
            run_id=self.run_id, status=status, task=self.task[:500],
            final_answer=final.text if final else None,
            final_data=final.data if final else None,
            winner=winner, tally={c: tally[c] for c in candidates},
            votes=self._current_votes(),
            answers=[AnswerInfo(label=a.label or "", agent_id=a.spec.id, model=a.backend.model,
                                text=a.answers[-1].text, data=a.answers[-1].data,
                                sources=a.answer_sources)
                     for a in self.agents if a.answers],
            agents=agents, totals=totals,
            elapsed_seconds=round(time.monotonic() - self._t0, 3) if self._t0 else 0.0,
            started_at=self.started_at, team=self.team.name, error=error, log_dir=self.log_dir,
        )

    # ------------------------------------------------------------------ the loop

    async def _agent_loop(self, a: _Agent) -> None:
        while a.live:
            if a.vote is not None and not a.restart_pending:
                assert self._changed is not None
                await self._changed.wait()
                continue
            a.restart_pending = False
            a.turn_sources = []
            with anyio.CancelScope() as scope:
                a.scope = scope
                try:
                    outcome = await self._coordination_turn(a)
                except BackendError as e:
                    outcome = str(e)
                finally:
                    a.scope = None
            if scope.cancelled_caught:
                continue  # a newer answer arrived: look again
            if isinstance(outcome, str):
                self._fail(a, outcome)
                return
            if outcome.kind == "answer":
                assert outcome.answer is not None
                self._on_answer(a, outcome.answer)
            elif a.restart_pending:
                self._emit("vote_ignored", agent=a.spec.id,
                           reason="a newer answer arrived while this agent was voting")
            else:
                self._on_vote(a, outcome)

    def _on_answer(self, a: _Agent, answer: ParsedAnswer) -> None:
        a.answers.append(answer)
        a.answer_sources, a.turn_sources = a.turn_sources, []
        a.restart_pending = False
        restarted = []
        for b in self.agents:
            b.vote = None
            if b is a or not b.live:
                continue
            b.restart_pending = True
            if b.answers:  # first-answer protection: never interrupt an agent's first answer
                restarted.append(b.spec.id)
                if b.scope is not None:
                    b.scope.cancel()
        with_answers = sum(1 for b in self.agents if b.answers)
        live = sum(1 for b in self.agents if b.live)
        self._emit("answer", agent=a.spec.id, label=a.label, agents_with_answers=with_answers,
                   live_agents=live, message=f"{a.spec.id} answered ({with_answers}/{live})")
        if restarted:
            self._restarts += len(restarted)
            self._emit("restart", agents=restarted, cause=a.spec.id)
        self._signal_change()

    def _on_vote(self, a: _Agent, d: Decision) -> None:
        assert d.voted_for is not None
        a.vote = d
        target = self._by_anon[d.voted_for]
        a.vote_label = target.label or d.voted_for
        voted = sum(1 for b in self.agents if b.live and b.vote is not None)
        live = sum(1 for b in self.agents if b.live)
        self._emit("vote", agent=a.spec.id, voted_for=target.spec.id, label=a.vote_label,
                   reason=d.reason, votes=voted, live_agents=live,
                   message=f"{a.spec.id} voted for {target.spec.id} (votes {voted}/{live})")
        self._check_consensus()

    def _fail(self, a: _Agent, error: str) -> None:
        a.error = error
        a.vote = None
        self._emit("agent_failed", agent=a.spec.id, error=error,
                   message=f"{a.spec.id} dropped: {error}")
        self._check_consensus()

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

    def _may_answer(self, a: _Agent) -> bool:
        limit = self.cfg.max_new_answers_per_agent
        if limit is not None and len(a.answers) >= limit:
            return False
        cap = self.cfg.fairness_lead_cap
        peers = [len(b.answers) for b in self.agents if b is not a and b.live]
        return not (cap is not None and peers and len(a.answers) - min(peers) >= cap)

    async def _coordination_turn(self, a: _Agent) -> Decision | str:
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

        def check(calls: list[ToolCall]) -> Decision | list[str]:
            return decide(calls, fmt=self.fmt, may_answer=may_answer, may_vote=bool(targets),
                          vote_targets=targets, previous_answer=previous,
                          novelty=self.cfg.answer_novelty_requirement)

        return await self._converse(a, messages, tools, check)

    async def _converse(
        self,
        a: _Agent,
        messages: list[Message],
        workflow_tools: list[ToolSpec],
        check: Callable[[list[ToolCall]], Decision | list[str]],
    ) -> Decision | str:
        """Call the model until it makes a valid workflow call; MCP tool calls loop inside.

        Returns the Decision, or an error text when the agent used up its attempts.
        """
        tool_calls_left = self.cfg.max_tool_calls_per_turn
        invalid, reminded = 0, False
        workflow_names = {t.name for t in workflow_tools}
        while True:
            mcp_tools = a.toolbox.tools if a.toolbox and tool_calls_left > 0 else []
            turn = await a.backend.turn(messages, [*workflow_tools, *mcp_tools])
            self._add_usage(a, turn.usage)
            _add_native(a, turn.provider_data)
            calls = list(turn.tool_calls)
            if not calls:
                if reminded:
                    return "did not call new_answer or vote, even after a reminder"
                reminded = True
                self._emit("reminder", agent=a.spec.id)
                messages = [*messages, turn.as_message(), user(prompts.REMINDER)]
                continue
            if any(c.name in WORKFLOW_TOOLS for c in calls):
                outcome = check(calls)
                if isinstance(outcome, Decision):
                    return outcome
                problems = outcome
            else:
                unknown = [c for c in calls if not (a.toolbox and a.toolbox.owns(c.name))]
                # A malformed call (e.g. Gemini's MALFORMED_FUNCTION_CALL) may have lost its
                # name: say what was wrong with it rather than "unknown tool".
                problems = [f"your tool call was malformed: {c.arguments_error}"
                            if c.arguments_error else
                            f"unknown tool {c.name!r}; available: "
                            f"{', '.join(sorted(workflow_names))}" for c in unknown]
                if not problems:
                    results = await self._run_tools(a, calls, tool_calls_left)
                    tool_calls_left -= len(calls)
                    messages = [*messages, turn.as_message(), *results]
                    continue
            invalid += 1
            self._emit("invalid_call", agent=a.spec.id, problems=problems, attempt=invalid)
            if invalid >= self.cfg.max_attempts_per_turn:
                return (f"no valid new_answer/vote after {invalid} attempts; last problem: "
                        f"{problems[0]}")
            error_text = "Not accepted: " + " | ".join(problems)
            skipped = "Not run: fix the problems reported for the other call first."
            messages = [*messages, turn.as_message(), *(
                tool_result(c, skipped if a.toolbox and a.toolbox.owns(c.name) else error_text,
                            is_error=True) for c in calls)]

    async def _run_tools(self, a: _Agent, calls: list[ToolCall], budget: int) -> list[Message]:
        """Run one reply's MCP tool calls concurrently; each becomes a tool result message."""
        assert a.toolbox is not None
        toolbox = a.toolbox
        results: list[Message | None] = [None] * len(calls)

        async def one(i: int, call: ToolCall) -> None:
            if i >= budget:
                results[i] = tool_result(call, "Not run: the tool-call limit for this turn is "
                                         "reached. Call new_answer or vote now.", is_error=True)
                return
            text, is_error = await toolbox.call(call)
            self._emit("tool_call", agent=a.spec.id, tool=call.name, is_error=is_error)
            results[i] = tool_result(call, text, is_error=is_error)

        async with anyio.create_task_group() as tg:
            for i, call in enumerate(calls):
                tg.start_soon(one, i, call)
        return [r for r in results if r is not None]

    def _add_usage(self, a: _Agent, usage: Usage) -> None:
        a.usage.input_tokens += usage.input_tokens
        a.usage.output_tokens += usage.output_tokens
        a.usage.calls += 1
        budget = self.cfg.max_total_tokens
        if budget is not None and sum(b.usage.total_tokens for b in self.agents) > budget:
            self._emit("budget_exceeded", max_total_tokens=budget)
            self.cancel("budget_exceeded")

    # ------------------------------------------------------------------ the end

    async def _finish_with_winner(self) -> None:
        winner_id, tally = pick_winner(self._votes(), self._candidates())
        if winner_id is None:
            return
        w = next(a for a in self.agents if a.spec.id == winner_id)
        self._winner = w
        self._emit("consensus", winner=w.spec.id, label=w.label, tally=dict(tally),
                   message=f"{w.spec.id} wins with {tally[w.spec.id]} votes")
        stored = w.answers[-1]
        if self.cfg.skip_final_presentation or not w.live:
            self._final = stored
            return
        self._emit("presentation_started", agent=w.spec.id,
                   message=f"{w.spec.id} is presenting the final answer")
        self._final = stored  # stands if the presentation fails or is cut short
        messages = prompts.presentation_messages(
            own_system=w.spec.system_message, task=self.task, context=self.context,
            instructions=self.fmt.instructions(),
            all_answers=[(a.spec.id, self.fmt.render(a.answers[-1]))
                         for a in self.agents if a.answers],
            own_id=w.spec.id,
            votes_received=[(a.spec.id, a.vote.reason) for a in self.agents
                            if a.vote and a.vote.voted_for == w.anon],
            noun=self.fmt.noun)

        def check(calls: list[ToolCall]) -> Decision | list[str]:
            mine = [c for c in calls if c.name in WORKFLOW_TOOLS]
            if len(mine) != 1 or mine[0].name != NEW_ANSWER:
                return ["call new_answer exactly once with the complete final answer"]
            try:
                return Decision("answer", answer=self.fmt.parse(mine[0].arguments))
            except AnswerRejected as e:
                return list(e.problems)

        try:
            outcome = await self._converse(w, messages, [new_answer_tool(self.fmt)], check)
        except BackendError as e:
            outcome = str(e)
        changed = isinstance(outcome, Decision) and outcome.answer is not None
        if isinstance(outcome, Decision) and outcome.answer is not None:
            self._final = outcome.answer
        else:
            w.notes.append(f"final presentation failed ({outcome}); the stored answer stands")
        self._emit("presentation_done", agent=w.spec.id, presented=changed)

    def settle(self) -> None:
        """Mark the run over; after a timeout/budget stop/cancel, pick the best answer so far:
        most votes so far, else the first answer in config order (a deliberate deviation
        from MassGen's "latest answer": it does not depend on which provider was slowest)."""
        self._finished = True
        if self._final is not None:
            return
        winner_id, _ = pick_winner(self._votes(), self._candidates())
        if winner_id is not None:
            self._winner = next(a for a in self.agents if a.spec.id == winner_id)
            self._final = self._winner.answers[-1]

    # ------------------------------------------------------------------ helpers

    def _candidates(self) -> list[str]:
        """Agent ids with an answer, in config order (the order ties are broken in)."""
        return [a.spec.id for a in self.agents if a.answers]

    def _votes(self) -> dict[str, str]:
        """Current votes: voter id -> voted-for agent id."""
        return {a.spec.id: self._by_anon[a.vote.voted_for].spec.id
                for a in self.agents if a.vote and a.vote.voted_for}

    def _current_votes(self) -> list[VoteInfo]:
        return [VoteInfo(voter=a.spec.id, voted_for=self._by_anon[a.vote.voted_for].spec.id,
                         voted_for_label=a.vote_label, reason=a.vote.reason)
                for a in self.agents if a.vote and a.vote.voted_for]

    def _agent_state(self, a: _Agent) -> Any:
        if not a.live:
            return "failed"
        if a.vote is not None:
            return "voted"
        if a.scope is not None:
            return "working"
        return "answered" if a.answers else "waiting"

    def _emit(self, kind: str, **data: Any) -> None:
        if self._emit_sink is None:
            return
        data["t"] = round(time.monotonic() - self._t0, 4)
        try:
            self._emit_sink(kind, data)
        except Exception:  # a broken sink must not break the run
            log.exception("event sink failed for %s", kind)


def _usage_info(u: Usage, native_calls: dict[str, int] | None = None) -> UsageInfo:
    return UsageInfo(input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                     total_tokens=u.total_tokens, provider_calls=u.calls,
                     native_tool_calls=dict(native_calls or {}))


def _add_native(a: _Agent, provider_data: Any) -> None:
    """Sources and billed calls of the provider's own tools (backends/native_tools.py)."""
    native = provider_data.get("native") if isinstance(provider_data, dict) else None
    if not isinstance(native, dict):
        return
    for source in native.get("sources") or []:
        if source not in a.turn_sources:
            a.turn_sources.append(source)
    for tool, n in (native.get("calls") or {}).items():
        a.native_calls[tool] = a.native_calls.get(tool, 0) + int(n)
