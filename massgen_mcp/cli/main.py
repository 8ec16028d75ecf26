"""The `massgen-mcp` command.

    massgen-mcp [serve] [--transport stdio|sse|streamable-http] ...   the MCP server (default)
    massgen-mcp run "task" --models ... | --team ...                   one consensus run
    massgen-mcp plan "goal" [--depth ...]                              a team-agreed task plan
    massgen-mcp checkpoint-init ... / checkpoint "objective"           a reviewed safety plan
    massgen-mcp hook pre-tool-use                                      Claude Code PreToolUse hook
    massgen-mcp setup [--client ...] [--hooks] [--instructions ...]    register with clients
    massgen-mcp doctor                                                 what can run here
    massgen-mcp view [RUN_ID|latest]  /  report RUN_ID -o run.html     watch or share a run
    massgen-mcp export RUN_ID [--store URL] [--to DIR]                 a run's record as files
    massgen-mcp eval SUITE [--team ... | --models ...]                 team vs. one model
    massgen-mcp worker --store redis://...                             execute queued runs

Every subcommand imports only what it needs: the hook must start in a few dozen ms and
the server must not load provider SDKs before a run needs them.
"""

from __future__ import annotations

import sys

from massgen_mcp import __version__
from massgen_mcp.cli.progress import (
    EXIT_DEGRADED,
    EXIT_FAILED,
    EXIT_NO_CONSENSUS,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_USAGE,
    positive_seconds,
)

# Kept out of the hook's hot path (`massgen-mcp hook pre-tool-use` returns before argparse).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from massgen_mcp.cli.progress import Progress



