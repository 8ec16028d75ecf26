"""The viewer's routes: `/runs`, `/runs/<run_id>` and `/runs/<run_id>/events` (SSE).

Mounted behind the HTTP front door (server/front_door.py), by `massgen-mcp view` on loopback
and by the HTTP transport next to the MCP endpoint: the door checks Host and Origin and says
who the caller is (a bearer token, or the viewer's session cookie); these routes show that
caller only the runs they may see (runs/owners.py).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from massgen_mcp.errors import MassgenError
from massgen_mcp.runs.owners import in_scope, owner_in
from massgen_mcp.runs.store import RunRecords, RunStore, check_run_id
from massgen_mcp.runs.view.model import find_cost, load_run_view
from massgen_mcp.runs.view.page import RunRow, run_main, run_page, runs_page

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


def viewer_routes(records: RunRecords | Path, *, engine: LiveRuns | None = None,
                  base: str = "/runs") -> list[BaseRoute]:
    """The viewer's routes over a store's runs (a state directory: its files), to mount
    behind the HTTP front door (server/front_door.py: Host, Origin and who the caller is).
    `engine`: runs live in this process are read from it. A run the caller may not see
    (runs/owners.py) is answered exactly as one that does not exist."""
    store = RunStore(records) if isinstance(records, Path) else records

    def html(body_of: Any, status: int = 200) -> Response:
        nonce = secrets.token_urlsafe(12)
        csp = (f"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; "
               "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
               "frame-ancestors 'none'")
        return HTMLResponse(body_of(nonce), status, headers={
            "content-security-policy": csp, "x-content-type-options": "nosniff",
            "referrer-policy": "no-referrer", "cache-control": "no-store"})

    def visible(request: Request, run_id: str) -> bool:
        who = in_scope(request.scope)
        if who.admin:
            return store.exists(run_id)
        try:
            return who.may_see(owner_in(store.meta(run_id)))
        except MassgenError:
            return False

    def view_of(run_id: str) -> Any:
        live = engine.live_run(run_id) if engine else None
        snapshot = live.snapshot() if live else None
        return load_run_view(store, run_id, snapshot)

    async def runs(request: Request) -> Response:
        ids = [run_id for run_id in store.ids(LIST_LIMIT) if _is_run_id(run_id)
               and visible(request, run_id)]
        rows = [row for run_id in ids if (row := _row(store, run_id))]
        return html(lambda nonce: runs_page(rows, base=base, nonce=nonce))

    async def run(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if run_id == LATEST:
            # To the run itself: its page, live stream and links then stay on that run when
            # a newer one starts; reloading /runs/latest finds the newest again.
            newest = [i for i in store.ids(LIST_LIMIT) if _is_run_id(i) and visible(request, i)]
            if not newest:
                return plain(f"there are no runs in {store.location} yet", 404)
            query = f"?{request.url.query}" if request.url.query else ""
            return RedirectResponse(f"{base}/{newest[0]}{query}", 307)
        if not _is_run_id(run_id) or not visible(request, run_id):
            return NO_SUCH_RUN
        try:
            view = view_of(run_id)
        except MassgenError:
            return NO_SUCH_RUN
        if request.query_params.get("part") == "main":
            return html(lambda _nonce: run_main(view))
        return html(lambda nonce: run_page(view, base=base, nonce=nonce))

    async def events(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if not _is_run_id(run_id) or not visible(request, run_id):
            return NO_SUCH_RUN
        after = _event_id(request.headers.get("last-event-id")
                          or request.query_params.get("after") or "0")
        if after is None:
            return plain("Last-Event-ID / after must be an event number (0 or more)", 400)
        return StreamingResponse(
            _stream(store, run_id, after),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"})

    async def home(request: Request) -> Response:
        return RedirectResponse(base, 307)

    return [Route("/", home), Route(base, runs), Route(base + "/", runs),
            Route(base + "/{run_id}", run), Route(base + "/{run_id}/events", events)]


def viewer_app(records: RunRecords | Path, *, engine: LiveRuns | None = None,
               base: str = "/runs") -> Starlette:
    """The viewer's routes as an app of their own, with no front door: for tests over an
    in-process transport (`massgen-mcp view` and the HTTP transport put it behind one)."""
    return Starlette(routes=viewer_routes(records, engine=engine, base=base))


def plain(text: str, status: int) -> Response:
    """A short text answer a browser will not sniff into HTML. Never echoes the request."""
    return Response(text, status, media_type="text/plain",
                    headers={"x-content-type-options": "nosniff", "cache-control": "no-store"})


NO_SUCH_RUN = plain("no run with that id here; the runs you may see are listed at /runs", 404)


def _is_run_id(run_id: str) -> bool:
    try:
        check_run_id(run_id)
    except MassgenError:
        return False
    return True


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
