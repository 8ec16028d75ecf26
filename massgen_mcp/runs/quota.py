"""The operator's limits on what tool calls may run: every run's size, how many run at once,
and what each user may spend in a day.

- `RunLimits.cap(team)`: a team a tool call builds (`models`, a team file, the default team)
  gets the operator's per-run caps (provider calls, tokens, USD, answers per agent, time,
  agents) wherever its own are missing or larger: the operator's `--team` limits (the keys
  its file sets) and the server's `--max-run-*` options.
- `Quota.admit(user, live)`: before a run starts, the server-wide `--max-concurrent-runs`,
  the per-user `--max-runs-per-user`, and the per-user daily spend
  (`--max-daily-usd-per-user`, a day being a UTC day).
- `SpendCounter`: what each user spent today, shared by every process on the store: a
  locked file in the state directory, or one Redis hash per day with `--store redis://`.

A refusal is an `InputError` naming the limit, its option and when it frees up.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from massgen_mcp.errors import InputError
from massgen_mcp.runs.owners import Principal

if TYPE_CHECKING:
    from massgen_mcp.config.choose import Vocabulary
    from massgen_mcp.config.env import Environment
    from massgen_mcp.config.team import Team
    from massgen_mcp.coordination.result import RunResult
    from massgen_mcp.runs.engine import Engine
    from massgen_mcp.runs.store import RunRecords

#: The per-run caps an operator's team file may set, as `RunLimits` fields.
TEAM_KEYS = {"max_provider_calls": "max_provider_calls", "max_total_tokens": "max_total_tokens",
             "max_cost_usd": "max_cost_usd", "max_new_answers_per_agent": "max_answers",
             "orchestrator_timeout_seconds": "timeout_s"}
SPEND_KEY = "massgen:spend:"  # + YYYY-MM-DD: a hash user -> USD (Redis)
SPEND_DAYS_KEPT = 8 * 86400  # a day's Redis hash expires a week after
MAX_JOB_SECONDS = 7 * 86400  # the longest time limit a queued job carries (queue.py)


@dataclass(frozen=True)
class RunLimits:
    """Caps on one run built by a tool call (None: no cap of the operator's)."""

    max_provider_calls: int | None = None
    max_total_tokens: int | None = None
    max_cost_usd: float | None = None
    max_answers: int | None = None
    timeout_s: float | None = None
    max_agents: int | None = None

    def tighter(self, other: RunLimits) -> RunLimits:
        """Each cap the smaller of the two."""
        def low(a: Any, b: Any) -> Any:
            return b if a is None else a if b is None else min(a, b)

        return RunLimits(*(low(getattr(self, f), getattr(other, f))
                           for f in self.__dataclass_fields__))

    @classmethod
    def of_team(cls, team: Team) -> RunLimits:
        """The caps an operator's team file sets explicitly (its defaults are not caps)."""
        orch = team.orchestrator
        values = {field: getattr(orch, key) for key, field in TEAM_KEYS.items()
                  if key in orch.model_fields_set and getattr(orch, key) is not None}
        return cls(**values)

    def cap(self, team: Team) -> Team:
        """`team` within these caps; an `InputError` when it has more agents than allowed."""
        if self.max_agents is not None and len(team.agents) > self.max_agents:
            raise InputError(f"this team has {len(team.agents)} agents; the operator allows "
                             f"at most {self.max_agents} per run (--max-agents)")
        orch = team.orchestrator
        agents = len(team.agents)
        with_tools = sum(1 for a in team.agents if a.backend.servers())
        current = {"max_provider_calls": orch.provider_call_cap(agents, with_tools),
                   "max_total_tokens": orch.max_total_tokens,
                   "max_cost_usd": orch.max_cost_usd,
                   "max_new_answers_per_agent": orch.max_new_answers_per_agent,
                   "orchestrator_timeout_seconds": orch.orchestrator_timeout_seconds}
        lower = {}
        for key, field in TEAM_KEYS.items():
            limit = getattr(self, field)
            if limit is not None and (current[key] is None or current[key] > limit):
                lower[key] = limit
        return team.with_overrides(**lower)


def caps_of(team: Team) -> dict[str, Any]:
    """A capped team's per-run limits as `App.team_for` arguments (a queued job carries
    them, so the worker runs within the front end's caps, not only its own)."""
    orch = team.orchestrator
    timeout = orch.orchestrator_timeout_seconds
    return {"max_answers_per_agent": orch.max_new_answers_per_agent,
            "timeout_s": timeout if timeout <= MAX_JOB_SECONDS else None,
            "max_total_tokens": orch.max_total_tokens,
            "max_provider_calls": orch.max_provider_calls, "max_cost_usd": orch.max_cost_usd}


def limits_from_options(options: Any) -> Quota:
    """The caps and quota the server's options ask for (`--max-run-*`, `--max-agents`,
    `--max-concurrent-runs`, `--max-runs-per-user`, `--max-daily-usd-per-user`)."""
    def get(name: str) -> Any:
        return getattr(options, name, None)

    run = RunLimits(max_provider_calls=get("max_run_calls"),
                    max_total_tokens=get("max_run_tokens"), max_cost_usd=get("max_run_usd"),
                    timeout_s=get("max_run_seconds"), max_agents=get("max_agents"))
    return Quota(max_concurrent_runs=get("max_concurrent_runs"),
                 max_runs_per_user=get("max_runs_per_user"),
                 max_daily_usd_per_user=get("max_daily_usd_per_user"), run=run)


async def operator_limits(base: RunLimits | None, team: str | None, env: Environment,
                          vocabulary: Vocabulary) -> RunLimits:
    """The server's own caps (`base`), tightened by those its `--team` file sets."""
    limits = base or RunLimits()
    if team:
        import anyio

        from massgen_mcp.config.choose import resolve_team

        resolved = await anyio.to_thread.run_sync(
            lambda: resolve_team(team=team, env=env, vocabulary=vocabulary))
        limits = limits.tighter(RunLimits.of_team(resolved))
        if limits.max_agents is not None and len(resolved.agents) > limits.max_agents:
            # The operator's own team is never refused for its size.
            limits = dataclasses.replace(limits, max_agents=len(resolved.agents))
    return limits


def today() -> str:
    return time.strftime("%Y-%m-%d", time.gmtime())


def until_midnight() -> str:
    """How long until the daily counters start again (00:00 UTC), e.g. '5h12m'."""
    left = 86400 - int(time.time()) % 86400
    return f"{left // 3600}h{left % 3600 // 60:02d}m"


def cost_of(result: RunResult) -> float:
    from massgen_mcp.runs.store_usage import usage_of  # run-only (start-up time)

    return sum(row.get("cost_usd", 0.0) for row in usage_of(result).values())


class SpendCounter:
    """Each user's spend today (USD), shared by the processes on one store."""

    def __init__(self, store: RunRecords, state: Path) -> None:
        self.client = getattr(store, "client", None)  # the Redis store's client, if any
        self.path = state / "spend.json"

    def add(self, user: str, usd: float) -> None:
        if usd <= 0:
            return
        day = today()
        if self.client is not None:
            pipe = self.client.pipeline(transaction=False)
            pipe.hincrbyfloat(SPEND_KEY + day, user, usd)
            pipe.expire(SPEND_KEY + day, SPEND_DAYS_KEPT)
            pipe.execute()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        with os.fdopen(fd, "r+", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)  # several processes finish runs at once
            try:
                data = json.loads(f.read() or "{}")
            except ValueError:
                data = {}
            found = data.get(day) if isinstance(data, dict) else None
            row: dict[str, Any] = found if isinstance(found, dict) else {}
            try:
                before = float(row.get(user, 0) or 0)
            except (TypeError, ValueError):
                before = 0.0
            row[user] = round(before + usd, 6)
            f.seek(0)
            f.truncate()
            f.write(json.dumps({day: row}))  # yesterday's counters are not needed
            f.flush()

    def spent(self, user: str) -> float:
        day = today()
        if self.client is not None:
            value = self.client.hget(SPEND_KEY + day, user)
            return float(value or 0)
        try:
            with self.path.open(encoding="utf-8") as f:
                fcntl.flock(f, fcntl.LOCK_SH)
                data = json.loads(f.read() or "{}")
        except (OSError, ValueError):
            return 0.0
        row = data.get(day) if isinstance(data, dict) else None
        try:
            return float((row or {}).get(user, 0) or 0)
        except (TypeError, ValueError, AttributeError):
            return 0.0


@dataclass
class Quota:
    """How many runs may go at once (here), per user, and what a user may spend per day."""

    max_concurrent_runs: int | None = None
    max_runs_per_user: int | None = None
    max_daily_usd_per_user: float | None = None
    #: The server's own per-run caps (`--max-run-*`, `--max-agents`).
    run: RunLimits = dataclasses.field(default_factory=RunLimits)
    spend: SpendCounter | None = None
    _caps: RunLimits | None = None

    async def caps(self, team: str | None, env: Environment, vocabulary: Vocabulary
                   ) -> RunLimits:
        """The per-run caps of tool calls: `run` tightened by those the operator's `--team`
        file sets (resolved once)."""
        if self._caps is None:
            self._caps = await operator_limits(self.run, team, env, vocabulary)
        return self._caps

    def watch(self, engine: Engine, state: Path) -> None:
        """Count every run `engine` finishes toward its owner's daily spend."""
        if self.max_daily_usd_per_user is None:
            return
        spend = self.spend = SpendCounter(engine.store, state)
        engine.runner.finished.append(
            lambda live, result: spend.add(engine.owner(live.run_id), cost_of(result)))

    def admit_on(self, engine: Engine, who: Principal) -> None:
        """`admit` against the runs live on `engine`."""
        self.admit(who, [engine.owner(run_id) for run_id, run in list(engine.live.items())
                         if run.result is None])

    def admit(self, who: Principal, live_owners: Iterable[str]) -> None:
        """Refuse (`InputError`) a new run of `who` past a limit; `live_owners`: the owner
        of every run live in this process. The per-user run cap leaves admins out (the
        operator's own scripts); the server-wide cap and the daily spend bind everyone."""
        owners = list(live_owners)
        user = who.name
        if self.max_concurrent_runs is not None and len(owners) >= self.max_concurrent_runs:
            raise InputError(f"the server is running {len(owners)} runs, its limit "
                             f"(--max-concurrent-runs {self.max_concurrent_runs}); try again "
                             "when one ends")
        mine = sum(1 for o in owners if o == user)
        if (self.max_runs_per_user is not None and not who.admin
                and mine >= self.max_runs_per_user):
            raise InputError(f"user '{user}' has {mine} runs going, the limit per user "
                             f"(--max-runs-per-user {self.max_runs_per_user}); try again when "
                             "one of them ends (list_runs shows them; cancel_run stops one)")
        if self.max_daily_usd_per_user is not None and self.spend is not None:
            spent = self.spend.spent(user)
            if spent >= self.max_daily_usd_per_user:
                raise InputError(f"user '{user}' has spent ${spent:.2f} today, the daily limit "
                                 f"per user (--max-daily-usd-per-user "
                                 f"{self.max_daily_usd_per_user:g}); it resets at 00:00 UTC "
                                 f"(in {until_midnight()})")