def _serve_options(p: argparse.ArgumentParser, suppress: bool = False) -> None:
    import argparse

    # The `serve` subcommand repeats these options; its copies must not reset values given
    # before it (`massgen-mcp --team x serve`), hence SUPPRESS there.
    def default(value: Any) -> Any:
        return argparse.SUPPRESS if suppress else value

    p.add_argument("--transport", choices=["stdio", "sse", "streamable-http"],
                   default=default("stdio"), help="how MCP clients connect (default: stdio)")
    p.add_argument("--host", default=default("127.0.0.1"),
                   help="address to bind for sse/streamable-http (default 127.0.0.1; any other "
                        "address requires --token)")
    p.add_argument("--port", type=int, default=default(8765),
                   help="port for sse/streamable-http (default 8765)")
    p.add_argument("--token", default=default(None),
                   help="bearer token HTTP clients must send (default: $MASSGEN_MCP_TOKEN)")
    p.add_argument("--allowed-host", action="append", default=default([]), metavar="NAME",
                   help="an extra Host name clients use to reach a non-loopback server; "
                        "repeatable (this machine's names are allowed already)")
    p.add_argument("--stateless-http", action="store_true", default=default(False),
                   help="streamable-http: keep no MCP session in this process, so any replica "
                        "behind a load balancer serves any request of a 2025-11-25 client "
                        "(2026-07-28 clients are sessionless anyway); such clients then get no "
                        "mid-call sampling. For replicas sharing a --store")
    p.add_argument("--request-timeout", type=float, default=default(15.0), metavar="SECONDS",
                   help="HTTP: close a connection whose request has not fully arrived in this "
                        "time (default 15)")
    p.add_argument("--team", default=default(None),
                   help="default team for every tool call: a bundled name or a team YAML path "
                        "(a call's own team/models wins)")
    p.add_argument("--checkpoint-team", default=default(None),
                   help="reviewer team for the checkpoint tool (bundled name or YAML path; "
                        "default: the bundled checkpoint team)")
    p.add_argument("--allow-checkpoint-team-override", action="store_true",
                   default=default(False),
                   help="let `checkpoint` calls choose their own reviewers (models/team); off "
                        "by default: the agent being reviewed never picks its reviewers")
    p.add_argument("--checkpoint-approval", choices=["majority", "unanimous"],
                   default=default(None),
                   help="how many live reviewers must vote for a checkpoint plan before it is "
                        "approved (default majority; a team file's orchestrator.approval may "
                        "ask for unanimous; the stricter wins)")
    p.add_argument("--team-dir", action="append", default=default([]), metavar="DIR",
                   help="a directory of team YAML files tool calls may name (by name or path); "
                        "repeatable; ~/.config/massgen-mcp/teams is always one")
    p.add_argument("--allow-team-path", nargs="?", const="restricted", default=default(None),
                   choices=["restricted", "full"],
                   help="let tool calls name a team file anywhere; 'restricted' (the default "
                        "when given) refuses mcp_servers, base_url, api_key and headers in it, "
                        "'full' trusts it like --team")
    p.add_argument("--allow-secret-files", action="store_true", default=default(False),
                   help="let tool calls pass secret files (.env, keys, credentials) in `files`")
    p.add_argument("--allow-cli-agents", action="store_true", default=default(False),
                   help="let tool calls put coding-agent CLIs (claude_code, codex, gemini_cli) "
                        "on a team through `models` or a --allow-team-path file; bundled, "
                        "--team and --team-dir teams may always use them")
    p.add_argument("--cli-standbys", type=int, default=default(6), metavar="N",
                   help="warm coding-agent CLI processes kept between runs, one per team "
                        "member, so a member's next run skips the CLI's start-up (default 6; "
                        "0: none)")
    p.add_argument("--state-dir", default=default(None),
                   help="where runs, plans and checkpoints are kept (default: $MASSGEN_MCP_HOME "
                        "or ./.massgen)")
    from massgen_mcp.paths import store_from_env

    p.add_argument("--store", default=default(store_from_env()), metavar="URL",
                   help="keep run records, events, cancellation, tasks and usage counters in "
                        "Redis (redis://HOST:PORT/DB, rediss://..., redis://:PASSWORD@HOST/DB, "
                        "unix:///path/redis.sock?db=N) so several processes share them "
                        "(default: $MASSGEN_MCP_STORE, else files in the state directory)")
    p.add_argument("--run-here", action="store_true", default=default(False),
                   help="with --store redis://: execute runs in this process instead of "
                        "handing them to `massgen-mcp worker` processes (the records are "
                        "shared either way)")
    p.add_argument("--queue-timeout", type=positive_seconds, default=default(300.0),
                   metavar="SECONDS",
                   help="with --store redis://: a run no worker has taken after this long "
                        "ends interrupted, saying to start `massgen-mcp worker` (default 300)")
    p.add_argument("--log-level", default=default("WARNING"),
                   help="stderr log level (default WARNING)")
    from massgen_mcp.cli.users import add_user_options

    add_user_options(p, default)


def _team_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models", default=None,
                   help="comma-separated provider/model list, e.g. "
                        "openai/gpt-5,anthropic/claude-sonnet-4-5,gemini/gemini-2.5-pro")
    p.add_argument("--team", default=None, help="bundled team name or team YAML path")
    p.add_argument("--context", default=None, help="extra context text for the agents")
    p.add_argument("--file", action="append", default=[], dest="files", metavar="PATH",
                   help="a text file (relative to the working directory) given to the agents "
                        "as context; repeatable")
    p.add_argument("--timeout", type=float, default=None, dest="timeout_s",
                   help="whole-run time limit in seconds (best answer so far on timeout)")
    p.add_argument("--max-answers", type=int, default=None,
                   help="answers per agent before it may only vote")
    p.add_argument("--max-total-tokens", type=int, default=None,
                   help="token budget for the whole run")
    p.add_argument("--min-agreement", type=float, default=None, dest="min_agreement",
                   help="share of the votes the winner needs, e.g. 0.67; below it the run "
                        "ends no_consensus (exit 5) and lists the candidates. Set, it "
                        "replaces the default rule (two votes in a team of three or more)")
    p.add_argument("--stance", action="append", default=None, dest="stances",
                   metavar="STANCE", help="for, against, neutral or an instruction, one per "
                   "agent in team order (or agent_id=stance); repeatable")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--heartbeat", type=positive_seconds, default=10.0, metavar="SECONDS",
                   help="after this long without news, say who is still working (default 10)")
    p.add_argument("--state-dir", default=None, help="where the run record is written")


