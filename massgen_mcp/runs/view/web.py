"""The viewer as an ASGI app: `/runs`, `/runs/<run_id>` and `/runs/<run_id>/events` (SSE).

Served by `massgen-mcp view` on loopback and mounted by the HTTP transport next to the MCP
endpoint. Requests must name an allowed Host (so a DNS-rebinding page cannot read runs), and
when the server has a token they must carry it: as `Authorization: Bearer`, or once as
`?token=` which is swapped for an HttpOnly cookie and removed from the address bar.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from massgen_mcp.errors import MassgenError
from massgen_mcp.runs.store import RunStore, check_run_id
from massgen_mcp.runs.view.model import find_cost, load_run_view
from massgen_mcp.runs.view.page import RunRow, error_page, run_main, run_page, runs_page

if TYPE_CHECKING:
    from massgen_mcp.runs.live import LiveRun


class LiveRuns(Protocol):
    """Where the viewer finds the runs live in this process (the `App`, or an `Engine`)."""

    @property
    def state(self) -> Path: ...

    def live_run(self, run_id: str) -> LiveRun | None: ...

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
POLL_SECONDS = 0.2  # how often a live event stream looks for new lines in events.jsonl
HEARTBEAT_SECONDS = 15.0
LIST_LIMIT = 200
_COOKIE = "massgen_view"


def viewer_app(state: Path, *, engine: LiveRuns | None = None, token: str | None = None,
               hosts: frozenset[str] = LOOPBACK_NAMES, base: str = "/runs") -> Any:
    """The viewer's ASGI app. `engine`: runs live in this process are read from it."""
    store = RunStore(state)
    cookie_value = (hashlib.sha256(b"massgen-view\0" + token.encode()).hexdigest()
                    if token else "")

    def refused(request: Request) -> Response | None:
        host = _hostname(request.headers.get("host") or "")
        if host not in hosts:
            return Response(f"Host '{host}' is not served here; open the address the server "
                            "printed (or add it with --allowed-host).", 421)
        if not token:
            return None
        scheme, _, given = (request.headers.get("authorization") or "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token):
            return None
        if hmac.compare_digest(request.cookies.get(_COOKIE, ""), cookie_value):
            return None
        if hmac.compare_digest(request.query_params.get("token", ""), token):
            rest = {k: v for k, v in request.query_params.items() if k != "token"}
            target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            response = RedirectResponse(target, 303)
            response.set_cookie(_COOKIE, cookie_value, httponly=True, samesite="strict",
                                path=base)
            return response
        return Response("This server needs its token: open this page once with ?token=<the "
                        "server's --token / MASSGEN_MCP_TOKEN> (a cookie keeps you signed in)",
                        401, headers={"www-authenticate": 'Bearer realm="massgen-mcp"'})

    def html(body_of: Any, status: int = 200) -> Response:
        nonce = secrets.token_urlsafe(12)
        csp = (f"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; "
               "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
               "frame-ancestors 'none'")
        return HTMLResponse(body_of(nonce), status, headers={
            "content-security-policy": csp, "x-content-type-options": "nosniff",
            "referrer-policy": "no-referrer", "cache-control": "no-store"})

    def view_of(run_id: str) -> Any:
        live = engine.live_run(run_id) if engine else None
        snapshot = live.snapshot() if live else None
        return load_run_view(state, run_id, snapshot)

    async def runs(request: Request) -> Response:
        if (denied := refused(request)) is not None:
            return denied
        rows = [row for run_id in store.ids(LIST_LIMIT) if (row := _row(store, run_id))]
        return html(lambda nonce: runs_page(rows, base=base, nonce=nonce))

    async def run(request: Request) -> Response:
        if (denied := refused(request)) is not None:
            return denied
        try:
            view = view_of(request.path_params["run_id"])
        except MassgenError as e:
            message = str(e)
            return html(lambda nonce: error_page(message, base=base, nonce=nonce), 404)
        if request.query_params.get("part") == "main":
            return html(lambda _nonce: run_main(view))
        return html(lambda nonce: run_page(view, base=base, nonce=nonce))

    async def events(request: Request) -> Response:
        if (denied := refused(request)) is not None:
            return denied
        try:
            run_id = check_run_id(request.path_params["run_id"])
        except MassgenError as e:
            return Response(str(e), 404)
        if not (store.root / run_id).is_dir():
            return Response(f"no run '{run_id}'", 404)
        after = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
        return StreamingResponse(
            _stream(store, run_id, int(after) if after.isdigit() else 0, engine),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"})

    async def home(request: Request) -> Response:
        return RedirectResponse(base, 307)

    return Starlette(routes=[
        Route("/", home), Route(base, runs), Route(base + "/", runs),
        Route(base + "/{run_id}", run), Route(base + "/{run_id}/events", events)])


def _hostname(header: str) -> str:
    """`example.org:8765` -> `example.org`; `[::1]:8765` -> `::1`."""
    if header.startswith("["):
        return header[1:].split("]", 1)[0].lower()
    return header.rsplit(":", 1)[0].lower() if header.count(":") == 1 else header.lower()


def _row(store: RunStore, run_id: str) -> RunRow | None:
    try:
        r = store.load(run_id)
    except (MassgenError, ValueError):
        return None
    try:
        mode = json.loads((store.root / run_id / "meta.json").read_text()).get("mode", "")
    except (OSError, ValueError, AttributeError):
        mode = ""
    total = sum(r.tally.values())
    return RunRow(run_id=r.run_id, status=r.status, mode=str(mode or "consensus"), task=r.task,
                  winner=r.winner.agent_id if r.winner else "",
                  votes=f"{r.winner.votes}/{total}" if r.winner else "",
                  elapsed=r.elapsed_seconds, cost=find_cost(r.totals.model_dump()),
                  started_at=r.started_at)


def _finished(store: RunStore, run_id: str, engine: LiveRuns | None) -> bool:
    if (store.root / run_id / "result.json").exists():
        return True
    if engine is not None and engine.live_run(run_id) is not None:
        return False
    try:
        return store.load(run_id).status != "running"  # a dead owner reads as interrupted
    except MassgenError:
        return True


async def _stream(store: RunStore, run_id: str, after: int,
                  engine: LiveRuns | None) -> AsyncIterator[str]:
    """Follow events.jsonl: one SSE message per new line (kind and time only; the page
    fetches what it shows), then `event: end` once the run's record is final."""
    path = store.root / run_id / "events.jsonl"
    pos, rest = 0, b""
    beat = time.monotonic()
    yield "retry: 1000\n\n"
    while True:
        try:
            with path.open("rb") as f:
                f.seek(pos)
                chunk = f.read()
        except FileNotFoundError:
            chunk = b""
        pos += len(chunk)
        *lines, rest = (rest + chunk).split(b"\n")
        for raw in lines:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            seq = line.get("seq") if isinstance(line, dict) else None
            if not isinstance(seq, int) or seq <= after:
                continue
            brief = {k: line[k] for k in ("seq", "kind", "agent", "t") if k in line}
            yield f"id: {seq}\ndata: {json.dumps(brief)}\n\n"
            beat = time.monotonic()
        if _finished(store, run_id, engine):
            yield "event: end\ndata: {}\n\n"
            return
        if time.monotonic() - beat > HEARTBEAT_SECONDS:
            yield ": keep-alive\n\n"
            beat = time.monotonic()
        await anyio.sleep(POLL_SECONDS)


def mount_viewer(mcp_app: Any, viewer: Any, base: str = "/runs") -> Any:
    """An ASGI app that sends `base` and below to the viewer and the rest to `mcp_app`."""
    async def dispatch(scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == base or path.startswith(base + "/"):
            await viewer(scope, receive, send)
        else:
            await mcp_app(scope, receive, send)

    return dispatch


def with_viewer(mcp_app: Any, engine: LiveRuns, *, host: str, port: int, token: str | None,
                allowed_hosts: list[str] | None = None) -> Any:
    """The HTTP transport's app with the viewer at /runs, behind the same token and the same
    Host names as the MCP endpoint."""
    import socket

    from massgen_mcp.runs.view import set_served_at
    from massgen_mcp.urls import is_loopback_host

    names = set(LOOPBACK_NAMES)
    public = host
    if not is_loopback_host(host):
        names |= {host, socket.gethostname(), socket.getfqdn(), *(allowed_hosts or [])}
        names -= {"0.0.0.0", "::"}
        if host in ("0.0.0.0", "::"):
            public = socket.gethostname()
    set_served_at(f"http://{public}:{port}/runs")
    viewer = viewer_app(engine.state, engine=engine, token=token,
                        hosts=frozenset(n.lower() for n in names))
    return mount_viewer(mcp_app, viewer)
