"""The one HTTP front door: every request to the MCP endpoint and to the viewer passes here.

One ASGI middleware (`FrontDoor`, a Starlette `Middleware`) in front of one router that
mounts the viewer's routes and the SDK's MCP app:

1. **Host and Origin** (DNS rebinding): the `Host` must name this server however it is
   spelled, an `Origin` a browser sends must be one of ours (421 / 403).
2. **Who is calling** (`server/users.py`): `Authorization: Bearer <token>` anywhere; on the
   viewer's pages also its session cookie, or a one-time `?token=` that is swapped for a
   cookie holding a random session id (never a function of the token) and removed from the
   address bar. No credential: 401. The caller is put on the request for the MCP server
   (`server/users.py` `WhoAsks`) and the viewer (runs/owners.py `in_scope`), and as the
   SDK's `AuthenticatedUser`, which binds each MCP session to the user who opened it.
3. **Sessions per user** (2025-11-25 clients): a user may hold `sessions_per_user` open
   sessions; one more is 429 naming the limit, so one token cannot fill the server's table.
   On the SSE transport a session is an open `GET /sse` stream, counted while it lasts.

Every answer it writes is short plain text (or JSON for MCP clients) with `nosniff`, and
never echoes the request's URL or headers; `nosniff` is added to every other answer too.
"""

from __future__ import annotations

import json
import secrets
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Mount

from massgen_mcp.runs.owners import SCOPE_KEY, Principal
from massgen_mcp.server.users import Users
from massgen_mcp.urls import host_allowed, origin_allowed

COOKIE = "massgen_view"
#: Viewer sign-ins kept in memory (the oldest is forgotten first; it signs in again).
VIEWER_SESSIONS = 10_000
#: Open MCP sessions one user may hold (2025-11-25 clients; 2026-07-28 ones have none).
SESSIONS_PER_USER = 100
SESSION_HEADER = b"mcp-session-id"
_NOSNIFF = (b"x-content-type-options", b"nosniff")

Send = Callable[[dict[str, Any]], Any]