def build_parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="massgen-mcp",
        description="Ask a team of models instead of one: an MCP server (default) and CLI for "
                    "multi-agent consensus, plans and checkpoints.")
    parser.add_argument("--version", action="version", version=f"massgen-mcp {__version__}")
    _serve_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the MCP server (the default command)",
                           description="Run the MCP server.")
    _serve_options(serve, suppress=True)

    run = sub.add_parser("run", help="run one consensus and print the answer",
                         description="Run one consensus: progress on stderr, the final answer "
                                     "on stdout. Exit 0 completed, 1 failed, 2 bad usage or "
                                     "config, 3 timeout/budget (best answer so far printed), "
                                     "4 degraded (the agents left agreed; some were dropped, "
                                     "see stderr), 5 no consensus (a split: by default the "
                                     "winner of a team of three or more needs two votes; or "
                                     "its share was below --min-agreement; the candidates "
                                     "are on stderr).")
    run.add_argument("task", help="the task or question for the team")
    run.add_argument("--follow-up", default=None, dest="follow_up", metavar="RUN_ID|latest",
                     help="follow up a finished run: the team is given its task, final answer "
                          "and dissent, and the runs are linked")
    _team_options(run)

    plan = sub.add_parser("plan", help="ask the team for a validated task plan",
                          description="Ask the team for a structured, validated task plan; it is "
                                      "stored under .massgen/plans/.")
    plan.add_argument("goal", help="what the plan should achieve")
    from massgen_mcp.modes.planning.depth import DEPTHS

    plan.add_argument("--depth", choices=DEPTHS,
                      default="dynamic", help="plan size: shallow 5-10 tasks, medium 20-50, "
                                             "deep 100-200, dynamic fits the scope")
    plan.add_argument("--constraint", action="append", default=[], dest="constraints",
                      help="a constraint the plan must respect; repeatable")
    _team_options(plan)

    hook = sub.add_parser("hook", help="Claude Code hooks (PreToolUse)",
                          description="Claude Code hook commands. `pre-tool-use` reads the hook "
                                      "JSON on stdin and answers allow/deny/ask on stdout.")
    hook.add_argument("event", choices=["pre-tool-use"], help="the hook event")
    hook.add_argument("rest", nargs=argparse.REMAINDER, help="hook options (see its --help)")

    setup = sub.add_parser("setup", help="register massgen-mcp with Claude Code, Codex, Cursor, "
                                         "Gemini CLI, VS Code",
                           description="Write (idempotently) the MCP registration for the "
                                       "chosen clients in this project, optionally the "
                                       "PreToolUse hook and an instructions block. The command "
                                       "written starts this installation whatever the "
                                       "client's PATH (its absolute path when needed).")
    setup.add_argument("--client", action="append",
                       choices=["claude", "codex", "cursor", "gemini", "vscode"],
                       default=None, help="client to register with; repeatable (default: claude)")
    setup.add_argument("--hooks", action="store_true",
                       help="add the PreToolUse checkpoint hook to .claude/settings.json")
    setup.add_argument("--sandbox", action=argparse.BooleanOptionalAction, default=None,
                       help="Claude Code's own OS sandbox for Bash (bubblewrap + socat on "
                            "Linux, Seatbelt on macOS): writes only in the project and a "
                            "private temp dir, the guard's key and your credential stores "
                            "unreadable. On by default with --hooks (the hook alone is "
                            "advisory); --no-sandbox leaves Bash unconfined")
    setup.add_argument("--allow-domain", action="append", default=[], dest="allow_domains",
                       metavar="DOMAIN", help="with --sandbox: a domain sandboxed commands "
                                              "may reach without asking; repeatable")
    setup.add_argument("--instructions", choices=["CLAUDE.md", "AGENTS.md"], default=None,
                       help="add a managed instructions block to this file")
    setup.add_argument("--command", default=None, dest="launch",
                       help="the command clients run to start the server, e.g. 'uvx --from "
                            "git+https://github.com/massgen-mcp/massgen-mcp massgen-mcp' "
                            "(default: this installation's massgen-mcp)")
    setup.add_argument("--dir", default=".", help="project directory (default: .)")

    doctor = sub.add_parser("doctor", help="show which providers and clients are ready",
                            description="Show which provider keys are set (masked), which local "
                                        "model servers answer, and whether this project has "
                                        "massgen-mcp registered, starts, and is approved by "
                                        "each client. Exit 1 when a registration does not "
                                        "start; a missing key or approval is a warning.")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.add_argument("--no-clients", action="store_true",
                        help="do not ask the clients' own CLIs (claude/codex/gemini mcp list)")
    doctor.add_argument("--dir", default=".", help="project directory (default: .)")
    from massgen_mcp.cli.eval import add_eval_parser
    from massgen_mcp.cli.view import add_view_parsers

    add_view_parsers(sub)
    from massgen_mcp.cli.export import add_export_parser

    add_export_parser(sub)
    add_eval_parser(sub)
    from massgen_mcp.cli.checkpoint import add_checkpoint_parsers

    add_checkpoint_parsers(sub)
    from massgen_mcp.cli.worker import add_worker_parser

    add_worker_parser(sub)
    from massgen_mcp.cli.users import add_token_parser

    add_token_parser(sub)
    return parser


