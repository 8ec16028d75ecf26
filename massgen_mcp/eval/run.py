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

import dataclasses
import hashlib
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
from massgen_mcp.eval.scoring import ArmOutcome, summarize
from massgen_mcp.eval.suites import Item, Suite, load_suite
from massgen_mcp.messages import system, user
from massgen_mcp.paths import open_private

if TYPE_CHECKING:
    from massgen_mcp.config.team import AgentSpec, Team

ARMS = ("solo", "best-solo", "self-consistency", "team", "oracle")
# A-priori sizes of one call, for the budget check before anything was spent.
_OVERHEAD_TOKENS, _OUTPUT_TOKENS = 1500, 600


@dataclass
class EvalOptions:
    """What `massgen-mcp eval` takes (see its --help)."""

    suite: str
    models: str | None = None
    team: str | None = None
    arms: list[str] | None = None
    limit: int | None = None
    max_cost_usd: float | None = None
    concurrency: int = 2
    record: Path | None = None
    replay: Path | None = None
    seed: int = 0
    checker: str | None = None
    state_dir: Path | None = None
    fresh: bool = False
    levels: tuple[int, ...] | None = None


@dataclass
class Progress:
    total: int
    done: int = 0
    right: Counter[str] = field(default_factory=Counter)


ProgressFn = Callable[[Progress, str], None]


class EvalStopped(Exception):
    """The budget stopped the eval; the figures cover the items scored before."""


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
        team = _team_from_cassette(cassette)
    else:
        probe = App(options.state_dir, vocabulary=CLI)
        team = await probe.team_for(models=options.models, team=options.team)
        if options.record:
            cassette = options.record
    arms = _choose_arms(options.arms, team)
    home = _eval_dir(options, suite, team, arms, cassette)
    if options.record:
        check_cassette(options.record, replay=False, resuming=(home / "items.jsonl").exists())
        _write_team(options.record, team)
    app = App(home / "runs", vocabulary=CLI)
    from massgen_mcp.redaction import Redactor, configured_secrets

    # What run records redact, redacted in every eval output too (items.jsonl, the
    # recording, --json, --report): a member's reply can repeat a key it was shown.
    redactor = Redactor(configured_secrets(team, app.env))
    members = Members(team, cassette, replay=options.replay is not None,
                      redact=redactor.value)
    prices = _prices(team, options.max_cost_usd)
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


# ------------------------------------------------------------------------- set-up


def _choose_arms(asked: list[str] | None, team: Team) -> set[str]:
    ids = [a.id for a in team.agents]
    if not asked:
        return {*(f"solo:{i}" for i in ids), "best-solo", "self-consistency", "team", "oracle"}
    chosen: set[str] = set()
    for name in asked:
        if name == "solo":
            chosen |= {f"solo:{i}" for i in ids}
        elif name.startswith("solo:"):
            if name[5:] not in ids:
                raise InputError(f"--arms: {name}: the team has no agent {name[5:]!r} "
                                 f"(its agents: {', '.join(ids)})")
            chosen.add(name)
        elif name in ARMS:
            chosen.add(name)
        else:
            raise InputError(f"--arms: unknown arm {name!r}; the arms are solo, "
                             "solo:<agent_id>, best-solo, self-consistency, team, oracle")
    return chosen


def _eval_dir(options: EvalOptions, suite: Suite, team: Team, arms: set[str],
              cassette: Path | None) -> Path:
    """Where scored items are kept: inside the recording, a fresh temporary place for a
    replay (a replay always re-scores), else under the state directory by fingerprint."""
    import tempfile

    if options.replay:
        return Path(tempfile.mkdtemp(prefix="massgen-eval-replay-"))
    if options.record:
        home = options.record
    else:
        from massgen_mcp.paths import state_dir

        ident = json.dumps([suite.name, [i.id for i in suite.items],
                            [(a.id, a.provider.name, a.model) for a in team.agents],
                            sorted(arms)])
        digest = hashlib.sha256(ident.encode()).hexdigest()[:12]
        home = (options.state_dir or state_dir()) / "evals" / f"{suite.name}-{digest}"
    if options.fresh and (home / "items.jsonl").exists():
        (home / "items.jsonl").unlink()
    home.mkdir(parents=True, exist_ok=True)
    return home


def _write_team(cassette: Path, team: Team) -> None:
    from massgen_mcp.config.prices import FREE, agent_price
    from massgen_mcp.paths import write_atomic

    data = {"name": team.name, "source": team.source,
            "orchestrator": team.orchestrator.model_dump(mode="json"),
            "agents": [{"id": a.id, "provider": a.provider.name, "model": a.model,
                        "system_message": a.system_message,
                        "local": agent_price(a) == FREE} for a in team.agents]}
    write_atomic(cassette / "team.json", json.dumps(data, indent=2, sort_keys=True))


def _team_from_cassette(cassette: Path) -> Team:
    from massgen_mcp.config.providers import PROVIDERS, Provider
    from massgen_mcp.config.team import AgentSpec, BackendConfig, OrchestratorConfig
    from massgen_mcp.config.team import Team as TeamType

    data = json.loads((cassette / "team.json").read_text(encoding="utf-8"))
    agents = []
    for a in data["agents"]:
        provider = PROVIDERS.get(a["provider"]) or Provider(a["provider"], "function")
        if a.get("local"):  # priced as it was recorded: free (a server on that machine)
            provider = dataclasses.replace(provider, local=True)
        agents.append(AgentSpec(a["id"], provider, a["model"],
                                BackendConfig.model_validate({"type": "function",
                                                              "model": a["model"]}),
                                None, None, a.get("system_message")))
    return TeamType(data["name"], tuple(agents),
                    OrchestratorConfig.model_validate(data["orchestrator"]),
                    f"replay:{cassette}")


