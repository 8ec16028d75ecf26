"""The application layer shared by the MCP server, the CLI and the Python API.

It turns user-level arguments (task, files, models/team, limits) into a prepared run on the
`Engine`: pick the team, read the files, apply the limits. Everything here raises
`MassgenError`s with messages meant for users; nothing here knows about MCP.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import Environment, Team
from .coordination.answers import AnswerFormat
from .coordination.result import RunResult
from .engine import Engine, Listener, LiveRun
from .errors import InputError, MassgenError
from .inputs import join_context, read_context_files
from .paths import state_dir
from .teams import auto_team_models, resolve_team


@dataclass
class PreparedRun:
    """A run whose team, task and context are settled; `start()` runs it to the end."""

    service: Service
    live: LiveRun
    team: Team
    task: str
    context: str | None
    answer_format: AnswerFormat | None = None
    backend_context: dict[str, Any] | None = None
    #: Runs on the finished result (e.g. stores the winning plan); its value is `outcome`.
    after: Callable[[RunResult], Any] | None = None

    @property
    def run_id(self) -> str:
        return self.live.run_id

    @property
    def outcome(self) -> Any:
        if self.live.outcome_error:
            raise MassgenError(self.live.outcome_error)
        return self.live.outcome

    async def start(self) -> RunResult:
        return await self.service.engine.execute(
            self.live, self.team, self.task, context=self.context,
            answer_format=self.answer_format, backend_context=self.backend_context,
            after=self.after)


class Service:
    def __init__(
        self,
        state: Path | None = None,
        *,
        default_team: str | None = None,
        checkpoint_team: str | None = None,
        env: Environment | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.cwd = (cwd or Path.cwd()).resolve()
        self.env = env or Environment(dotenv_dir=self.cwd)
        self.engine = Engine(state or state_dir(cwd=self.cwd), self.env)
        self.default_team = default_team
        self.checkpoint_team = checkpoint_team

    @property
    def state(self) -> Path:
        return self.engine.state

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
    ) -> Team:
        default_team = default_team or self.default_team
        extra: list[str] = []
        if not (models or team or default_team or auto_team_models(self.env)):
            from .doctor import local_models, local_team_models

            extra = local_team_models(await local_models(self.env))
        chosen = resolve_team(models=models, team=team, default_team=default_team,
                              env=self.env, sampling_available=sampling_available,
                              extra_models=extra)
        if timeout_s is not None and timeout_s <= 0:
            raise InputError("timeout_s must be a positive number of seconds")
        if max_answers_per_agent is not None and max_answers_per_agent < 1:
            raise InputError("max_answers_per_agent must be at least 1")
        return chosen.with_overrides(
            max_new_answers_per_agent=max_answers_per_agent,
            orchestrator_timeout_seconds=timeout_s, max_total_tokens=max_total_tokens)

    def context_for(self, context: str | None, files: list[str] | None) -> str | None:
        return join_context(context, read_context_files(files or [], self.cwd))

    def prepare(
        self,
        team: Team,
        task: str,
        *,
        context: str | None = None,
        mode: str = "consensus",
        answer_format: AnswerFormat | None = None,
        backend_context: dict[str, Any] | None = None,
        listener: Listener | None = None,
    ) -> PreparedRun:
        if not isinstance(task, str) or not task.strip():
            raise InputError("the task is empty: say what the team should answer or decide")
        live = self.engine.prepare(team, task, mode=mode)
        if listener is not None:
            live.listeners.append(listener)
        return PreparedRun(self, live, team, task, context, answer_format, backend_context)


# ---------------------------------------------------------------------------- CLI helpers


def _service_from_args(args: argparse.Namespace) -> Service:
    return Service(Path(args.state_dir) if getattr(args, "state_dir", None) else None)


async def consensus_once(args: argparse.Namespace, listener: Callable[[dict[str, Any]], None]
                         ) -> RunResult:
    service = _service_from_args(args)
    team = await service.team_for(models=args.models, team=args.team,
                            max_answers_per_agent=args.max_answers, timeout_s=args.timeout_s,
                            max_total_tokens=args.max_total_tokens)
    prepared = service.prepare(team, args.task, context=service.context_for(args.context,
                                                                            args.files),
                               listener=listener)
    return await prepared.start()