class _NotServeOptions(Exception):
    pass


def serve_args(argv: list[str]) -> argparse.Namespace | None:
    """`argv` parsed as `build_parser()` parses it when it is only server options, as MCP
    clients start the server, without building every subcommand's parser (start-up time);
    None for anything else (a subcommand, help, a bad value), which the full parser
    handles and words."""
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:
            raise _NotServeOptions(message)

    parser = Parser(prog="massgen-mcp", add_help=False)
    _serve_options(parser)
    try:
        args, rest = parser.parse_known_args(argv)
    except _NotServeOptions:
        return None
    if rest:
        return None
    args.command = None
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["hook", "pre-tool-use"]:  # the hot path: no argparse tree, no imports
        from massgen_mcp.hook.main import main as hook_main

        return hook_main(argv[2:])
    args = serve_args(argv)
    if args is None:
        args = build_parser().parse_args(argv)
    command = args.command or "serve"
    try:
        if command == "serve":
            from massgen_mcp.server.transports import serve

            return serve(args)
        if command in ("run", "plan"):
            return _run_command(args, command)
        if command == "setup":
            return _setup_command(args)
        if command == "doctor":
            from massgen_mcp.cli.doctor import doctor_main

            return doctor_main(args)
        if command in ("checkpoint", "checkpoint-init"):
            from massgen_mcp.cli.checkpoint import checkpoint_init_main, checkpoint_main

            return (checkpoint_main if command == "checkpoint" else checkpoint_init_main)(args)
        if command in ("view", "report"):
            from massgen_mcp.cli.view import report_main, view_main

            return view_main(args) if command == "view" else report_main(args)
        if command == "export":
            from massgen_mcp.cli.export import export_main

            return export_main(args)
        if command == "hook":
            from massgen_mcp.hook.main import main as hook_main

            return hook_main(args.rest)
        if command == "eval":
            from massgen_mcp.cli.eval import eval_main

            return eval_main(args)
        if command == "worker":
            from massgen_mcp.cli.worker import worker_main

            return worker_main(args)
        if command == "token":
            from massgen_mcp.cli.users import token_main

            return token_main(args)
    except KeyboardInterrupt:
        return 130
    return EXIT_USAGE


