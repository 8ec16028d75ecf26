"""One coordination turn: what an agent is shown, which tools it gets, and how its reply reads.

Position bias: models prefer the answer they see first (or last). Unless `shuffle_answers`
is off, each voter sees the current answers in its own seeded random order, new each round
(`answer_order`); the seed is recorded in the run, so any turn's order can be rebuilt.
"""

from __future__ import annotations

import hashlib
import logging
import random
from collections.abc import Callable

import anyio

from massgen_mcp.config.orchestration import OrchestratorConfig
from massgen_mcp.coordination import prompts
from massgen_mcp.coordination.agent import AgentState
from massgen_mcp.coordination.answers import AnswerFormat
from massgen_mcp.coordination.budget import Budget
from massgen_mcp.coordination.converse import converse
from massgen_mcp.coordination.echo import EchoSources, schema_texts
from massgen_mcp.coordination.reviewers import reads
from massgen_mcp.coordination.workflow import (
    ECHOED,
    REPEATED,
    Decision,
    decide,
    new_answer_tool,
    vote_tool,
)
from massgen_mcp.messages import Step, ToolCall

Emit = Callable[..., None]
log = logging.getLogger(__name__)


def answer_order(agents: list[AgentState], a: AgentState, seed: int | None) -> list[AgentState]:
    """The agents whose answers `a` sees this turn, in the order it sees them: by anonymous
    id with its own last when `seed` is None, else shuffled by (seed, agent, round)."""
    shown = sorted((b for b in agents if b.answers and reads(a, b)),
                   key=lambda b: (b is a, b.anon))
    if seed is not None:
        random.Random(f"{seed}:{a.anon}:{a.turns}").shuffle(shown)
    return shown


async def wait_for_first_answers(a: AgentState, agents: list[AgentState],
                                 cfg: OrchestratorConfig,
                                 changed: Callable[[], anyio.Event]) -> bool:
    """Hold an agent that has answered while a live peer is on its first answer (that turn
    would be cancelled by the peer's answer anyway), up to `first_answer_wait_seconds`.
    True when it waited (the caller looks at the state again)."""
    wait = cfg.first_answer_wait_seconds
    if not wait or not a.answers or not any(
            b.live and not b.answers for b in agents if b is not a and reads(a, b)):
        return False
    now = anyio.current_time()
    if a.wait_until is None:
        a.wait_until = now + wait
    if now >= a.wait_until:
        return False
    with anyio.move_on_after(a.wait_until - now):
        await changed().wait()
    return True


def may_answer(cfg: OrchestratorConfig, a: AgentState, agents: list[AgentState]) -> bool:
    """May `a` submit another answer (answer limit, fairness lead cap)?"""
    limit = cfg.max_new_answers_per_agent
    if limit is not None and len(a.answers) >= limit:
        return False
    cap = cfg.fairness_lead_cap
    peers = [len(b.answers) for b in agents if b is not a and b.live]
    return not (cap is not None and peers and len(a.answers) - min(peers) >= cap)


async def coordination_turn(
    a: AgentState,
    agents: list[AgentState],
    *,
    cfg: OrchestratorConfig,
    fmt: AnswerFormat,
    task: str,
    context: str | None,
    budget: Budget,
    seed: int | None,
    emit: Emit,
) -> Decision | str:
    """Run one turn of `a` to a Decision (answer or vote) or an error text; a provider's
    failure propagates (`BackendError`: the orchestrator counts it against the agent)."""
    order = answer_order(agents, a, seed)
    a.turns += 1
    shown = [prompts.ShownAnswer(b.label or "", fmt.render(b.answers[-1])) for b in order]
    targets = sorted(b.anon for b in order)  # k reviewers: only what it read, and its own
    answer_ok = may_answer(cfg, a, agents) or not targets
    tools = ([new_answer_tool(fmt)] if answer_ok else []) + (
        [vote_tool(targets)] if targets else [])
    messages = prompts.turn_messages(
        own_system=a.spec.system_message, task=task, context=context,
        instructions=fmt.instructions(), shown=shown, own_label=a.label, noun=fmt.noun,
        sensitivity=cfg.voting_sensitivity, vote_only=not answer_ok, stance=a.spec.stance,
        reads=len(a.reads) if a.reads is not None else None)
    emit("turn_started", agent=a.spec.id, sees=[s.label for s in shown])
    previous = a.answers[-1].text if a.answers else None
    echo = EchoSources.of(
        [*schema_texts([new_answer_tool(fmt), vote_tool(targets)]), *prompts.protocol_texts(
            messages[0].content, tools, fmt.noun, fmt.instructions(), a.label,
            not answer_ok)], task, [b.vote.reason for b in agents if b.vote and b is not a])
    # A text reply (no tool call, even after a reminder) from an agent with an answer is
    # "no change": it stands by that answer. So is a second echo (below).
    standing = Decision("vote", voted_for=a.anon,
                        reason=prompts.STANDS_BY) if a.answers else None
    told_to_vote = echoed = False

    def check(calls: list[ToolCall]) -> Decision | list[str] | str:
        nonlocal told_to_vote, echoed
        outcome = decide(calls, fmt=fmt, may_answer=answer_ok, may_vote=bool(targets),
                         vote_targets=targets, previous_answer=previous,
                         novelty=cfg.answer_novelty_requirement, echo=echo)
        if isinstance(outcome, list) and outcome[0].startswith(REPEATED):
            if told_to_vote:  # it stands by its answer: that is a vote for it
                return Decision("vote", voted_for=a.anon, reason=prompts.RESUBMITTED,
                                note="re-submitted its answer unchanged after being told "
                                     "to vote; counted as a vote for its own answer")
            told_to_vote = True
        if isinstance(outcome, list) and outcome[0].startswith(ECHOED):
            # an echo is handled like a text reply: one reminder (the problem), then none
            what = outcome[0].split(": ", 1)[1].split(". Call", 1)[0]
            a.note(f"refused an echo as an answer: {what}")
            emit("echo_refused", agent=a.spec.id, problem=what, again=echoed,
                 message=f"{a.spec.id}: not an answer, refused ({what})")
            if echoed:
                if standing is not None:
                    a.note("echoed again after being told: counted as no change, a vote for "
                           "its own answer")
                    return standing
                return f"echoed the protocol instead of answering, even after a reminder ({what})"
            echoed = True
        return outcome

    step = Step("coordinate", fmt.noun, a.label, tuple(targets), answer_ok)
    return await converse(a, messages, tools, check, budget, step, standing=standing)


def shuffle_seed(cfg: OrchestratorConfig, task: str, agent_ids: list[str]) -> int | None:
    """The run's answer-order seed (None: no shuffle): the configured one, else one derived
    from the task and the team, so the same run shows the same orders (a recorded run
    replays request for request) while each voter and round still gets its own."""
    if not cfg.shuffle_answers:
        return None
    if cfg.shuffle_seed is not None:
        return cfg.shuffle_seed
    digest = hashlib.sha256("\0".join([task, *agent_ids]).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
