"""Transports: stdio, and streamable HTTP and SSE behind the front door (front_door.py); signals.

`serve()` is what `massgen-mcp` runs. It builds the server, owns the process-wide task group
for background runs, and makes SIGTERM/SIGINT close every live run as `interrupted` (and stop
every agent tool server) before the process exits.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import MCPServer

from massgen_mcp import __version__
from massgen_mcp.app import App
from massgen_mcp.errors import MassgenError
from massgen_mcp.paths import state_dir
from massgen_mcp.server import build_server
from massgen_mcp.server.users import Users
from massgen_mcp.urls import is_loopback_host, served_names

if TYPE_CHECKING:
    from starlette.routing import BaseRoute

    from massgen_mcp.runs.quota import Quota


#: A 2025-11-25 session with no request in flight for this long is closed (the SDK's default
#: is 30 minutes; a client that comes back opens a new one).
SESSION_IDLE_SECONDS = 300.0


def http_app(mcp: MCPServer, transport: str, host: str, users: Users,
             allowed_hosts: list[str] | None = None, stateless: bool = False,
             viewer: list[BaseRoute] | None = None,
             session_idle_seconds: float = SESSION_IDLE_SECONDS,
             sessions_per_user: int | None = None) -> Any:
    """The MCP endpoint (and the viewer's routes) behind the one front door
    (server/front_door.py). `stateless`: no MCP session lives in this process (for replicas
    behind a balancer)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from massgen_mcp.server.front_door import SESSIONS_PER_USER, front_door_app

    # The SDK's own check only knows three spellings of loopback and compares case-sensitively:
    # the front door replaces it (the SDK still checks the Content-Type of POSTs).
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    live: Any = None
    sse_path = "/sse" if transport == "sse" else None  # the SDK's stream endpoint
    if transport == "sse":
        app = mcp.sse_app(transport_security=security, host=host)
    else:
        app = mcp.streamable_http_app(transport_security=security, host=host,
                                      stateless_http=stateless,
                                      session_idle_timeout=session_idle_seconds)
        from massgen_mcp.server.sdk_adapter import open_sessions

        live = lambda: open_sessions(mcp)  # noqa: E731  (the SDK forgets idle, closed ones)
    return front_door_app(viewer or [], mcp_app=app, names=served_names(host, allowed_hosts),
                          users=users, live_sessions=live, sse_path=sse_path,
                          sessions_per_user=sessions_per_user or SESSIONS_PER_USER)


def http_users(args: argparse.Namespace, state: Path) -> Users:
    """Who may use the HTTP server (server/users.py): `--auth-file` users and the operator's
    token; on loopback with neither, a generated token (shown once, kept 0600 in the state
    directory), unless `--no-token`. A `MassgenError` for a bad file or combination."""
    from massgen_mcp.errors import InputError
    from massgen_mcp.server.users import TOKEN_FILE, loopback_token

    token = args.token or os.environ.get("MASSGEN_MCP_TOKEN") or None
    auth_file = getattr(args, "auth_file", None)
    loopback = is_loopback_host(args.host)
    if getattr(args, "no_token", False):
        if token or auth_file:
            raise InputError("--no-token turns authentication off: leave out --token, "
                             "MASSGEN_MCP_TOKEN and --auth-file, or --no-token")
        if not loopback:
            raise InputError(f"--no-token is for loopback only: anyone who can reach "
                             f"{args.host} could spend your API keys")
        return Users.anyone()
    if not token and not auth_file:
        if not loopback:
            raise InputError(f"refusing to listen on {args.host} without a token: anyone who "
                             "can reach this port could spend your API keys. Set --token or "
                             "MASSGEN_MCP_TOKEN (clients send 'Authorization: Bearer "
                             "<token>'), give --auth-file, or bind 127.0.0.1.")
        token, made = loopback_token(state)
        if made:
            print(f"massgen-mcp: HTTP clients must send 'Authorization: Bearer {token}' "
                  f"(shown once; kept in {state / TOKEN_FILE}, mode 0600; --no-token turns "
                  "this off)", file=sys.stderr, flush=True)
        else:
            print(f"massgen-mcp: HTTP clients must send the token kept in "
                  f"{state / TOKEN_FILE}", file=sys.stderr, flush=True)
    from massgen_mcp.redaction import add_process_secret

    add_process_secret(token)  # a token given as --token (or generated) is redacted too
    return Users.of(token, Path(auth_file) if auth_file else None)


def serve(args: argparse.Namespace) -> int:
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, str(args.log_level).upper(),
                                                         logging.WARNING),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    policy = None  # none given: App makes the default one at the first run (start-up time)
    if args.team_dir or args.allow_team_path:
        from massgen_mcp.config.trust import TeamPolicy

        try:
            policy = TeamPolicy.create(args.team_dir, args.allow_team_path,
                                       [args.team, args.checkpoint_team])
        except MassgenError as e:
            print(f"massgen-mcp: {e}", file=sys.stderr)
            return 2
    state = state_dir(args.state_dir)
    users = None
    if args.transport != "stdio":
        try:
            users = http_users(args, state)
        except MassgenError as e:
            print(f"massgen-mcp: {e}", file=sys.stderr)
            return 2
    store = None  # no --store: the files under `state`, opened with the engine at first use
    if getattr(args, "store", None):
        from massgen_mcp.runs.store_open import open_store

        try:
            store = open_store(args.store, state)
        except MassgenError as e:
            print(f"massgen-mcp: {e}", file=sys.stderr)
            return 2
    def quota() -> Quota:  # the options are checked by the parser; made at the first run
        from massgen_mcp.runs.quota import limits_from_options

        return limits_from_options(args)

    app = App(state, default_team=args.team, store=store,
              checkpoint_team=args.checkpoint_team, team_policy=policy,
              allow_secret_files=args.allow_secret_files,
              allow_cli_agents=args.allow_cli_agents,
              allow_checkpoint_team_override=args.allow_checkpoint_team_override,
              checkpoint_approval=args.checkpoint_approval,
              quota=quota)
    app.keep_cli_standbys(args.cli_standbys)
    if getattr(args, "store", None) and not getattr(args, "run_here", False):
        from massgen_mcp.runs.scale.redis_store import RedisStore

        if isinstance(store, RedisStore):  # runs go to `massgen-mcp worker` processes
            app.hand_runs_to_workers(getattr(args, "queue_timeout", 300.0))
    for name in filter(None, (args.team, args.checkpoint_team)):
        try:
            from massgen_mcp.config.choose import resolve_team

            for note in resolve_team(team=name, env=app.env).notes:
                print(f"massgen-mcp: {note}", file=sys.stderr)
        except MassgenError as e:
            print(f"massgen-mcp: warning: team '{name}' is not usable yet: {e}", file=sys.stderr)
    mcp, host = build_server(app)

    async def main() -> None:
        stop = anyio.Event()
        async with anyio.create_task_group() as outer:
            outer.start_soon(_on_signals, app, stop, args.transport == "stdio")
            async with anyio.create_task_group() as work:
                host.background = work
                work.start_soon(_cancel_when, stop, work.cancel_scope)
                try:
                    if args.transport == "stdio":
                        await _serve_stdio(mcp, app)
                    else:
                        assert users is not None
                        await _serve_http(mcp, args, users, stop, app)
                finally:
                    app.shut_down()  # live runs become "interrupted"
                    work.cancel_scope.cancel()
            outer.cancel_scope.cancel()

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(main)
    # Every run record is closed by now. Skip the interpreter's teardown (seconds of garbage
    # collection after the provider SDKs were loaded): clients wait for us to exit.
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(0)


