"""The server's users and limits on the command line: `--auth-file`, `--no-token`, the
session and run limits, and `massgen-mcp token new NAME [--admin] [--auth-file FILE]`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from massgen_mcp.cli.progress import positive_seconds


def default_auth_file() -> str:
    from massgen_mcp.paths import config_home

    return str(config_home() / "users")


def add_user_options(p: argparse.ArgumentParser, default: Callable[[Any], Any]) -> None:
    """The serve options of users and limits (`default` as `_serve_options` gives it)."""
    add_limit_options(p, default)
    p.add_argument("--auth-file", default=default(None), metavar="FILE",
                   help="HTTP users, one a line: 'NAME SHA256_OF_TOKEN [admin]' (make lines "
                        "with `massgen-mcp token new NAME`); each user sees only their own "
                        "runs, an admin every run; --token stays the operator's (admin) token")
    p.add_argument("--no-token", action="store_true", default=default(False),
                   help="loopback HTTP only: no token at all (by default one is generated, "
                        "shown once and kept 0600 in the state directory as http-token)")
    p.add_argument("--sessions-per-user", type=int, default=default(None), metavar="N",
                   help="open MCP sessions (2025-11-25 clients) one user may hold "
                        "(default 100)")
    p.add_argument("--session-idle-timeout", type=positive_seconds, default=default(300.0),
                   metavar="SECONDS",
                   help="close an MCP session with no request in flight for this long "
                        "(default 300)")


def add_limit_options(p: argparse.ArgumentParser, default: Callable[[Any], Any]) -> None:
    """The operator's limits on what tool calls run (runs/quota.py)."""
    p.add_argument("--max-concurrent-runs", type=int, default=default(32), metavar="N",
                   help="runs this server executes at once, all users together (default 32)")
    p.add_argument("--max-runs-per-user", type=int, default=default(8), metavar="N",
                   help="runs one --auth-file user may have going at once (default 8; "
                        "admins and the operator's own token are not counted against it)")
    p.add_argument("--max-daily-usd-per-user", type=float, default=default(None),
                   metavar="USD", help="estimated spend after which a user's new runs are "
                                       "refused until 00:00 UTC (shared by every process "
                                       "on the --store; default: no limit)")
    p.add_argument("--max-run-calls", type=int, default=default(None), metavar="N",
                   help="provider calls of any one run a tool call starts (its team's own "
                        "cap when lower; the --team file's max_provider_calls applies too)")
    p.add_argument("--max-run-tokens", type=int, default=default(None), metavar="N",
                   help="tokens of any one run a tool call starts")
    p.add_argument("--max-run-usd", type=float, default=default(None), metavar="USD",
                   help="estimated cost of any one run a tool call starts")
    p.add_argument("--max-run-seconds", type=positive_seconds, default=default(3600.0),
                   metavar="SECONDS", help="time limit of any one run a tool call starts "
                                           "(default 3600)")
    p.add_argument("--max-agents", type=int, default=default(8), metavar="N",
                   help="agents in any one run a tool call starts (default 8)")


def add_token_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    token = sub.add_parser("token", help="make a token for a user of the HTTP server",
                           description="`token new NAME` prints a new token once (on stdout) "
                                       "and appends 'NAME SHA256 [admin]' to the auth file "
                                       "(created mode 0600); start the server with "
                                       "--auth-file FILE.")
    token.add_argument("action", choices=["new"], help="new: make a token")
    token.add_argument("name", help="the user's name (letters, digits, '_', '.', '@', '-')")
    token.add_argument("--admin", action="store_true", help="this user sees every user's runs")
    token.add_argument("--auth-file", default=None, metavar="FILE",
                       help=f"the file to append to (default: {default_auth_file()})")


def token_main(args: argparse.Namespace) -> int:
    from pathlib import Path

    from massgen_mcp.errors import MassgenError
    from massgen_mcp.server.users import add_user

    path = Path(args.auth_file or default_auth_file()).expanduser()
    try:
        token = add_user(path, args.name, admin=args.admin)
    except (MassgenError, OSError) as e:
        print(f"massgen-mcp token: {e}", file=sys.stderr)
        return 1
    print(token)
    print(f"massgen-mcp token: added {args.name}{' (admin)' if args.admin else ''} to {path}; "
          "the token is shown only now: give it to the user (clients send 'Authorization: "
          f"Bearer <token>'); start the server with --auth-file {path}", file=sys.stderr)
    return 0
