"""`massgen-mcp view` (a local page for the runs, live while they run) and `massgen-mcp
report` (one run as a self-contained HTML file to share or attach to a pull request)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import TYPE_CHECKING

from massgen_mcp.paths import own_command, state_dir, store_from_env

if TYPE_CHECKING:
    from massgen_mcp.runs.store import RunRecords

STORE_HELP = ("the run records' Redis (redis://HOST:PORT/DB, as the server's --store); "
              "default: $MASSGEN_MCP_STORE, else the files in the state directory")


def add_view_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    view = sub.add_parser("view", help="watch runs in the browser (live while they run)",
                          description="Serve the run viewer on 127.0.0.1 and open it: the "
                                      "task, each agent's answers and votes, the winner, the "
                                      "timeline. A running run updates by itself.")
    add_run_arguments(view, optional=True, run_help="the run to open (default: the list of "
                                                     "runs)")
    view.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    view.add_argument("--no-open", action="store_true", help="do not open a browser")
    view.add_argument("--no-token", action="store_true",
                      help="serve without a token (by default the page asks for the state "
                           "directory's http-token, as the HTTP server does; the browser "
                           "opened here signs in with it)")
    report = sub.add_parser("report", help="write one run as a self-contained HTML file",
                            description="Write a run as one HTML file with no scripts and no "
                                        "network fetches, to share or attach to a pull request.")
    add_run_arguments(report)
    report.add_argument("-o", "--output", default=None,
                        help="the file to write (default: RUN_ID.html; '-' for stdout)")


def add_run_arguments(p: argparse.ArgumentParser, *, optional: bool = False,
                      run_help: str = "the run") -> None:
    """A run (`RUN_ID|latest`: `resolve_run`) and where its record is (`--state-dir`,
    `--store`: `open_records`), for the commands that read one run's record."""
    p.add_argument("run_id", nargs="?" if optional else None, default=None,
                   metavar="RUN_ID|latest", help=run_help)
    p.add_argument("--state-dir", default=None, help="where the runs are when --store is not "
                                                     "given (default: $MASSGEN_MCP_HOME or "
                                                     "./.massgen)")
    p.add_argument("--store", default=store_from_env(), metavar="URL", help=STORE_HELP)


def open_records(args: argparse.Namespace) -> RunRecords:
    """The run records `--store` / `--state-dir` name (a `MassgenError` if unusable)."""
    from massgen_mcp.runs.store_open import open_store

    return open_store(getattr(args, "store", None), state_dir(args.state_dir))


def resolve_run(store: RunRecords, run_id: str | None) -> str | None:
    """`latest` -> the newest run id; a run id is checked; None stays None."""
    from massgen_mcp.errors import MassgenError
    from massgen_mcp.runs.store import check_run_id

    if run_id is None:
        return None
    if run_id == "latest":
        ids = store.ids(1)
        if not ids:
            raise MassgenError(f"there are no runs in {store.location} yet")
        return ids[0]
    check_run_id(run_id)
    if not store.exists(run_id):
        raise MassgenError(f"no run '{run_id}' in {store.location}; `{own_command()} view` lists "
                           "them (or pass --state-dir / --store)")
    return run_id


def report_main(args: argparse.Namespace) -> int:
    from pathlib import Path

    from massgen_mcp.errors import MassgenError
    from massgen_mcp.runs.view import report_html

    try:
        store = open_records(args)
        run_id = resolve_run(store, args.run_id)
        assert run_id is not None
        text = report_html(store, run_id)
    except MassgenError as e:
        print(f"massgen-mcp report: {e}", file=sys.stderr)
        return 1
    if args.output == "-":
        sys.stdout.write(text)
        return 0
    out = Path(args.output or f"{run_id}.html")
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as e:
        print(f"massgen-mcp report: cannot write {out}: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out} ({len(text) // 1024 + 1} KB)", file=sys.stderr)
    return 0


def view_main(args: argparse.Namespace) -> int:
    import socket

    import anyio
    import uvicorn

    from massgen_mcp.errors import MassgenError
    from massgen_mcp.runs.view.web import viewer_routes
    from massgen_mcp.server.front_door import front_door_app
    from massgen_mcp.server.users import TOKEN_FILE, Users, loopback_token
    from massgen_mcp.urls import LOOPBACK_NAMES

    try:
        store = open_records(args)
        run_id = resolve_run(store, args.run_id)
        state = state_dir(args.state_dir)
        token = None if args.no_token else loopback_token(state)[0]
    except (MassgenError, OSError) as e:
        print(f"massgen-mcp view: {e}", file=sys.stderr)
        return 1
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", args.port))
    except OSError as e:
        print(f"massgen-mcp view: cannot listen on 127.0.0.1:{args.port}: {e.strerror}; pick "
              "another --port or leave it out for a free one", file=sys.stderr)
        return 1
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/runs" + (f"/{run_id}" if run_id else "")
    users = Users.of(token) if token else Users.anyone()
    app = front_door_app(viewer_routes(store), names=LOOPBACK_NAMES, users=users)
    config = uvicorn.Config(app, log_level="warning", lifespan="off",
                            timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            while not server.started:
                await anyio.sleep(0.02)
            # Printed once the socket accepts connections: scripts and tests wait for this.
            if token:
                print(f"massgen-mcp view: the page asks for the token in "
                      f"{state / TOKEN_FILE}: open {url}?token=<it> once (the browser opened "
                      "here is signed in already)", file=sys.stderr, flush=True)
            print(f"massgen-mcp view: serving {store.location} at {url} (Ctrl-C to stop)",
                  file=sys.stderr, flush=True)
            if not args.no_open:
                import webbrowser

                webbrowser.open(f"{url}?token={token}" if token else url)

    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(main)
    return 0
