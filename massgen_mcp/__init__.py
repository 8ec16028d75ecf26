"""massgen-mcp: ask a team of models instead of one.

    import massgen_mcp
    result = await massgen_mcp.run("Which queue should we use?",
                                   models="openai/gpt-5,anthropic/claude-sonnet-4-5")
    print(result.final_answer, result.winner, result.tally)

`run_sync` is the same for code that is not async. This module imports nothing heavy until
it is used (the PreToolUse hook imports the package and must start fast).
"""

from __future__ import annotations

__version__ = "0.1.0"

# Not `from typing import ...`: the PreToolUse hook imports this package on every tool call.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from massgen_mcp.config.team import Team
    from massgen_mcp.coordination.result import RunResult

__all__ = ["RunResult", "__version__", "load_team", "run", "run_sync"]


async def run(
    task: str,
    *,
    models: str | list[str] | None = None,
    team: str | None = None,
    context: str | None = None,
    files: list[str] | None = None,
    max_answers_per_agent: int | None = None,
    timeout_s: float | None = None,
    max_total_tokens: int | None = None,
    state_dir: str | None = None,
) -> RunResult:
    """Run a consensus on `task` and return the `RunResult`.

    The team is `models` (`"openai/gpt-5,anthropic/claude-sonnet-4-5"`), else `team` (a
    bundled team name or a team YAML path), else one built from the provider keys that are
    set. The run is recorded under `.massgen/runs/<run_id>/` (or `state_dir`).
    """
    from pathlib import Path

    from massgen_mcp.app import App
    from massgen_mcp.config.choose import PYTHON

    app = App(Path(state_dir) if state_dir else None, vocabulary=PYTHON)
    chosen = await app.team_for(models=models, team=team,
                                max_answers_per_agent=max_answers_per_agent,
                                timeout_s=timeout_s, max_total_tokens=max_total_tokens)
    if chosen.notes:
        import logging

        for note in chosen.notes:
            logging.getLogger("massgen_mcp").warning("%s", note)
    context = app.context_for(context, files, trusted=True)  # the caller is the operator
    return await app.consensus(chosen, task, context=context).start()


def run_sync(task: str, **kwargs: Any) -> RunResult:
    """`run()` for synchronous code."""
    import anyio

    return anyio.run(lambda: run(task, **kwargs))


def load_team(name_or_path: str) -> Team:
    """Load and validate a team (bundled name or YAML path) without running it."""
    from massgen_mcp.config.load import load_team as _load

    return _load(name_or_path)


def __getattr__(name: str) -> Any:
    if name == "RunResult":
        from massgen_mcp.coordination.result import RunResult

        return RunResult
    raise AttributeError(name)
