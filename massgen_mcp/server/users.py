"""The users of an HTTP server: who a bearer token is.

    --auth-file FILE     one principal a line: `NAME SHA256_OF_TOKEN [admin]`
                         (`#` comments and blank lines allowed); only hashes are kept
    --token / MASSGEN_MCP_TOKEN
                         the operator's own token: the user `local`, an admin
    (neither, loopback)  a token is generated once, shown once on stderr and kept 0600 in
                         the state directory (`http-token`), reused at the next start;
                         `--no-token` turns authentication off (loopback only)

`massgen-mcp token new NAME [--admin] [--auth-file FILE]` makes a token and appends its
hash. `Users.identify` is the one place a presented token is compared (constant time).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from massgen_mcp.errors import InputError
from massgen_mcp.runs.owners import LOCAL, LOCAL_NAME, NAME, Principal, in_scope

#: Where the generated loopback token is kept in the state directory.
TOKEN_FILE = "http-token"
_HEX64 = "0123456789abcdef"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_token() -> str:
    return "mgu_" + secrets.token_urlsafe(32)


def read_auth_file(path: Path) -> dict[str, Principal]:
    """Token hash -> principal. A malformed line is an `InputError` naming the line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"--auth-file {path}: cannot read it ({e})") from None
    out: dict[str, Principal] = {}
    names: set[str] = set()
    for number, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"--auth-file {path}, line {number}"
        words = line.split()
        if len(words) not in (2, 3) or (len(words) == 3 and words[2] != "admin"):
            raise InputError(f"{where}: expected 'NAME SHA256_OF_TOKEN [admin]' "
                             "(make lines with `massgen-mcp token new NAME`)")
        name, digest = words[0], words[1].lower()
        if not NAME.match(name):
            raise InputError(f"{where}: '{name[:40]}' is not a user name (letters, digits, "
                             "'_', '.', '@', '-'; at most 64)")
        if name == LOCAL_NAME:
            raise InputError(f"{where}: '{LOCAL_NAME}' is the server's own user (stdio, the "
                             "command line, --token); pick another name")
        if len(digest) != 64 or any(c not in _HEX64 for c in digest):
            raise InputError(f"{where}: the second word must be the SHA-256 of the token in "
                             "hex (64 characters), never the token itself")
        if name in names or digest in out:
            raise InputError(f"{where}: '{name}' or its token hash is listed twice")
        names.add(name)
        out[digest] = Principal(name, admin=len(words) == 3)
    return out


def add_user(path: Path, name: str, admin: bool = False) -> str:
    """Append a new user to `path` (created 0600) and return its token (shown once)."""
    if not NAME.match(name) or name == LOCAL_NAME:
        raise InputError(f"'{name[:40]}' is not a usable user name (letters, digits, '_', "
                         f"'.', '@', '-'; at most 64; not '{LOCAL_NAME}')")
    existing = read_auth_file(path) if path.exists() else {}
    if any(p.name == name for p in existing.values()):
        raise InputError(f"{path} already has a user '{name}'; remove its line first to "
                         "replace its token")
    token = new_token()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(f"{name} {token_hash(token)}{' admin' if admin else ''}\n")
    return token


def loopback_token(state: Path) -> tuple[str, bool]:
    """The state directory's HTTP token, made (0600) when there is none: (token, made now)."""
    path = state / TOKEN_FILE
    try:
        token = path.read_text(encoding="utf-8").strip()
        if token:
            return token, False
    except FileNotFoundError:
        pass
    state.mkdir(parents=True, exist_ok=True)
    token = new_token()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")
    return token, True


@dataclass
class Users:
    """Who may use an HTTP server. `required` false (`--no-token`): everyone is `LOCAL`."""

    required: bool = True
    by_hash: dict[str, Principal] = field(default_factory=dict)

    @classmethod
    def of(cls, token: str | None, auth_file: Path | None = None) -> Users:
        by_hash = read_auth_file(auth_file) if auth_file else {}
        if token:
            by_hash[token_hash(token)] = LOCAL
        return cls(required=True, by_hash=by_hash)

    @classmethod
    def anyone(cls) -> Users:
        return cls(required=False)

    def identify(self, token: str) -> Principal | None:
        """The principal of a presented token; None for any other string. Every stored hash
        is compared, in constant time, whatever matches."""
        digest = token_hash(token).encode()
        found = None
        for known, principal in self.by_hash.items():
            if hmac.compare_digest(digest, known.encode()):
                found = principal
        return found


_asking: ContextVar[Principal] = ContextVar("massgen_asking", default=LOCAL)


def asking() -> Principal:
    """Who sent the MCP request being handled (set by `WhoAsks` for each request, and
    inherited by the work it starts: a task's tool call, a thread)."""
    return _asking.get()


class WhoAsks:
    """Server middleware: each MCP request runs as the principal the HTTP front door found
    for it (`ctx.request`, the HTTP request; stdio and in-memory requests: `LOCAL`). Read
    per request, never per session: a session is a transport detail, the token is who."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any],
                       call_next: CallNext) -> HandlerResult:
        token = _asking.set(in_scope(getattr(ctx.request, "scope", None)))
        try:
            return await call_next(ctx)
        finally:
            _asking.reset(token)