def _prices(team: Team, budget: float | None) -> dict[str, Any]:
    from massgen_mcp.config.prices import agent_price

    prices = {a.id: agent_price(a) for a in team.agents}
    unknown = [a.label for a in team.agents if prices[a.id] is None]
    if budget is not None and unknown:
        raise InputError(f"--max-cost-usd cannot be enforced: no price is known for "
                         f"{', '.join(unknown)} (see list_backends for the price table)")
    return prices


# ------------------------------------------------------------------------- the run


class _Runner:
    def __init__(self, suite: Suite, team: Team, arms: set[str], app: Any, members: Members,
                 prices: dict[str, Any], home: Path, options: EvalOptions,
                 progress: ProgressFn | None) -> None:
        self.suite, self.team, self.arms, self.app = suite, team, arms, app
        self.members, self.prices, self.home, self.options = members, prices, home, options
        self.progress = progress
        self.records: dict[str, dict[str, Any]] = {}  # item id -> {arm: outcome json}
        self.latency = _Latencies(options.record or options.replay)
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
        return self._figures()

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
    def best_member(self) -> AgentSpec:
        def right(agent: AgentSpec) -> int:
            return sum(bool(r.get(f"solo:{agent.id}", {}).get("right"))
                       for r in self.records.values())
        return max(self.team.agents, key=right)  # max keeps the first of equals: config order

    def _k(self) -> int:
        calls = [r["team"]["calls"] for r in self.records.values() if "team" in r]
        return max(1, round(sum(calls) / len(calls))) if calls else self.sc_k

    async def _phase2(self) -> None:
        best, k = self.best_member(), self._k()
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

    # -- figures
    def _figures(self) -> dict[str, Any]:
        ids = [i.id for i in self.suite.items if i.id in self.records]
        arms: dict[str, Any] = {}
        per_arm: dict[str, list[ArmOutcome]] = {}
        for name in sorted({a for r in self.records.values() for a in r}):
            per_arm[name] = [ArmOutcome.from_json(self.records[i][name]) for i in ids
                             if name in self.records[i]]
        solos = [f"solo:{a.id}" for a in self.team.agents]
        if all(s in per_arm for s in solos) and self.solo_needed:
            oracle = []
            for i in ids:
                rs = [ArmOutcome.from_json(self.records[i][s]) for s in solos
                      if s in self.records[i]]
                if len(rs) == len(solos):
                    oracle.append(ArmOutcome(any(r.right for r in rs), "",
                                             sum(r.calls for r in rs),
                                             sum(r.input_tokens for r in rs),
                                             sum(r.output_tokens for r in rs),
                                             None if any(r.cost_usd is None for r in rs)
                                             else sum(r.cost_usd or 0.0 for r in rs),
                                             max(r.latency_s for r in rs)))
            if "oracle" in self.arms:
                per_arm["oracle"] = oracle
            if "best-solo" in self.arms:
                best = self.best_member()
                per_arm["best-solo"] = per_arm[f"solo:{best.id}"]
        for name, outcomes in per_arm.items():
            if name.startswith("solo:") and name not in self.arms:
                continue
            arms[name] = summarize(outcomes)
        if "best-solo" in arms:
            arms["best-solo"]["member"] = self.best_member().id
            arms["best-solo"]["note"] = "the best member, chosen after the fact"
        if "self-consistency" in arms:
            arms["self-consistency"]["member"] = self.best_member().id
            arms["self-consistency"]["k"] = self.sc_k
        gap = None
        if "oracle" in arms and "team" in arms and arms["team"]["accuracy"] is not None:
            gap = round(arms["oracle"]["accuracy"] - arms["team"]["accuracy"], 4)
        items = []
        for item in self.suite.items:
            if item.id not in self.records:
                continue
            row: dict[str, Any] = {"id": item.id, "level": item.level,
                                   "expected": item.expected}
            row["arms"] = {a: self.records[item.id][a] for a in sorted(self.records[item.id])}
            items.append(row)
        notes = [e for m in self.members.members.values() for e in m.errors]
        return {"suite": self.suite.name, "team": [a.label for a in self.team.agents],
                "arms": arms, "selection_gap": gap, "stopped": self.stopped,
                "items_total": len(self.suite.items), "items_scored": len(ids),
                "notes": notes, "items": items}


class _Latencies:
    """Latencies are measured live and kept with a recording, so a replay reports the
    recorded ones (a replay answers at once; its scores must be the recording's)."""

    def __init__(self, cassette: Path | None) -> None:
        self.path = cassette / "latency.jsonl" if cassette else None
        self.recorded: dict[tuple[str, str], float] = {}
        self.replaying = False

    def load_for_replay(self) -> None:
        self.replaying = True
        if self.path and self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                self.recorded[(row["item"], row["arm"])] = row["seconds"]

    def get(self, item: str, arm: str, measured: float) -> float:
        if self.replaying:
            return self.recorded.get((item, arm), 0.0)
        self.recorded[(item, arm)] = round(measured, 3)
        return round(measured, 3)

    def save(self, item: str, outcomes: dict[str, ArmOutcome]) -> None:
        if self.replaying or self.path is None:
            return
        with open_private(self.path) as f:
            for key, seconds in list(self.recorded.items()):
                if key[0].split("#", 1)[0] == item:
                    f.write(json.dumps({"item": key[0], "arm": key[1],
                                        "seconds": seconds}) + "\n")
                    del self.recorded[key]
