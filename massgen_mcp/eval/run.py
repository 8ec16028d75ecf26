"""`run_eval`: the team against each member, the best member and self-consistency at the
team's budget, on the same items, with the oracle and the selection gap.

Phase 1, per item (`concurrency` items at once): every member answers alone (one call each:
the `solo:<id>` arms, and the oracle: right if any member's first answer is right), then the
team runs a consensus on the same prompt. Phase 2, once the best member is known (chosen
after the fact, and labelled so): that member is sampled `k` times per item and the majority
answer taken, `k` being the team's mean calls per item, so both arms spend the same calls.

Scored items are appended to `items.jsonl` in the eval's directory as they finish, so an
interrupted eval started again with the same arguments runs only what is left.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from massgen_mcp.errors import BackendError, InputError
from massgen_mcp.eval.exchanges import Members, ReplayMiss, check_cassette
from massgen_mcp.eval.figures import Records, best_member, figures
from massgen_mcp.eval.latency import Latencies
from massgen_mcp.eval.prepare import (
    EvalOptions,
    choose_arms,
    eval_dir,
    prices_of,
    team_from_cassette,
    write_team,
)
from massgen_mcp.eval.scoring import ArmOutcome
from massgen_mcp.eval.suites import Item, Suite, load_suite
from massgen_mcp.messages import system, user
from massgen_mcp.paths import open_private

if TYPE_CHECKING:
    from massgen_mcp.config.team import AgentSpec, Team

# A-priori sizes of one call, for the budget check before anything was spent.
_OVERHEAD_TOKENS, _OUTPUT_TOKENS = 1500, 600


@dataclass
class Progress:
    total: int
    done: int = 0
    right: Counter[str] = field(default_factory=Counter)


ProgressFn = Callable[[Progress, str], None]


async def run_eval(options: EvalOptions, progress: ProgressFn | None = None) -> dict[str, Any]:
    """Run an eval and return its figures (the `--json` document)."""
    if options.record and options.replay:
        raise InputError("--record and --replay cannot be used together")
    if options.concurrency < 1:
        raise InputError("--concurrency must be at least 1")
    if options.max_cost_usd is not None and options.max_cost_usd <= 0:
        raise InputError("--max-cost-usd must be a positive number")
    suite = await anyio.to_thread.run_sync(lambda: load_suite(
        options.suite, limit=options.limit, seed=options.seed, checker=options.checker,
        levels=options.levels))
    from massgen_mcp.app import App
    from massgen_mcp.config.choose import CLI

    cassette = None
    if options.replay:
        cassette = check_cassette(options.replay, replay=True)
        team = team_from_cassette(cassette)
    else:
        probe = App(options.state_dir, vocabulary=CLI)
        team = await probe.team_for(models=options.models, team=options.team)
        if options.record:
            cassette = options.record
    arms = choose_arms(options.arms, team)
    home = eval_dir(options, suite, team, arms, cassette)
    if options.record:
        check_cassette(options.record, replay=False, resuming=(home / "items.jsonl").exists())
        write_team(options.record, team)
    app = App(home / "runs", vocabulary=CLI)
    from massgen_mcp.redaction import Redactor, configured_secrets

    # What run records redact, redacted in every eval output too (items.jsonl, the
    # recording, --json, --report): a member's reply can repeat a key it was shown.
    redactor = Redactor(configured_secrets(team, app.env))
    members = Members(team, cassette, replay=options.replay is not None,
                      redact=redactor.value)
    prices = prices_of(team, options.max_cost_usd)
    runner = _Runner(suite, team, arms, app, members, prices, home, options, progress)
    runner.redact = redactor.value
    try:
        figures: dict[str, Any] = redactor.value(await runner.run())
        return figures
    except BaseExceptionGroup as group:  # an item's error, out of the items' task group
        raise _first_error(group) from None
    finally:
        await members.aclose()


def _first_error(group: BaseExceptionGroup[Any]) -> BaseException:
    """The first of our own errors in a task group's exceptions (else the group itself)."""
    from massgen_mcp.errors import MassgenError

    for e in group.exceptions:
        if isinstance(e, BaseExceptionGroup):
            e = _first_error(e)
        if isinstance(e, MassgenError):
            return e
    return group


# ------------------------------------------------------------------------- the run