def _run_command(args: argparse.Namespace, command: str) -> int:
    import anyio

    from massgen_mcp.cli.progress import Progress
    from massgen_mcp.errors import MassgenError
    from massgen_mcp.runs.outcome import settle_wording

    progress = Progress(args.quiet, heartbeat_s=args.heartbeat)
    try:
        result: Any = anyio.run(lambda: _run_once(args, command, progress))
    except MassgenError as e:
        print(f"massgen-mcp: {e}", file=sys.stderr)
        return EXIT_USAGE
    status = result.status
    if command == "run":
        settle_wording(result)
    if args.json:
        print(result.model_dump_json(indent=2))
    elif command == "plan":
        print(result.markdown or f"No plan ({status}): {result.consensus.error or ''}")
        if result.plan_id and not args.quiet:
            print(f"— stored as {result.plan_id} in {result.path}", file=sys.stderr)
    elif result.final_answer:
        print(result.final_answer)
        if not args.quiet:
            print(result.summary_text().split("\n", 2)[-1], file=sys.stderr)
    elif status == "no_consensus":  # nothing on stdout: the team gave no one answer
        print(f"massgen-mcp: {result.summary_text()}", file=sys.stderr)
    else:  # nothing on stdout: there is no answer to print
        print(f"massgen-mcp: no answer (status {status}; run {result.run_id})"
              + (f": {result.error}" if result.error else ""), file=sys.stderr)
    if not args.quiet and not args.json:
        from massgen_mcp.runs.view import view_hint

        print(view_hint(result.run_id if command == "run" else result.consensus.run_id),
              file=sys.stderr)
    if status == "completed":
        return EXIT_OK
    if status == "degraded":
        return EXIT_DEGRADED
    if status == "no_consensus":
        return EXIT_NO_CONSENSUS
    return EXIT_PARTIAL if status in ("timeout", "budget_exceeded") else EXIT_FAILED


async def _run_once(args: argparse.Namespace, command: str, progress: Progress) -> Any:
    """One `run` or `plan` from the command line, to its end."""
    from pathlib import Path

    import anyio

    from massgen_mcp.app import App
    from massgen_mcp.config.choose import CLI

    app = App(Path(args.state_dir) if args.state_dir else None, vocabulary=CLI)
    team = await app.team_for(models=args.models, team=args.team,
                              max_answers_per_agent=args.max_answers, timeout_s=args.timeout_s,
                              max_total_tokens=args.max_total_tokens,
                              min_agreement=args.min_agreement, stances=args.stances)
    for note in team.notes:
        print(f"massgen-mcp: {note}", file=sys.stderr)
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
        result = await prepared.start()
        tg.cancel_scope.cancel()
    return prepared.outcome if command == "plan" else result


def _setup_command(args: argparse.Namespace) -> int:
    import shlex
    from pathlib import Path

    from massgen_mcp.cli.setup import TRUST_STEPS, run_setup
    from massgen_mcp.errors import MassgenError

    clients = args.client or ["claude"]
    try:
        command = shlex.split(args.launch) if args.launch else None
        changes = run_setup(Path(args.dir), clients=clients, hooks=args.hooks,
                            instructions=args.instructions, command=command,
                            sandbox=args.sandbox, allow_domains=args.allow_domains)
    except (MassgenError, ValueError, OSError) as e:
        print(f"massgen-mcp setup: {e}", file=sys.stderr)
        return EXIT_FAILED
    for change in changes or ["nothing to change: already set up"]:
        print(change)
    print("Before the first use:", file=sys.stderr)
    for client in dict.fromkeys(clients):
        print(f"  {client}: {TRUST_STEPS[client]}", file=sys.stderr)
    print("Check it: massgen-mcp doctor (starts each registered command)", file=sys.stderr)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
