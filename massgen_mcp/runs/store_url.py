"""`--store URL`: reading and checking the URL of the store that keeps the run records.

No URL: the files under the state directory (`RunStore`), exactly as without this option.
`redis://HOST:PORT/DB`, `rediss://...` (TLS), `redis://:PASSWORD@HOST/DB`,
`redis://USER:PASSWORD@HOST/DB`, `unix:///path/redis.sock?db=N`: the Redis store.

A bad URL or an unreachable Redis stops the command at start with an error that names the
URL with its password replaced by `***`, and says what to fix. The password is never
logged.
"""

from __future__ import annotations

from urllib.parse import parse_qs, quote, unquote, urlsplit, urlunsplit

from massgen_mcp.errors import ConfigError
from massgen_mcp.redaction import Redactor

REDIS_SCHEMES = ("redis", "rediss", "unix")
EXAMPLES = ("redis://127.0.0.1:6379/0, rediss://:PASSWORD@HOST:6380/0 or "
            "unix:///run/redis/redis.sock?db=0")


def url_password(url: str) -> str | None:
    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return unquote(password) if password else None


def masked_url(url: str) -> str:
    """`url` with its password (if any) replaced by `***`: what messages and logs show."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<unreadable URL>"
    if not password:
        return url
    user = quote(unquote(parts.username or ""), safe="")
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if _port(parts) else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _port(parts: object) -> int | None:
    try:
        return parts.port  # type: ignore[attr-defined]
    except ValueError:
        return None


def check_store_url(url: str) -> str:
    """The URL if it names a Redis the client can try; else a `ConfigError` saying why."""
    shown = masked_url(url)

    def bad(problem: str) -> ConfigError:
        return ConfigError(f"--store {shown}: {problem}; give a URL like {EXAMPLES}")

    if not isinstance(url, str) or not url.strip():  # (None/"" never get here: files)
        raise bad("the URL is empty")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as e:
        if "out of range" in str(e):
            raise bad("its port is out of range (1-65535)") from None
        raise bad(f"it is not a URL ({e})") from None
    if parts.scheme not in REDIS_SCHEMES:
        raise bad(f"'{parts.scheme or url}' is not a store this server knows (redis://, "
                  "rediss:// or unix:// for Redis; leave --store out for the files in the "
                  "state directory)")
    if parts.scheme == "unix":
        if not parts.path:
            raise bad("a unix:// URL needs the socket's path (unix:///path/redis.sock)")
        db = parse_qs(parts.query).get("db", ["0"])[-1]
    else:
        if not parts.hostname:
            raise bad("the host is missing")
        if port is not None and not 0 < port < 65536:
            raise bad(f"port {port} is out of range")
        db = parts.path.lstrip("/") or "0"
    if not db.isdigit():
        raise bad(f"the database number '{db}' is not a number (0-15 on a default Redis)")
    return url.strip()


def scrub(url: str, text: str) -> str:
    """`text` (an error from the Redis client, say) without the URL's password, however
    short: the URL is shown masked, the password itself as `***`."""
    password = url_password(url)
    text = text.replace(url, masked_url(url))
    if password:
        text = text.replace(password, "***")
        text = Redactor([password]).text(text)
    return text
