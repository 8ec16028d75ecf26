"""What runs leave behind, read through `App`: run records (each user sees their own), stored
plans and checkpoint sessions. `App` (facade.py) has these methods from `Records`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from massgen_mcp.runs.owners import LOCAL, Principal

if TYPE_CHECKING:
    from pathlib import Path

    from massgen_mcp.coordination.result import RunResult
    from massgen_mcp.modes.checkpoint.store import CheckpointSession
    from massgen_mcp.modes.planning.store import PlanSummary, StoredPlan
    from massgen_mcp.runs.engine import Engine
    from massgen_mcp.runs.live import LiveRun


class Records:
    #: Set by `App`: where files are read from, and may secret files be read.
    cwd: Path
    allow_secret_files: bool

    if TYPE_CHECKING:  # App's, made at first use (facade.py)
        @property
        def engine(self) -> Engine: ...

        @property
        def state(self) -> Path: ...

    def get_run(self, run_id: str, who: Principal = LOCAL) -> RunResult:
        """A run as it stands: live in this process, else from its record. Another user's
        run reads as unknown (runs/owners.py); the default `who` is the operator."""
        return self.engine.get(self.engine.visible(run_id, who))

    def previous_run(self, ref: str, who: Principal = LOCAL) -> RunResult:
        """The run a follow-up continues: a run id or `latest`, looked up as `get_run` looks
        a run up for `who` (one the caller cannot see is an unknown run); not one still
        running."""
        from massgen_mcp.modes.consensus.follow_up import previous_run

        return previous_run(ref, lambda run_id: self.get_run(run_id, who),
                            lambda: self.list_runs(20, who))

    def list_runs(self, limit: int = 20, who: Principal = LOCAL) -> list[RunResult]:
        """Recent runs `who` may see, newest first."""
        return self.engine.list(limit, who)

    def run_events(self, run_id: str, who: Principal = LOCAL) -> list[dict[str, Any]]:
        """A run's coordination events, in order."""
        return self.engine.store.events(self.engine.visible(run_id, who))

    def run_owner(self, run_id: str, who: Principal = LOCAL) -> str:
        """Who started the run (one `who` may not see: the error an unknown id gets)."""
        return self.engine.owner(self.engine.visible(run_id, who))

    async def cancel_run(self, run_id: str, who: Principal = LOCAL) -> tuple[bool, str]:
        """Stop a live run and wait (bounded) for its record: whether a stop was requested,
        and the run's status now."""
        return await self.engine.cancel_and_wait(self.engine.visible(run_id, who))

    def live_run(self, run_id: str, who: Principal = LOCAL) -> LiveRun | None:
        """The run if it is live in this process (the viewer streams it from here)."""
        return self.engine.live_run(self.engine.visible(run_id, who))

    # ------------------------------------------------------------------ stored results

    def get_plan(self, plan_id: str = "latest", who: Principal = LOCAL) -> StoredPlan:
        """A stored plan `who` may see, or their latest."""
        from massgen_mcp.modes.planning.store import get_plan

        return get_plan(self.state, plan_id, who)

    def list_plans(self, limit: int = 20, who: Principal = LOCAL) -> list[PlanSummary]:
        """Stored plans `who` may see, newest first."""
        from massgen_mcp.modes.planning.store import list_plans

        return list_plans(self.state, limit, who)

    def checkpoint_init(self, workspace_dir: str, original_task: str,
                        available_tools: list[Any], *, trajectory_path: str | None = None,
                        environment: dict[str, Any] | str | None = None,
                        safety_policy: list[str] | str | None = None, who: Principal = LOCAL
                        ) -> tuple[CheckpointSession, bool]:
        """Store (or replace) a workspace's checkpoint session; True when it replaced one.
        `trajectory_path` obeys the rules of `files`: inside the working directory, never a
        secret file unless the operator allowed them. Another user's session is not `who`'s
        to replace."""
        from massgen_mcp.modes.checkpoint.store import init_session

        return init_session(self.state, workspace_dir, original_task, available_tools,
                            trajectory_path=trajectory_path, environment=environment,
                            safety_policy=safety_policy, files_root=self.cwd,
                            allow_secret_files=self.allow_secret_files, who=who)

    def checkpoint_session(self, workspace_dir: str | None = None, who: Principal = LOCAL
                           ) -> CheckpointSession:
        """The session of `workspace_dir` (default: the latest) that `who` may see; an error
        naming checkpoint_init when there is none."""
        from massgen_mcp.modes.checkpoint.store import load_session

        return load_session(self.state, workspace_dir, who)
