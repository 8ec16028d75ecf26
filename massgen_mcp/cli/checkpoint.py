"""`massgen-mcp checkpoint-init` and `massgen-mcp checkpoint`: the checkpoint tools from the
command line, with the same arguments (`--workspace-dir`, `--original-task`, ...) and the same
`App` calls as the server's `checkpoint_init` and `checkpoint` tools.

    massgen-mcp checkpoint-init --workspace-dir . --original-task "ship v2" \\
        --available-tools tools.json [--safety-policy "never touch billing"]
    massgen-mcp checkpoint "deploy v2 to production" --action-goal "deploy v2 to prod"

Exit codes as `run`: 0 approved (completed), 1 no approved plan, 2 bad usage or input,
3 timeout/budget, 4 degraded (approved by the reviewers left; some were dropped).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_checkpoint_parsers(sub: Any) -> None:
    from massgen_mcp.cli.progress import add_progress_options

    init = sub.add_parser(
        "checkpoint-init", help="store a checkpoint session (the checkpoint_init tool)",
        description="Store (or replace) the checkpoint session of a workspace: the task, the "
                    "executor's tools and extra safety rules. Then run `massgen-mcp "
                    "checkpoint OBJECTIVE`.")
    init.add_argument("--workspace-dir", required=True,
                      help="the executor's workspace (project root)")
    init.add_argument("--original-task", required=True,
                      help="the task the executor is working on")
    init.add_argument("--available-tools", required=True, metavar="JSON|FILE|-",
                      help="every tool the executor can call: a JSON list of {name, "
                           "description, input_schema}, inline, in a file, or '-' for stdin")
    init.add_argument("--trajectory-path", default=None,
                      help="a file with the executor's recent steps (its tail is shown to "
                           "the reviewers)")
    init.add_argument("--environment", default=None,
                      help="facts about the environment: a JSON object or text")
    init.add_argument("--safety-policy", action="append", default=[], metavar="RULE",
                      help="an extra rule for this project, added to the built-in policy; "
                           "repeatable")
    init.add_argument("--json", action="store_true", help="print the result as JSON")
    init.add_argument("--state-dir", default=None, help="where sessions are kept")

    ckpt = sub.add_parser(
        "checkpoint", help="ask the reviewer team for a safety plan (the checkpoint tool)",
        description="A reviewer team writes the step plan to follow before a risky phase, "
                    "checked against the built-in safety policy; the approved plan is "
                    "enforced by the PreToolUse hook. Needs `massgen-mcp checkpoint-init` "
                    "first. Exit 0 approved, 1 no approved plan, 2 bad usage or input, "
                    "3 timeout/budget, 4 degraded.")
    ckpt.add_argument("objective", help="the risky phase about to start, e.g. 'deploy v2.3 "
                                        "to production'")
    ckpt.add_argument("--action-goal", action="append", default=[], dest="action_goals",
                      metavar="GOAL", help="a risky action the plan must cover: text, or a "
                                           "JSON object {id, description}; repeatable")
    ckpt.add_argument("--eval-criteria", action="append", default=[], metavar="CRITERION",
                      help="an extra criterion for this checkpoint; repeatable")
    ckpt.add_argument("--workspace-dir", default=None,
                      help="which session (default: the most recent checkpoint-init)")
    ckpt.add_argument("--models", default=None, help="reviewer models (provider/model,...)")
    ckpt.add_argument("--team", default=None, help="reviewer team name or YAML path "
                                                   "(default: the bundled checkpoint team)")
    ckpt.add_argument("--json", action="store_true", help="print the result as JSON")
    add_progress_options(ckpt)
    ckpt.add_argument("--state-dir", default=None, help="where sessions and runs are kept")


def _app(args: argparse.Namespace) -> Any:
    from massgen_mcp.app import App
    from massgen_mcp.config.choose import CLI

    # The person at the terminal is the operator: the reviewers they name are theirs.
    return App(Path(args.state_dir) if args.state_dir else None, vocabulary=CLI,
               allow_checkpoint_team_override=True)


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _goal(text: str) -> dict[str, Any] | str:
    """An action goal: a JSON object {id, description}, else the text itself."""
    value = _json_or_text(text)
    return value if isinstance(value, dict) else text


def _tools_argument(value: str) -> Any:
    from massgen_mcp.errors import InputError

    text = value
    if value == "-":
        text = sys.stdin.read()
    elif not value.lstrip().startswith(("[", "{")):
        try:
            text = Path(value).read_text(encoding="utf-8")
        except OSError as e:
            raise InputError(f"--available-tools: cannot read {value!r} ({e.strerror}); give "
                             "a JSON list, a file holding one, or '-' for stdin") from None
    try:
        tools = json.loads(text)
    except ValueError as e:
        raise InputError(f"--available-tools: not JSON ({e}); expected a list of {{name, "
                         "description, input_schema}}") from None
    if not isinstance(tools, list):
        raise InputError("--available-tools: expected a JSON list of {name, description, "
                         "input_schema}")
    return tools


def checkpoint_init_main(args: argparse.Namespace) -> int:
    from massgen_mcp.cli.progress import EXIT_OK, EXIT_USAGE
    from massgen_mcp.errors import MassgenError
    from massgen_mcp.modes.checkpoint.run import CheckpointInitResult

    try:
        app = _app(args)
        environment = _json_or_text(args.environment) if args.environment else None
        session, replaced = app.checkpoint_init(
            args.workspace_dir, args.original_task,
            _tools_argument(args.available_tools), trajectory_path=args.trajectory_path,
            environment=environment, safety_policy=args.safety_policy)
    except MassgenError as e:
        print(f"massgen-mcp: {e}", file=sys.stderr)
        return EXIT_USAGE
    verb = "replaced the previous session" if replaced else "stored a new session"
    result = CheckpointInitResult(
        session_id=session.session_id, workspace_dir=session.workspace_dir, replaced=replaced,
        tools=session.tool_names(),
        message=f"{verb} for {session.workspace_dir} with {len(session.available_tools)} "
                "tools; run `massgen-mcp checkpoint OBJECTIVE` before the risky phase")
    print(result.model_dump_json(indent=2) if args.json else result.message)
    return EXIT_OK


def checkpoint_main(args: argparse.Namespace) -> int:
    import anyio

    from massgen_mcp.cli.progress import (
        EXIT_DEGRADED,
        EXIT_FAILED,
        EXIT_OK,
        EXIT_PARTIAL,
        EXIT_USAGE,
        Progress,
    )
    from massgen_mcp.errors import MassgenError

    progress = Progress(args.quiet, heartbeat_s=args.heartbeat)
    try:
        out: Any = anyio.run(lambda: _checkpoint_once(args, progress))
    except MassgenError as e:
        progress.close()
        print(f"massgen-mcp: {e}", file=sys.stderr)
        return EXIT_USAGE
    progress.close()
    if args.json:
        print(out.model_dump_json(indent=2))
    elif out.plan:
        from massgen_mcp.modes.checkpoint.answer_format import render_plan

        print(f"Checkpoint {out.checkpoint_id} ({out.status}): follow these steps exactly; "
              f"calls outside the approved actions are blocked.\n\n{render_plan(out.plan)}")
    else:
        print(f"massgen-mcp: no approved plan (status {out.status}): "
              f"{out.error or 'no valid plan'}", file=sys.stderr)
    if not args.quiet and not args.json:
        from massgen_mcp.runs.view import view_hint

        print(f"— kept in {out.logs_dir}\n{view_hint(out.run_id)}", file=sys.stderr)
    if out.status == "completed" and out.plan:
        return EXIT_OK
    if out.status == "degraded" and out.plan:
        return EXIT_DEGRADED
    return EXIT_PARTIAL if out.status in ("timeout", "budget_exceeded") else EXIT_FAILED


async def _checkpoint_once(args: argparse.Namespace, progress: Any) -> Any:
    """One checkpoint review, as the server's `checkpoint` tool runs it."""
    import anyio

    app = _app(args)
    app.checkpoint_session(args.workspace_dir)  # no session: say so before anything
    goals = [_goal(g) for g in args.action_goals] or None
    name = app.reviewer_team_name(args.models, args.team)
    team = await app.team_for(models=args.models, team=name)
    for note in team.notes:
        print(f"massgen-mcp: {note}", file=sys.stderr)
    prepared, _ = app.checkpoint(team, objective=args.objective, action_goals=goals,
                                 eval_criteria=args.eval_criteria or None,
                                 workspace_dir=args.workspace_dir, listener=progress.event)
    progress.live = prepared.live
    async with anyio.create_task_group() as tg:
        tg.start_soon(progress.heartbeat)
        await prepared.start()
        tg.cancel_scope.cancel()
    return prepared.outcome
