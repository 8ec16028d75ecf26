"""Prepare a plain consensus run: the orchestrator's own free-text answer format, and the
`RunResult` as the mode's result."""

from __future__ import annotations

from typing import Any

from massgen_mcp.config.team import Team
from massgen_mcp.runs.engine import Engine, PreparedRun


def prepare_consensus(engine: Engine, team: Team, task: str, *, context: str | None = None,
                      **prepare_kwargs: Any) -> PreparedRun:
    """A consensus run on `task`, ready to `start()`; its result is the `RunResult`."""
    return engine.prepare_run(team, task, context=context, mode="consensus", **prepare_kwargs)