async def _serve_stdio(mcp: MCPServer, app: App) -> None:
    """`mcp.run_stdio_async()`, except that the end of stdin is noted before the session
    ends: the runs it stops are then `interrupted` because the client went away, not
    `cancelled` as if the client had asked."""
    import mcp_types as types
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    from massgen_mcp.server.sdk_adapter import lowlevel_server
    from massgen_mcp.server.wire_errors import error_reply

    lowlevel = lowlevel_server(mcp)  # run_stdio_async offers no way to watch the stream
    async with stdio_server() as (read, write):
        tx, rx = anyio.create_memory_object_stream[Any](0)

        async def watch() -> None:
            async with tx:
                async for message in read:
                    if isinstance(message, Exception):
                        # A line the SDK could not read: the session would drop it silently.
                        reply = error_reply(message)
                        if reply is not None:
                            await write.send(SessionMessage(
                                types.jsonrpc_message_adapter.validate_python(reply)))
                        continue
                    await tx.send(message)
                # Before the session sees the end (when `tx` closes) and stops its requests.
                app.shut_down("the MCP client disconnected (stdin closed) while the "
                                     "run was live")

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await lowlevel.run(rx, write, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()


async def _on_signals(app: App, stop: anyio.Event, stdio: bool) -> None:
    """SIGTERM/SIGINT: stop serving and cancel live runs, so every run record is closed
    (as `interrupted`) and every agent tool server is shut down before we exit."""
    import signal

    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for sig in signals:
            name = "SIGTERM" if sig == signal.SIGTERM else "SIGINT"
            app.shut_down(f"the server was stopped ({name}) while the run was live")
            stop.set()
            break
    if stdio:
        # The stdio transport reads stdin in a worker thread that cancellation cannot stop:
        # once the live runs have closed their records, leave without waiting for it.
        with anyio.move_on_after(15):
            await app.wait_for_live_runs()
        sys.stderr.flush()
        os._exit(0)


async def _cancel_when(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def _serve_http(mcp: MCPServer, args: argparse.Namespace, users: Users,
                      stop: anyio.Event, app: App) -> None:
    import uvicorn

    from massgen_mcp.server.http_limits import TimedH11Protocol, raise_fd_limit

    raise_fd_limit()
    protocol = type("Protocol", (TimedH11Protocol,), {"read_timeout": args.request_timeout})
    import socket

    from massgen_mcp.runs.view import set_served_at
    from massgen_mcp.runs.view.web import viewer_routes

    class _Server(uvicorn.Server):
        def capture_signals(self) -> Any:  # we handle signals ourselves (see _on_signals)
            return contextlib.nullcontext()

    public = socket.gethostname() if args.host in ("0.0.0.0", "::") else args.host
    set_served_at(f"http://{public}:{args.port}/runs")
    # The run viewer at /runs, behind the same front door as the MCP endpoint.
    asgi = http_app(mcp, args.transport, args.host, users, args.allowed_host,
                    stateless=bool(getattr(args, "stateless_http", False)),
                    viewer=viewer_routes(app.store, engine=app),
                    session_idle_seconds=getattr(args, "session_idle_timeout",
                                                 SESSION_IDLE_SECONDS),
                    sessions_per_user=getattr(args, "sessions_per_user", None))
    config = uvicorn.Config(asgi, host=args.host, port=args.port, log_level="warning",
                            lifespan="on", timeout_graceful_shutdown=3,
                            http=protocol)  # half-sent requests time out
    server = _Server(config)

    async def exit_on_stop() -> None:
        try:
            await stop.wait()
        finally:  # also when the stop cancels this task first
            server.should_exit = True
    shown = f"[{args.host}]" if ":" in args.host else args.host  # an IPv6 address
    url = f"http://{shown}:{args.port}{'/sse' if args.transport == 'sse' else '/mcp'}"

    async def announce() -> None:
        while not server.started:
            await anyio.sleep(0.02)
        # Printed once the socket accepts connections: scripts and tests wait for this line.
        print(f"massgen-mcp {__version__}: listening on {url} ({args.transport}"
              f"{', token required' if users.required else ''})", file=sys.stderr, flush=True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        tg.start_soon(exit_on_stop)
        # Shielded: cancelling uvicorn mid-serve makes it log a CancelledError traceback
        # from its lifespan task; `should_exit` shuts it down cleanly instead (the runs it
        # is waiting on are cancelled by the caller's scope meanwhile).
        with anyio.CancelScope(shield=True):
            await server.serve()
        tg.cancel_scope.cancel()
