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

from massgen_mcp.cli.progress import EXIT_FAILED, EXIT_OK, EXIT_USAGE

# Kept out of the hook's hot path (`massgen-mcp hook pre-tool-use` returns before argparse).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def build_parser() -> argparse.ArgumentParser:
    from massgen_mcp.cli.parser import build_parser as build

    return build()


def serve_args(argv: list[str]) -> argparse.Namespace | None:
    from massgen_mcp.cli.parser import serve_args as fast

    return fast(argv)


def parse(argv: list[str]) -> argparse.Namespace:
    from massgen_mcp.cli.parser import parse as full

    return full(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["hook", "pre-tool-use"]:  # the hot path: no argparse tree, no imports
        from massgen_mcp.hook.main import main as hook_main

        return hook_main(argv[2:])
    args = serve_args(argv)
    if args is None:
        args = parse(argv)
    command = args.command or "serve"
    try:
        if command == "serve":
            from massgen_mcp.server.transports import serve

            return serve(args)
        if command in ("run", "plan"):
            from massgen_mcp.cli.run import run_command

            return run_command(args, command)
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
    from massgen_mcp.paths import own_command

    print(f"Check it: {own_command()} doctor (starts each registered command)",
          file=sys.stderr)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