@dataclass(eq=False)
class FrontDoor:
    """Host/Origin, authentication and the per-user session cap (see the module text)."""

    app: Any
    names: frozenset[str] = field(kw_only=True)
    users: Users = field(kw_only=True)
    base: str = field(default="/runs", kw_only=True)  # where the viewer is mounted
    sessions_per_user: int = field(default=SESSIONS_PER_USER, kw_only=True)
    #: The MCP session ids still open (the SDK forgets idle and closed ones).
    live_sessions: Callable[[], set[str]] | None = field(default=None, kw_only=True)
    #: The SSE transport's stream endpoint, and the streams each user holds open.
    sse_path: str | None = field(default=None, kw_only=True)
    sse_streams: Counter[str] = field(default_factory=Counter, init=False)
    viewer_sessions: OrderedDict[str, Principal] = field(default_factory=OrderedDict,
                                                         init=False)
    mcp_sessions: dict[str, str] = field(default_factory=dict, init=False)  # id -> user

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = scope.get("headers") or []
        hosts = [v.decode("latin-1") for k, v in headers if k == b"host"]
        origins = [v.decode("latin-1") for k, v in headers if k == b"origin"]
        if len(hosts) != 1 or not host_allowed(hosts[0], self.names):
            return await _plain(send, 421, "this Host is not served here: use the address the "
                                "server printed, or have the operator add the name with "
                                "--allowed-host")
        if not all(origin_allowed(o, self.names) for o in origins):
            return await _plain(send, 403, "requests from another site's pages are refused "
                                "(Origin); the operator can allow a name with --allowed-host")
        viewer = self._is_viewer(scope.get("path", ""))
        who = self._bearer(headers)
        if who is None and viewer:
            if (signed_in := self._query_token(scope)) is not None:
                return await self._sign_in(scope, send, signed_in)
            who = self._cookie(headers)
        if who is None:
            return await self._unauthorized(send, viewer)
        scope[SCOPE_KEY] = who
        scope["user"] = _sdk_user(who)
        if (self.sse_path is not None and scope["type"] == "http"
                and scope.get("method") == "GET" and scope.get("path") == self.sse_path):
            return await self._sse_stream(scope, receive, send, who)
        if not viewer and scope["type"] == "http":
            refusal = self._session_refusal(scope, who)
            if refusal:
                return await _plain(send, 429, refusal)
            send = self._watch_sessions(send, who)
        await self.app(scope, receive, _with_nosniff(send))

    # ------------------------------------------------------------------ who

    def _is_viewer(self, path: str) -> bool:
        return path in ("/", self.base) or path.startswith(self.base + "/")

    def _bearer(self, headers: list[tuple[bytes, bytes]]) -> Principal | None:
        if not self.users.required:
            from massgen_mcp.runs.owners import LOCAL

            return LOCAL
        values = [v for k, v in headers if k == b"authorization"]
        if len(values) != 1:
            return None
        scheme, _, given = values[0].decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return None
        return self.users.identify(given.strip())

    def _cookie(self, headers: list[tuple[bytes, bytes]]) -> Principal | None:
        for k, v in headers:
            if k != b"cookie":
                continue
            for part in v.decode("latin-1").split(";"):
                name, _, value = part.strip().partition("=")
                if name == COOKIE and value in self.viewer_sessions:
                    return self.viewer_sessions[value]
        return None

    def _query_token(self, scope: dict[str, Any]) -> Principal | None:
        query = scope.get("query_string", b"").decode("latin-1")
        tokens = [v for k, v in parse_qsl(query, keep_blank_values=True) if k == "token"]
        return self.users.identify(tokens[0]) if len(tokens) == 1 else None

    async def _sign_in(self, scope: dict[str, Any], send: Send, who: Principal) -> None:
        """`?token=` once: a cookie with a random session id, and the same page without it."""
        session = secrets.token_urlsafe(32)
        self.viewer_sessions[session] = who
        while len(self.viewer_sessions) > VIEWER_SESSIONS:
            self.viewer_sessions.popitem(last=False)
        query = scope.get("query_string", b"").decode("latin-1")
        rest = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "token"]
        target = scope.get("path", "/") + (f"?{urlencode(rest)}" if rest else "")
        cookie = (f"{COOKIE}={session}; HttpOnly; SameSite=Strict; Path={self.base}")
        await send({"type": "http.response.start", "status": 303, "headers": [
            (b"location", target.encode("latin-1", "replace")),
            (b"set-cookie", cookie.encode()), (b"cache-control", b"no-store"),
            (b"content-length", b"0"), _NOSNIFF]})
        await send({"type": "http.response.body", "body": b""})

    async def _unauthorized(self, send: Send, viewer: bool) -> None:
        if viewer:
            return await _plain(send, 401, "This server needs its token: open this page once "
                                "with ?token=<your token> (a cookie keeps you signed in)",
                                [(b"www-authenticate", b'Bearer realm="massgen-mcp"')])
        body = json.dumps({"error": "unauthorized", "error_description":
                           "send 'Authorization: Bearer <token>': the server's --token / "
                           "MASSGEN_MCP_TOKEN, the token it printed (kept in its state "
                           "directory's http-token), or yours from its --auth-file"}).encode()
        await _send(send, 401, body, b"application/json",
                    [(b"www-authenticate", b'Bearer realm="massgen-mcp"')])

    # ------------------------------------------------------------------ sessions

    def _session_refusal(self, scope: dict[str, Any], who: Principal) -> str | None:
        """A new MCP session (a POST without a session id) past the user's cap: why not."""
        if scope.get("method") != "POST" or self.live_sessions is None:
            return None
        if any(k == SESSION_HEADER for k, _ in scope.get("headers") or []):
            return None
        live = self.live_sessions()
        for gone in [s for s in self.mcp_sessions if s not in live]:
            del self.mcp_sessions[gone]
        held = sum(1 for name in self.mcp_sessions.values() if name == who.name)
        if held < self.sessions_per_user:
            return None
        return (f"user '{who.name}' already holds {held} open MCP sessions (the limit per "
                "user is --sessions-per-user); close one (DELETE it) or wait for an idle "
                "one to time out")

    async def _sse_stream(self, scope: dict[str, Any], receive: Any, send: Send,
                          who: Principal) -> None:
        """An SSE session lasts as long as its stream: counted while open, capped per user."""
        held = self.sse_streams[who.name]
        if held >= self.sessions_per_user:
            return await _plain(send, 429, f"user '{who.name}' already holds {held} open MCP "
                                "sessions (the limit per user is --sessions-per-user); close "
                                "one (end its stream) first")
        self.sse_streams[who.name] += 1
        try:
            await self.app(scope, receive, _with_nosniff(send))
        finally:
            self.sse_streams[who.name] -= 1
            if self.sse_streams[who.name] <= 0:
                del self.sse_streams[who.name]

    def _watch_sessions(self, send: Send, who: Principal) -> Send:
        async def watching(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                for k, v in message.get("headers") or []:
                    if k.lower() == SESSION_HEADER:
                        self.mcp_sessions.setdefault(v.decode("latin-1"), who.name)
            await send(message)

        return watching


def _sdk_user(who: Principal) -> Any:
    """The caller as the SDK's `AuthenticatedUser`: its session manager then answers another
    user's session id as unknown (a session is used only by the credential that opened it)."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    return AuthenticatedUser(AccessToken(token="", client_id=who.name,
                                         scopes=["admin"] if who.admin else []))


def _with_nosniff(send: Send) -> Send:
    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers") or [])
            if not any(k.lower() == _NOSNIFF[0] for k, _ in headers):
                headers.append(_NOSNIFF)
            message = {**message, "headers": headers}
        await send(message)

    return sending


async def _send(send: Send, status: int, body: bytes, media: bytes,
                extra: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", media), (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"), _NOSNIFF, *(extra or [])]})
    await send({"type": "http.response.body", "body": body})


async def _plain(send: Send, status: int, text: str,
                 extra: list[tuple[bytes, bytes]] | None = None) -> None:
    await _send(send, status, text.encode(), b"text/plain; charset=utf-8", extra)


def front_door_app(routes: list[BaseRoute], *, names: frozenset[str], users: Users,
                   mcp_app: Any = None, viewer_base: str = "/runs",
                   sessions_per_user: int = SESSIONS_PER_USER,
                   live_sessions: Callable[[], set[str]] | None = None,
                   sse_path: str | None = None) -> Starlette:
    """One app behind one `FrontDoor`: `routes` (the viewer's), then the MCP app mounted at
    the root (its lifespan, which runs the SDK's session manager, becomes this app's)."""
    mounted: list[BaseRoute] = [*routes]
    lifespan = None
    if mcp_app is not None:
        mounted.append(Mount("/", app=mcp_app))
        router = getattr(mcp_app, "router", None)
        lifespan_context = getattr(router, "lifespan_context", None)
        if lifespan_context is not None:
            def lifespan(_app: Any) -> Any:
                return lifespan_context(mcp_app)
    return Starlette(routes=mounted, lifespan=lifespan, middleware=[Middleware(
        FrontDoor, names=names, users=users, base=viewer_base,
        sessions_per_user=sessions_per_user, live_sessions=live_sessions, sse_path=sse_path)])
