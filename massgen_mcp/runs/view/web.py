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
import re
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from massgen_mcp.errors import MassgenError
from massgen_mcp.runs.store import RunRecords, RunStore, check_run_id
from massgen_mcp.runs.view.model import find_cost, load_run_view
from massgen_mcp.runs.view.page import RunRow, error_page, run_main, run_page, runs_page
from massgen_mcp.urls import LOOPBACK_NAMES, host_allowed, origin_allowed, served_names

if TYPE_CHECKING:
    from massgen_mcp.runs.live import LiveRun


class LiveRuns(Protocol):
    """Where the viewer finds the runs live in this process (an `Engine`)."""

    @property
    def store(self) -> RunRecords: ...

    def live_run(self, run_id: str) -> LiveRun | None: ...

LATEST = "latest"  # /runs/latest: the newest run, as `massgen-mcp view latest`
HEARTBEAT_SECONDS = 15.0
LIST_LIMIT = 200
_COOKIE = "massgen_view"


def viewer_app(records: RunRecords | Path, *, engine: LiveRuns | None = None,
               token: str | None = None, hosts: frozenset[str] = LOOPBACK_NAMES,
               base: str = "/runs") -> Any:
    """The viewer's ASGI app over a store's runs (a state directory: its files). `engine`:
    runs live in this process are read from it."""
    store = RunStore(records) if isinstance(records, Path) else records
    cookie_value = (hashlib.sha256(b"massgen-view\0" + token.encode()).hexdigest()
                    if token else "")

    def refused(request: Request) -> Response | None:
        host = request.headers.get("host") or ""
        if not host_allowed(host, hosts):
            return Response(f"Host '{host[:100]}' is not served here; open the address the "
                            "server printed (or add it with --allowed-host).", 421)
        if not origin_allowed(request.headers.get("origin"), hosts):
            return Response("requests from another site's pages are refused (Origin)", 403)
        if not token:
            return None
        scheme, _, given = (request.headers.get("authorization") or "").partition(" ")
        if scheme.lower() == "bearer" and _same(given.strip(), token):
            return None
        if _same(request.cookies.get(_COOKIE, ""), cookie_value):
            return None
        if _same(request.query_params.get("token", ""), token):
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
        return load_run_view(store, run_id, snapshot)

    async def runs(request: Request) -> Response:
        if (denied := refused(request)) is not None:
            return denied
        rows = [row for run_id in store.ids(LIST_LIMIT) if (row := _row(store, run_id))]
        return html(lambda nonce: runs_page(rows, base=base, nonce=nonce))

    async def run(request: Request) -> Response:
        if (denied := refused(request)) is not None:
            return denied
        if request.path_params["run_id"] == LATEST:
            # To the run itself: its page, live stream and links then stay on that run when
            # a newer one starts; reloading /runs/latest finds the newest again.
            newest = store.ids(1)
            if not newest:
                message = f"there are no runs in {store.location} yet"
                return html(lambda nonce: error_page(message, base=base, nonce=nonce), 404)
            query = f"?{request.url.query}" if request.url.query else ""
            return RedirectResponse(f"{base}/{newest[0]}{query}", 307)
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
        if not store.exists(run_id):
            return Response(f"no run '{run_id}'", 404)
        after = _event_id(request.headers.get("last-event-id")
                          or request.query_params.get("after") or "0")
        if after is None:
            return Response("Last-Event-ID / after must be an event number (0 or more)", 400)
        return StreamingResponse(
            _stream(store, run_id, after),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"})

    async def home(request: Request) -> Response:
        return RedirectResponse(base, 307)

    return Starlette(routes=[
        Route("/", home), Route(base, runs), Route(base + "/", runs),
        Route(base + "/{run_id}", run), Route(base + "/{run_id}/events", events)])


def _same(given: str, expected: str) -> bool:
    """Constant-time comparison of a credential with any characters in it (`compare_digest`
    raises on non-ASCII text: that was an HTTP 500)."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"),
                               expected.encode("utf-8", "surrogatepass"))


_EVENT_ID = re.compile(r"[0-9]{1,18}")  # ASCII digits only: "²".isdigit() is True


def _event_id(text: str) -> int | None:
    """An SSE `Last-Event-ID` (or `?after=`) as an event number; None when it is not one."""
    text = text.strip()
    return int(text) if _EVENT_ID.fullmatch(text) else None


def _row(store: RunRecords, run_id: str) -> RunRow | None:
    try:
        r = store.load(run_id)
    except (MassgenError, ValueError):
        return None
    try:
        meta = store.meta(run_id)
        mode, title = meta.get("mode", ""), meta.get("title", "")
    except (MassgenError, ValueError, AttributeError):
        mode, title = "", ""
    from massgen_mcp.coordination.result import votes_cast

    total = r.vote_total()
    return RunRow(run_id=r.run_id, status=r.status, mode=str(mode or "consensus"),
                  task=str(title or r.task),
                  winner=r.winner.agent_id if r.winner else "",
                  votes=(votes_cast(r.winner.votes, total) if total else "no votes cast")
                  if r.winner else "",
                  elapsed=r.elapsed_seconds, cost=find_cost(r.totals.model_dump()),
                  started_at=r.started_at)


async def _stream(store: RunRecords, run_id: str, after: int) -> AsyncIterator[str]:
    """Follow the run's events (`RunRecords.follow`): one SSE message per event (kind and
    time only; the page fetches what it shows), then `event: end` once its record is final."""
    yield "retry: 1000\n\n"
    async for line in store.follow(run_id, after, idle=HEARTBEAT_SECONDS):
        if not line:
            yield ": keep-alive\n\n"
            continue
        brief = {k: line[k] for k in ("seq", "kind", "agent", "t") if k in line}
        yield f"id: {line['seq']}\ndata: {json.dumps(brief)}\n\n"
    yield "event: end\ndata: {}\n\n"


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

    public = socket.gethostname() if host in ("0.0.0.0", "::") else host
    set_served_at(f"http://{public}:{port}/runs")
    viewer = viewer_app(engine.store, engine=engine, token=token,
                        hosts=served_names(host, allowed_hosts))
    return mount_viewer(mcp_app, viewer)
