"""`massgen-mcp run` and `plan`: one run from the command line, to its end.

Progress goes to stderr, the answer to stdout. Ctrl-C stops the run the way a time limit
does: the team's best answer so far is printed with the run id and where to watch it, and
the exit code is 130 (a second Ctrl-C stops at once). A team of demo agents is labelled a
demo before it starts. With no team to run, the error says what can run now (whatcanrun.py).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from massgen_mcp.cli.progress import (
    EXIT_DEGRADED,
    EXIT_FAILED,
    EXIT_NO_CONSENSUS,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_USAGE,
    Progress,
)

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a Ctrl-C


class _Interrupted:
    """Set when the user pressed Ctrl-C during the run."""

    def __init__(self) -> None:
        self.pressed = False


def run_command(args: argparse.Namespace, command: str) -> int:
    import anyio

    from massgen_mcp.errors import MassgenError
    from massgen_mcp.runs.outcome import settle_wording

    progress = Progress(args.quiet, heartbeat_s=args.heartbeat)
    interrupted = _Interrupted()
    try:
        result: Any = anyio.run(lambda: _run_once(args, command, progress, interrupted))
    except MassgenError as e:
        progress.close()
        print(f"massgen-mcp: {e}", file=sys.stderr)
        return EXIT_USAGE
    progress.close()
    status = result.status
    if command == "run":
        settle_wording(result)
    consensus = result if command == "run" else result.consensus
    if args.json:
        print(result.model_dump_json(indent=2))
    elif command == "plan":
        print(result.markdown or f"No plan ({status}): {result.consensus.error or ''}")
        if result.plan_id and not args.quiet:
            print(f"— stored as {result.plan_id} in {result.path}", file=sys.stderr)
    elif result.final_answer:
        print(result.final_answer)
        if not args.quiet:
            print(after_answer(result), file=sys.stderr)
    elif status == "no_consensus":  # nothing on stdout: the team gave no one answer
        print(f"massgen-mcp: {result.summary_text()}", file=sys.stderr)
    else:  # nothing on stdout: there is no answer to print
        print(f"massgen-mcp: no answer (status {status}; run {result.run_id})"
              + (f": {result.error}" if result.error else ""), file=sys.stderr)
    if not args.quiet and not args.json:
        from massgen_mcp.runs.view import view_hint

        if interrupted.pressed:
            print(f"— Stopped by Ctrl-C; the run is kept as {consensus.run_id}",
                  file=sys.stderr)
        print(view_hint(consensus.run_id), file=sys.stderr)
    if interrupted.pressed:
        return EXIT_INTERRUPTED
    if status == "completed":
        return EXIT_OK
    if status == "degraded":
        return EXIT_DEGRADED
    if status == "no_consensus":
        return EXIT_NO_CONSENSUS
    return EXIT_PARTIAL if status in ("timeout", "budget_exceeded") else EXIT_FAILED


def after_answer(result: Any) -> str:
    """What stderr says after the answer on stdout: the summary's lines below the answer
    (who won, with how many votes, the dissent), without repeating the answer."""
    summary: str = result.summary_text()
    lines = summary.split("\n")
    first = next((i for i, line in enumerate(lines) if line.startswith("— ")), len(lines))
    best = (["— The answer above is the best answer so far: the team did not agree on it."]
            if result.best_so_far else [])
    return "\n".join(best + lines[first:])


async def _run_once(args: argparse.Namespace, command: str, progress: Progress,
                    interrupted: _Interrupted) -> Any:
    from pathlib import Path

    import anyio

    from massgen_mcp.app import App
    from massgen_mcp.config.choose import CLI
    from massgen_mcp.errors import ConfigError

    app = App(Path(args.state_dir) if args.state_dir else None, vocabulary=CLI)
    _refuse_sampling(args.models)
    try:
        team = await app.team_for(models=args.models, team=args.team,
                                  max_answers_per_agent=args.max_answers,
                                  timeout_s=args.timeout_s,
                                  max_total_tokens=args.max_total_tokens,
                                  min_agreement=args.min_agreement, stances=args.stances)
    except ConfigError as e:
        if args.models or args.team or not str(e).startswith("no models are configured"):
            raise
        from massgen_mcp.cli.whatcanrun import what_can_run

        task = args.task if command == "run" else args.goal
        raise ConfigError(await what_can_run(app.env, task, command)) from None
    if args.max_tokens is not None:
        team = team.with_overrides(max_output_tokens=args.max_tokens)
    for note in team.notes:
        progress.note(note)
    if team.agents and all(a.provider.name == "demo" for a in team.agents):
        from massgen_mcp.backends.demo import LABEL

        progress.note(f"{LABEL}: scripted agents show how a run goes (answers, votes, the "
                      "final answer); the answer is not real")
    context = app.context_for(args.context, args.files, trusted=True)  # the user typed them
    if command == "plan":
        prepared = app.plan(team, args.goal, depth=args.depth, constraints=args.constraints,
                            context=context, listener=progress.event)
    else:
        previous = app.previous_run(args.follow_up) if args.follow_up else None
        prepared = app.consensus(team, args.task, context=context, listener=progress.event,
                                 follow_up=previous)
    progress.live = prepared.live
    async with anyio.create_task_group() as tg:
        tg.start_soon(progress.heartbeat)
        tg.start_soon(_stop_on_ctrl_c, prepared, progress, interrupted)
        result = await prepared.start()
        tg.cancel_scope.cancel()
    return prepared.outcome if command == "plan" else result


async def _stop_on_ctrl_c(prepared: Any, progress: Progress, interrupted: _Interrupted) -> None:
    """The first Ctrl-C stops the run as a time limit does (the record keeps the best
    answer so far, which is then printed); a second one quits at once, exit 130. Not by
    Python's KeyboardInterrupt: raised wherever the interpreter happens to be (inside a
    provider call, in a task group, during the loop's shutdown), it ended in a traceback or
    exit 1 depending on timing. The run's record stays as it was; the store reads a run
    whose process is gone as interrupted."""
    import os
    import signal
    import sys

    import anyio

    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        async for _ in signals:
            if interrupted.pressed:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(EXIT_INTERRUPTED)
            interrupted.pressed = True
            progress.note("Ctrl-C: stopping the run and keeping what the agents have so far "
                          "(Ctrl-C again to quit at once)")
            prepared.cancel()


def _refuse_sampling(models: str | None) -> None:
    """`--models sampling` asks an MCP client's own model, which a command line has none of."""
    from massgen_mcp.errors import ConfigError

    names = [m.strip().split("/")[0] for m in (models or "").split(",")]
    if "sampling" in names:
        raise ConfigError(
            "--models sampling uses the model of the MCP client that calls massgen-mcp "
            "(Claude Code, VS Code, ...); the command line has no client model to ask. Use "
            "it from a client's tool call, or pick a team here: --team demo (no key), "
            "--team clis (your logged-in coding-agent CLIs) or --models provider/model,...")
