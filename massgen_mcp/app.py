"""The application facade: what the MCP server, the CLI and the Python API all call.

`App` turns caller-level arguments (task, files, models/team, limits) into a `PreparedRun`
of one mode (consensus, plan, checkpoint) on the `Engine`: it picks the team, reads the
files and applies the limits. It raises `MassgenError`s worded for users and knows nothing
about MCP, argparse or printing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from massgen_mcp.config.choose import MCP, Vocabulary, auto_team_models, resolve_team
from massgen_mcp.config.env import Environment
from massgen_mcp.config.team import Team
from massgen_mcp.errors import InputError
from massgen_mcp.inputs import join_context, read_context_files
from massgen_mcp.paths import state_dir
from massgen_mcp.runs.engine import Engine, Listener, PreparedRun


class App:
    def __init__(
        self,
        state: Path | None = None,
        *,
        default_team: str | None = None,
        checkpoint_team: str | None = None,
        env: Environment | None = None,
        cwd: Path | None = None,
        vocabulary: Vocabulary = MCP,
    ) -> None:
        #: How this caller names its arguments in messages (CLI flags, tool arguments, ...).
        self.vocabulary = vocabulary
        self.cwd = (cwd or Path.cwd()).resolve()
        self.env = env or Environment(dotenv_dir=self.cwd)
        self.engine = Engine(state or state_dir(cwd=self.cwd), self.env)
        self.default_team = default_team
        self.checkpoint_team = checkpoint_team

    @property
    def state(self) -> Path:
        return self.engine.state

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
    ) -> Team:
        """The team a call runs on: `models`, else `team`, else the server's default team,
        else one built from the keys that are set, local servers, or sampling."""
        words = self.vocabulary
        if timeout_s is not None and timeout_s <= 0:
            raise InputError(f"{words.timeout} must be a positive number of seconds")
        if max_answers_per_agent is not None and max_answers_per_agent < 1:
            raise InputError(f"{words.max_answers} must be at least 1")
        default_team = default_team or self.default_team
        extra: list[str] = []
        if not (models or team or default_team or auto_team_models(self.env)):
            from massgen_mcp.config.local import local_models, local_team_models

            extra = local_team_models(await local_models(self.env))
        chosen = resolve_team(models=models, team=team, default_team=default_team,
                              env=self.env, sampling_available=sampling_available,
                              extra_models=extra, vocabulary=words)
        return chosen.with_overrides(
            max_new_answers_per_agent=max_answers_per_agent,
            orchestrator_timeout_seconds=timeout_s, max_total_tokens=max_total_tokens)

    def context_for(self, context: str | None, files: list[str] | None) -> str | None:
        """The call's context text followed by the files it names (read and size-checked)."""
        return join_context(context, read_context_files(files or [], self.cwd))

    def reviewer_team_name(self, models: str | None, team: str | None) -> str | None:
        """The checkpoint reviewer team: the call's, else --checkpoint-team, else bundled."""
        from massgen_mcp.modes.checkpoint.run import checkpoint_team

        return checkpoint_team(self.env, self.checkpoint_team, models, team)

    # ------------------------------------------------------------------ modes

    def consensus(self, team: Team, task: str, *, context: str | None = None,
                  listener: Listener | None = None,
                  backend_context: dict[str, Any] | None = None) -> PreparedRun:
        """A plain consensus run: free-text answers, the winner presents the final answer."""
        return self.engine.prepare_run(team, task, context=context, listener=listener,
                                       backend_context=backend_context)

    def plan(self, team: Team, goal: str, *, depth: str = "dynamic",
             constraints: list[str] | str | None = None, context: str | None = None,
             listener: Listener | None = None,
             backend_context: dict[str, Any] | None = None) -> PreparedRun:
        """A plan run; its `outcome` is the stored `PlanResult`."""
        from massgen_mcp.modes.planning.run import prepare_plan

        return prepare_plan(self.engine, team, goal, depth=depth, constraints=constraints,
                            context=context, listener=listener,
                            backend_context=backend_context)

    def checkpoint(self, team: Team, *, objective: str, action_goals: list[Any] | None = None,
                   eval_criteria: list[str] | str | None = None,
                   workspace_dir: str | None = None, listener: Listener | None = None,
                   backend_context: dict[str, Any] | None = None
                   ) -> tuple[PreparedRun, Path]:
        """A checkpoint review run and its audit directory; its `outcome` is the
        `CheckpointResult`."""
        from massgen_mcp.modes.checkpoint.run import prepare_checkpoint

        return prepare_checkpoint(self.engine, team, objective=objective,
                                  action_goals=action_goals, eval_criteria=eval_criteria,
                                  workspace_dir=workspace_dir, listener=listener,
                                  backend_context=backend_context)
