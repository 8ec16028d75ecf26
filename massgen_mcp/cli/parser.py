"""The `massgen-mcp` command line: its options and subcommands, and errors that say what
was meant.

No option is matched by prefix (`--model` is not `--models`: a misread flag must be an
error, never a silent guess); an unknown option or subcommand gets "did you mean ...?"; a
subcommand's error shows that subcommand's usage, not the server's.
"""

from __future__ import annotations

import argparse
import re
from typing import Any, NoReturn

from massgen_mcp import __version__
from massgen_mcp.cli.progress import add_progress_options, positive_seconds


class Parser(argparse.ArgumentParser):
    """An ArgumentParser without prefix matching whose errors suggest the closest option or
    subcommand. Subparsers are of this class too (argparse makes them `type(parent)`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        super().error(message + suggestion(self, message))


def suggestion(parser: argparse.ArgumentParser, message: str) -> str:
    """"; did you mean run?" for an invalid subcommand, "; did you mean --models?" for an
    unknown option ("" when nothing is close)."""
    import difflib  # only a mistyped command pays for it (start-up time)

    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if choice:
        options = re.findall(r"'([^']+)'", choice.group(2))
        close = difflib.get_close_matches(choice.group(1), options, n=1, cutoff=0.5)
        return f"; did you mean {close[0]}?" if close else ""
    if not message.startswith("unrecognized arguments:"):
        return ""
    known = [o for o in parser._option_string_actions if o.startswith("--")]
    hints = []
    for token in message.split(":", 1)[1].split():
        flag = token.split("=", 1)[0]
        if not flag.startswith("-"):
            continue
        close = [o for o in known if o.startswith(flag)] or difflib.get_close_matches(
            flag, known, n=1, cutoff=0.6)
        if close:
            hints.append(f"{flag}: did you mean {close[0]}?")
    return ("; " + "; ".join(hints)) if hints else ""


def positive_int(text: str) -> int:
    """An argparse type: a whole number above 0."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def subcommand_parser(parser: argparse.ArgumentParser,
                      command: str | None) -> argparse.ArgumentParser:
    """The parser of `command` (the top-level parser for the server's own options)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            found: argparse.ArgumentParser = action.choices[command]
            return found
    return parser


def parse(argv: list[str]) -> argparse.Namespace:
    """`argv` parsed; an unknown option is reported by the subcommand it was given to, with
    that subcommand's usage; `--models` with `--team` is an error (one would silently win)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    own = subcommand_parser(parser, getattr(args, "command", None))
    if extra:
        own.error(f"unrecognized arguments: {' '.join(extra)}")
    if getattr(args, "models", None) and getattr(args, "team", None) and args.command in (
            "run", "plan", "eval"):
        own.error("--models and --team were both given; use one: --models for a list of "
                  "provider/model, --team for a bundled team or a team file")
    return args


def serve_options(p: argparse.ArgumentParser, suppress: bool = False) -> None:


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


def team_options(p: argparse.ArgumentParser) -> None:
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
    p.add_argument("--max-tokens", type=positive_int, default=None,
                   help="output cap of each model call (tokens), for agents whose team file "
                        "sets no max_tokens")
    p.add_argument("--min-agreement", type=float, default=None, dest="min_agreement",
                   help="share of the votes the winner needs, e.g. 0.67; below it the run "
                        "ends no_consensus (exit 5) and lists the candidates. Set, it "
                        "replaces the default rule (two votes in a team of three or more)")
    p.add_argument("--stance", action="append", default=None, dest="stances",
                   metavar="STANCE", help="for, against, neutral or an instruction, one per "
                   "agent in team order (or agent_id=stance); repeatable")
    p.add_argument("--json", action="store_true", help="print the full result as JSON")
    add_progress_options(p)
    p.add_argument("--state-dir", default=None, help="where the run record is written")


def build_parser() -> argparse.ArgumentParser:


    parser = Parser(
        prog="massgen-mcp",
        description="Ask a team of models instead of one: an MCP server (default) and CLI for "
                    "multi-agent consensus, plans and checkpoints.")
    parser.add_argument("--version", action="version", version=f"massgen-mcp {__version__}")
    serve_options(parser)
    sub: Any = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the MCP server (the default command)",
                           description="Run the MCP server.")
    serve_options(serve, suppress=True)

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
    team_options(run)

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
    team_options(plan)

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

    class FastParser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:
            raise _NotServeOptions(message)

    parser = FastParser(prog="massgen-mcp", add_help=False, allow_abbrev=False)
    serve_options(parser)
    try:
        args, rest = parser.parse_known_args(argv)
    except _NotServeOptions:
        return None
    if rest:
        return None
    args.command = None
    return args
