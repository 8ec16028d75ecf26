"""The application facade: what the MCP server, the CLI and the Python API all call.

`App` turns caller-level arguments (task, files, models/team, limits) into a `PreparedRun`
of one mode (consensus, plan, checkpoint) on the `Engine`: it picks the team, reads the
files and applies the limits (how a call's team is chosen: teams.py). It is also the only
way in to what runs leave behind: run records, stored plans and checkpoint sessions
(records.py). It raises `MassgenError`s worded for users and knows nothing about MCP,
argparse or printing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from massgen_mcp.app.records import Records
from massgen_mcp.app.teams import ChosenTeam, check_cli_agents, check_limits, tool_team
from massgen_mcp.config.env import Environment
from massgen_mcp.paths import state_dir
from massgen_mcp.runs.owners import LOCAL_NAME, Principal

# Choosing teams, the team policy, the quota and the engine load at their first use: a server
# that only lists its tools never imports them (start-up time, bench/startup.py).
if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from massgen_mcp.backends import BackendContext
    from massgen_mcp.config.choose import Vocabulary
    from massgen_mcp.config.team import Team
    from massgen_mcp.config.trust import TeamPolicy
    from massgen_mcp.coordination.result import RunResult
    from massgen_mcp.modes.checkpoint.run import CheckpointResult
    from massgen_mcp.runs.engine import Engine, Listener, PreparedRun
    from massgen_mcp.runs.quota import Quota
    from massgen_mcp.runs.scale.queue import RunJob
    from massgen_mcp.runs.scale.worker import RunWorker
    from massgen_mcp.runs.store import RunRecords


class App(Records):
    """The one door (see the module docstring); what runs leave behind is read through the
    methods it has from `Records` (records.py)."""

    def __init__(
        self,
        state: Path | None = None,
        *,
        default_team: str | None = None,
        checkpoint_team: str | None = None,
        env: Environment | None = None,
        cwd: Path | None = None,
        vocabulary: Vocabulary | None = None,
        team_policy: TeamPolicy | None = None,
        allow_secret_files: bool = False,
        allow_cli_agents: bool = False,
        allow_checkpoint_team_override: bool = False,
        checkpoint_approval: str | None = None,
        store: RunRecords | None = None,
        quota: Quota | Callable[[], Quota] | None = None,
    ) -> None:
        self._vocabulary = vocabulary
        self.cwd = (cwd or Path.cwd()).resolve()
        self._team_policy = team_policy
        self.allow_secret_files = allow_secret_files
        #: May a tool call's `models` (or a restricted team file) start a coding-agent CLI?
        self.allow_cli_agents = allow_cli_agents
        self.env = env or Environment(dotenv_dir=self.cwd)
        from massgen_mcp.redaction import configured_secrets, install_log_redaction

        install_log_redaction(configured_secrets(env=self.env))  # --log-level DEBUG logs bodies
        self._state = state or state_dir(cwd=self.cwd)
        self._store = store
        self._engine: Engine | None = None
        self._shut_down: list[str | None] = []  # before the engine existed
        self._cli_standbys: int | None = None  # keep_cli_standbys before the engine existed
        self.default_team = default_team
        self.checkpoint_team = checkpoint_team
        #: May a `checkpoint` call name its own reviewers (`models`/`team`)? Operator only.
        self.allow_checkpoint_team_override = allow_checkpoint_team_override
        #: The operator's approval rule for checkpoints (majority | unanimous; None: majority).
        self.checkpoint_approval = checkpoint_approval
        self._quota = quota

    @property
    def vocabulary(self) -> Vocabulary:
        """How this caller names its arguments in messages (CLI flags, tool arguments, ...);
        by default a tool call's."""
        if self._vocabulary is None:
            from massgen_mcp.config.choose import MCP

            self._vocabulary = MCP
        return self._vocabulary

    @property
    def team_policy(self) -> TeamPolicy:
        """What teams named by tool calls may be (the operator's own choices are trusted);
        when none was given, only the user's teams folder, made at its first use."""
        if self._team_policy is None:
            from massgen_mcp.config.trust import TeamPolicy

            self._team_policy = TeamPolicy.create(
                operator_teams=[self.default_team, self.checkpoint_team])
        return self._team_policy

    @property
    def quota(self) -> Quota:
        """The operator's limits on tool calls' runs: size, how many, spend (runs/quota.py);
        made at its first use from what was given (a `Quota`, or how to make one), else
        none."""
        quota = self._quota
        if quota is None or callable(quota):
            from massgen_mcp.runs.quota import Quota

            quota = self._quota = quota() if quota is not None else Quota()
        return quota

    @property
    def engine(self) -> Engine:
        """The run engine, made at its first use: a server that only lists its tools never
        imports it (start-up time, bench/startup.py)."""
        if self._engine is None:
            from massgen_mcp.runs.engine import Engine

            self._engine = Engine(self._state, self.env, store=self._store)
            if self._cli_standbys is not None:
                self._engine.pool.standbys.size = self._cli_standbys
            for reason in self._shut_down:
                self._engine.shut_down(reason)
            self.quota.watch(self._engine, self._state)  # what each user's runs spend
        return self._engine

    @property
    def state(self) -> Path:
        return self._state

    @property
    def store(self) -> RunRecords:
        """The run records (files, or the `--store` Redis): every reader goes through it."""
        return self.engine.store

    # ------------------------------------------------------------------ choosing

    async def team_for(
        self,
        *,
        models: str | list[str] | None = None,
        team: str | None = None,
        default_team: str | None = None,
        sampling_available: bool = False,
        max_answers_per_agent: int | None = None,
        timeout_s: float | None = None,
        max_total_tokens: int | None = None,
        max_provider_calls: int | None = None,
        max_cost_usd: float | None = None,
        min_agreement: float | dict[str, float] | None = None,
        stances: list[str] | None = None,
        from_tool: bool = False,
    ) -> Team:
        """The team a call runs on: `models`, else `team`, else the server's default team,
        else one built from the keys that are set, local servers, or sampling.

        `from_tool`: `team` is a tool argument, so it is held to `team_policy`
        (config/trust.py), and the team to the operator's caps; files are read and parsed in
        a worker thread either way."""
        from massgen_mcp.config.choose import auto_team_models, resolve_team

        words = self.vocabulary
        check_limits(words, timeout_s=timeout_s, max_answers_per_agent=max_answers_per_agent,
                     min_agreement=min_agreement)
        default_team = default_team or self.default_team
        extra: list[str] = []
        if not (models or team or default_team or auto_team_models(self.env)):
            from massgen_mcp.config.local import local_models, local_team_models

            extra = local_team_models(await local_models(self.env))
        if from_tool and team and not models:
            chosen = await tool_team(team, self.team_policy, self.cwd, self.env,
                                     allow_cli_agents=self.allow_cli_agents)
        else:
            chosen = await anyio.to_thread.run_sync(lambda: resolve_team(
                models=models, team=team, default_team=default_team, env=self.env,
                sampling_available=sampling_available, extra_models=extra,
                vocabulary=words))
            if from_tool and models:
                check_cli_agents(chosen, "models", self.allow_cli_agents)
        final = chosen.with_overrides(
            max_new_answers_per_agent=max_answers_per_agent,
            orchestrator_timeout_seconds=timeout_s, max_total_tokens=max_total_tokens,
            max_provider_calls=max_provider_calls, max_cost_usd=max_cost_usd,
            min_agreement=min_agreement).with_stances(stances, words.stances)
        if from_tool:  # within the operator's caps, which a queued job carries to its worker
            caps = await self.quota.caps(self.default_team, self.env, words)
            final = caps.cap(final)
        return final

    async def tool_team(self, *, models: str | list[str] | None = None,
                        team: str | None = None, min_agreement: float | dict[str, float]
                        | None = None, stances: list[str] | None = None,
                        **limits: Any) -> ChosenTeam:
        """`team_for` a tool call (`from_tool`), with the reference a worker resolves the
        team from again when the run is handed to one (`consensus`, `plan`)."""
        from massgen_mcp.runs.quota import caps_of

        chosen = await self.team_for(models=models, team=team, min_agreement=min_agreement,
                                     stances=stances, from_tool=True, **limits)
        if any(a.provider.uses_client_model for a in chosen.agents):
            return ChosenTeam(chosen, None)
        return ChosenTeam(chosen, {"models": models, "team": team,
                                   "min_agreement": min_agreement, "stances": stances,
                                   **caps_of(chosen)})

    def admit(self, who: Principal) -> None:
        """Refuse `who` a new run past the operator's limits on runs at once or spend."""
        self.quota.admit_on(self.engine, who)

    def context_for(self, context: str | None, files: list[str] | None,
                    trusted: bool = False) -> str | None:
        """The call's context text followed by the files it names (read and size-checked;
        secret files refused unless the operator allowed them or typed the paths (`trusted`),
        contents redacted)."""
        from massgen_mcp.inputs import join_context, read_context_files
        from massgen_mcp.redaction import Redactor, configured_secrets

        text = read_context_files(files or [], self.cwd,
                                  allow_secrets=self.allow_secret_files or trusted)
        return join_context(context, Redactor(configured_secrets(env=self.env)).text(text))

    def reviewer_team_name(self, models: str | None, team: str | None) -> str | None:
        """The checkpoint reviewer team: --checkpoint-team, else bundled; a call's own
        `models`/`team` only with --allow-checkpoint-team-override (else InputError)."""
        from massgen_mcp.modes.checkpoint.run import checkpoint_team

        return checkpoint_team(self.env, self.checkpoint_team, models, team,
                               allow_override=self.allow_checkpoint_team_override)

    # ------------------------------------------------------------------ modes

    def consensus(self, team: Team | ChosenTeam, task: str, *, context: str | None = None,
                  listener: Listener | None = None,
                  backend_context: BackendContext | None = None,
                  run_id: str | None = None, owner: str = LOCAL_NAME,
                  follow_up: RunResult | None = None,
                  follow_up_of: str | None = None) -> PreparedRun:
        """A plain consensus run: free-text answers, the winner presents the final answer;
        its result is the `RunResult`. A tool call's `ChosenTeam` lets a worker run it.
        `run_id`: a worker running the run a front end prepared (its record exists).
        `follow_up`: the earlier run it continues (`previous_run`): the team is given its
        decision; `follow_up_of` only records the chain (a worker's job has it)."""
        chosen = ChosenTeam.of(team)
        if follow_up is not None:
            from massgen_mcp.modes.consensus.follow_up import with_follow_up

            context, follow_up_of = with_follow_up(context, follow_up), follow_up.run_id
        prepared = self.engine.prepare(chosen.team, task, context=context, mode="consensus",
                                       listener=listener, backend_context=backend_context,
                                       run_id=run_id, owner=owner, follow_up_of=follow_up_of)
        prepared.job = _job(chosen, {"mode": "consensus", "task": prepared.task,
                                     "context": prepared.context, "follow_up_of": follow_up_of})
        return prepared

    def plan(self, team: Team | ChosenTeam, goal: str, *, depth: str = "dynamic",
             constraints: list[str] | str | None = None, context: str | None = None,
             listener: Listener | None = None,
             backend_context: BackendContext | None = None,
             run_id: str | None = None, owner: str = LOCAL_NAME) -> PreparedRun:
        """A plan run; its `outcome` is the stored `PlanResult` (stored by whoever waits for
        the run: the front end, when a worker runs it). `team`, `run_id`: as for
        `consensus`."""
        from massgen_mcp.modes.planning.run import prepare_plan

        chosen = ChosenTeam.of(team)
        prepared = prepare_plan(self.engine, chosen.team, goal, depth=depth,
                                constraints=constraints, context=context, listener=listener,
                                backend_context=backend_context, run_id=run_id, owner=owner)
        prepared.job = _job(chosen, {"mode": "plan", "goal": goal, "depth": depth,
                                     "constraints": constraints, "context": prepared.context})
        return prepared

    def checkpoint(self, team: Team, *, objective: str, action_goals: list[Any] | None = None,
                   eval_criteria: list[str] | str | None = None,
                   workspace_dir: str | None = None, listener: Listener | None = None,
                   backend_context: BackendContext | None = None, hold_irreversible: bool = False,
                   owner: str = LOCAL_NAME) -> tuple[PreparedRun, Path]:
        """A checkpoint review run and its audit directory; its `outcome` is the
        `CheckpointResult`. `hold_irreversible`: a plan with irreversible steps is recorded
        but not activated (the caller asks a person first)."""
        from massgen_mcp.modes.checkpoint.run import prepare_checkpoint

        return prepare_checkpoint(self.engine, team, objective=objective,
                                  action_goals=action_goals, eval_criteria=eval_criteria,
                                  workspace_dir=workspace_dir,
                                  approval=self.checkpoint_approval, listener=listener,
                                  backend_context=backend_context,
                                  hold_irreversible=hold_irreversible, owner=owner)

    def checkpoint_bound(self, logs_dir: str) -> dict[str, str]:
        """The workspace and session a checkpoint folder belongs to, as they stand now."""
        from massgen_mcp.modes.checkpoint.store import bound_session

        return bound_session(Path(logs_dir))

    def checkpoint_person_answered(self, out: CheckpointResult, verdict: str,
                                   bound: dict[str, str] | None = None) -> CheckpointResult:
        """What the person said about a held plan's irreversible steps (activates on yes, in
        the workspace and session `bound` names when given)."""
        from massgen_mcp.modes.checkpoint.run import person_answered

        return person_answered(out, verdict, bound)

    # ------------------------------------------------------------------ workers

    def hand_runs_to_workers(self, queue_timeout: float = 300.0) -> None:
        """With the Redis store: the runs of tool calls go to `massgen-mcp worker` processes
        (runs/scale/dispatch.py) instead of running here; a run no worker takes within
        `queue_timeout` seconds ends `interrupted`, saying how to start one."""
        from massgen_mcp.runs.scale.dispatch import dispatch_to_workers

        dispatch_to_workers(self.engine, queue_timeout)

    def worker(self, build: Callable[[RunJob], Awaitable[PreparedRun]], *,
               concurrency: int = 4, drain_seconds: float = 15.0) -> RunWorker:
        """A worker executing queued runs on this app's engine (runs/scale/worker.py); `build`
        prepares a job's run (`massgen-mcp worker`: cli/worker.py)."""
        from massgen_mcp.runs.scale.worker import RunWorker

        return RunWorker.on_store(self.engine, build, concurrency=concurrency,
                                  drain_seconds=drain_seconds)

    def run_meta(self, run_id: str) -> dict[str, Any]:
        """What the front end recorded when it opened the run (task, team, agents, mode)."""
        return self.engine.store.meta(run_id)

    def keep_cli_standbys(self, size: int) -> None:
        """Keep up to `size` warm coding-agent CLI processes between runs (runs/standby.py):
        a long-lived server's next run then skips the CLIs' start-up."""
        self._cli_standbys = max(0, size)
        if self._engine is not None:  # else applied when the engine is made
            self._engine.pool.standbys.size = self._cli_standbys

    def shut_down(self, reason: str | None = None) -> None:
        """From now on, runs that stop are recorded `interrupted`, with `reason` (else the
        reason given before)."""
        if self._engine is None:  # no run yet: the engine, if one is made, starts stopped
            self._shut_down.append(reason)
        else:
            self._engine.shut_down(reason)

    async def wait_for_live_runs(self) -> None:
        """Until every run live in this process has closed its record."""
        if self._engine is not None:
            await self._engine.wait_for_live_runs()


def _job(chosen: ChosenTeam, call: dict[str, Any]) -> dict[str, Any] | None:
    """The job a worker can run for this call (runs/scale/queue.py), or None when it must run
    here (see `ChosenTeam.reference`)."""
    return None if chosen.reference is None else {"call": call, "team": chosen.reference}