class _Runner:
    def __init__(self, suite: Suite, team: Team, arms: set[str], app: Any, members: Members,
                 prices: dict[str, Any], home: Path, options: EvalOptions,
                 progress: ProgressFn | None) -> None:
        self.suite, self.team, self.arms, self.app = suite, team, arms, app
        self.members, self.prices, self.home, self.options = members, prices, home, options
        self.progress = progress
        self.records: Records = {}
        self.latency = Latencies(options.record or options.replay)
        if options.replay:
            self.latency.load_for_replay()
        self.spent = 0.0
        self.stopped: str | None = None
        self.solo_needed = bool(arms - {"team"})
        n = len(team.agents)
        self.sc_k = 2 * n + 1
        self.redact: Callable[[Any], Any] = lambda value: value  # set by run_eval

    # -- budget
    def _call_cost(self, agent: AgentSpec, prompt_chars: int) -> float:
        price = self.prices[agent.id]
        if price is None:
            return 0.0
        cap = agent.backend.max_tokens if getattr(agent.backend, "max_tokens", None) else None
        out = min(cap, _OUTPUT_TOKENS) if cap else _OUTPUT_TOKENS
        return float(price.cost(prompt_chars // 4 + _OVERHEAD_TOKENS, out))

    def _item_estimate(self, item: Item) -> float:
        """What the next item may cost: the dearest item so far (its phase-1 arms) plus what
        self-consistency will later spend on it; from the prompt size before anything ran."""
        observed = [self._cost_of({a: o for a, o in r.items() if a != "self-consistency"})
                    for r in self.records.values()]
        sc_calls = (self._k() - 1) if "self-consistency" in self.arms else 0
        if observed:
            solo = max((self._solo_cost(a) for a in self.team.agents), default=0.0)
            return max(observed) + sc_calls * solo
        chars = len(item.prompt) + len(self.suite.instructions)
        per_agent = [self._call_cost(a, chars) for a in self.team.agents]
        team = (sum(per_agent) * 3 if "team" in self.arms else 0.0)  # answer, vote, present
        solo = sum(per_agent) if self.solo_needed else 0.0
        return team + solo + max(per_agent) * sc_calls

    def _solo_cost(self, agent: AgentSpec) -> float:
        """The dearest single call `agent` made alone so far (a self-consistency sample is
        the same request)."""
        costs = [r[f"solo:{agent.id}"].get("cost_usd") or 0.0 for r in self.records.values()
                 if f"solo:{agent.id}" in r]
        return max(costs, default=self._call_cost(agent, 0))

    @staticmethod
    def _cost_of(record: dict[str, Any]) -> float:
        return sum(o.get("cost_usd") or 0.0 for o in record.values())

    # -- records
    def _load(self) -> None:
        path = self.home / "items.jsonl"
        if not path.exists():
            return
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            self.records.setdefault(row["item"], {}).update(row["arms"])
            self.spent += self._cost_of(row["arms"])

    def _save(self, item_id: str, outcomes: dict[str, ArmOutcome]) -> None:
        arms = {name: o.to_json() for name, o in outcomes.items()}
        self.records.setdefault(item_id, {}).update(arms)
        with open_private(self.home / "items.jsonl") as f:
            f.write(json.dumps(self.redact({"item": item_id, "arms": arms}), sort_keys=True)
                    + "\n")
        self.spent += self._cost_of(arms)

    async def run(self) -> dict[str, Any]:
        self._load()
        todo = [i for i in self.suite.items if not self._phase1_done(i.id)]
        budget = self.options.max_cost_usd
        if budget is not None and todo and self._item_estimate(todo[0]) > budget - self.spent:
            raise InputError(
                f"--max-cost-usd {budget:g}: one item is estimated at "
                f"${self._item_estimate(todo[0]):.4f} with this team, more than the budget "
                f"left (${budget - self.spent:.4f}); raise it or use fewer agents")
        state = Progress(len(self.suite.items), len(self.suite.items) - len(todo))
        self._tell(state, "resumed" if state.done else "started")
        limiter = anyio.CapacityLimiter(self.options.concurrency)
        reserved = [0.0]

        async def one(item: Item) -> None:
            async with limiter:
                if self.stopped:
                    return
                estimate = self._item_estimate(item)
                if budget is not None and self.spent + reserved[0] + estimate > budget:
                    self.stopped = (f"budget: the next item would pass --max-cost-usd "
                                    f"{budget:g} (spent ${self.spent:.4f})")
                    return
                reserved[0] += estimate
                try:
                    self._save(item.id, await self._phase1(item))
                finally:
                    reserved[0] -= estimate
                state.done += 1
                for arm, o in self.records[item.id].items():
                    state.right[arm] += bool(o["right"])
                self._tell(state, item.id)

        async with anyio.create_task_group() as tg:
            for item in todo:
                tg.start_soon(one, item)
        if "self-consistency" in self.arms:
            await self._phase2()
        notes = [e for m in self.members.members.values() for e in m.errors]
        return figures(self.suite, self.team, self.arms, self.records, sc_k=self.sc_k,
                       stopped=self.stopped, notes=notes)

    def _tell(self, state: Progress, what: str) -> None:
        if self.progress is not None:
            self.progress(state, what)

    def _phase1_done(self, item_id: str) -> bool:
        have = self.records.get(item_id, {})
        need = {f"solo:{a.id}" for a in self.team.agents} if self.solo_needed else set()
        if "team" in self.arms:
            need.add("team")
        return need <= set(have)

    # -- phase 1: each member alone, then the team
    def _prompt(self, item: Item) -> str:
        return f"{item.prompt}\n\n{self.suite.instructions}".strip()

    async def _solo(self, item: Item, agent: AgentSpec, tag: str, arm: str) -> ArmOutcome:
        member = self.members.members[agent.id]
        messages = ([system(agent.system_message)] if agent.system_message else [])
        messages.append(user(self._prompt(item)))
        t0 = time.monotonic()
        try:
            turn = await member.ask(tag, arm, messages, [])
            answer = turn.text
        except ReplayMiss as e:
            raise InputError(str(e)) from None
        except BackendError as e:
            answer = ""
            member.errors.append(f"{agent.id} on {item.id}: {e}")
        spent = member.spend[(tag, arm)]
        return await self._judged(item, answer, agent_costs=[(agent, spent)],
                                  latency=self.latency.get(tag, arm, time.monotonic() - t0))

    async def _judged(self, item: Item, answer: str, *, agent_costs: list[tuple[Any, Any]],
                      latency: float) -> ArmOutcome:
        right = bool(answer) and await anyio.to_thread.run_sync(item.judge, answer)
        cost: float | None = 0.0
        for agent, s in agent_costs:
            price = self.prices[agent.id]
            cost = None if price is None or cost is None else (
                cost + price.cost(s.input_tokens, s.output_tokens))
        return ArmOutcome(right, answer, sum(s.calls for _, s in agent_costs),
                          sum(s.input_tokens for _, s in agent_costs),
                          sum(s.output_tokens for _, s in agent_costs), cost, latency)

    async def _phase1(self, item: Item) -> dict[str, ArmOutcome]:
        out: dict[str, ArmOutcome] = {}

        async def solo(agent: AgentSpec) -> None:
            out[f"solo:{agent.id}"] = await self._solo(item, agent, f"{item.id}#solo",
                                                       f"solo:{agent.id}")

        async with anyio.create_task_group() as tg:
            if self.solo_needed:
                for agent in self.team.agents:
                    tg.start_soon(solo, agent)
            if "team" in self.arms:
                out["team"] = await self._team(item)
        self.latency.save(item.id, out)
        return out

    async def _team(self, item: Item) -> ArmOutcome:
        t0 = time.monotonic()
        team = self.members.team_for_item(item.id)
        result = await self.app.consensus(team, self._prompt(item)).start()
        misses = [e for m in self.members.members.values() for e in m.misses]
        if misses:
            raise InputError(misses[0])
        answer = result.final_answer or ""
        costs = [(a, self.members.members[a.id].spend[(item.id, "team")])
                 for a in self.team.agents]
        outcome = await self._judged(item, answer, agent_costs=costs,
                                     latency=self.latency.get(item.id, "team",
                                                              time.monotonic() - t0))
        return outcome

    # -- phase 2: self-consistency on the best member, at the team's budget
    def _k(self) -> int:
        calls = [r["team"]["calls"] for r in self.records.values() if "team" in r]
        return max(1, round(sum(calls) / len(calls))) if calls else self.sc_k

    async def _phase2(self) -> None:
        best, k = best_member(self.team, self.records), self._k()
        self.sc_k = k
        done = [i for i in self.suite.items
                if i.id in self.records and f"solo:{best.id}" in self.records[i.id]
                and "self-consistency" not in self.records[i.id]]
        budget = self.options.max_cost_usd
        limiter = anyio.CapacityLimiter(self.options.concurrency)

        async def one(item: Item) -> None:
            async with limiter:
                if budget is not None and self.spent + self._solo_cost(best) * (k - 1) > budget:
                    self.stopped = (f"budget: self-consistency stopped before item "
                                    f"{item.id} (spent ${self.spent:.4f})")
                    return
                self._save(item.id, {"self-consistency": await self._sc(item, best, k)})
                self.latency.save(item.id, {})

        async with anyio.create_task_group() as tg:
            for item in done:
                tg.start_soon(one, item)

    async def _sc(self, item: Item, best: AgentSpec, k: int) -> ArmOutcome:
        first = ArmOutcome.from_json(self.records[item.id][f"solo:{best.id}"])
        samples = [first.answer]
        outcomes = [first]
        for i in range(1, k):
            o = await self._solo(item, best, f"{item.id}#sc{i}", "self-consistency")
            samples.append(o.answer)
            outcomes.append(o)
        keys = [item.key(s) if s else "" for s in samples]
        counts = Counter(x for x in keys if x)
        if counts:
            top = max(counts.values())
            winner = next(x for x in keys if x and counts[x] == top)  # earliest of the tied
            answer = samples[keys.index(winner)]
        else:
            answer = ""
        right = bool(answer) and await anyio.to_thread.run_sync(item.judge, answer)
        costs = [o.cost_usd for o in outcomes]
        return ArmOutcome(right, answer, sum(o.calls for o in outcomes),
                          sum(o.input_tokens for o in outcomes),
                          sum(o.output_tokens for o in outcomes),
                          None if None in costs else sum(c or 0.0 for c in costs),
                          sum(o.latency_s for o in outcomes))
