"""The one redaction every sink uses: run records, tool-server logs, plans, checkpoint records,
CLI output and tool results.

A `Redactor` knows the configured keys and replaces with `***`:

- each key exactly, and its URL-encoded and JSON-escaped forms (a key in a query string or a
  logged request body);
- any piece of 8 or more characters of a key (a truncated or wrapped key in an error text);
- anything shaped like a provider key even when we were never told the key (defence in depth).

It also makes text safe to store: a lone surrogate (a provider can send `"\\ud800"`) becomes
U+FFFD, so no record fails to encode.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus

from massgen_mcp.regex import lazy

if TYPE_CHECKING:
    from massgen_mcp.config.team import Team

KEY_SHAPES = lazy(
    r"\b(?:sk-ant-[A-Za-z0-9_-]{16,}|sk-[A-Za-z0-9_*-]{8,}|AIza[0-9A-Za-z_-]{20,}|"
    r"xai-[A-Za-z0-9]{8,}|gsk_[A-Za-z0-9]{8,})")
MASK = "***"
PIECE = 8  # the shortest run of a key's characters that is redacted on its own
_CACHE_FROM = 256  # strings this long are remembered once redacted
_CACHE_SIZE = 512
_MIN_SECRET = 6  # shorter values (a port, "none") would redact ordinary text
_SURROGATE = lazy(r"[\ud800-\udfff]")
# Variables in a tool server's `env` whose values are secrets (also redacted in its logs).
_SECRET_NAME = lazy(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.I)


def safe_text(s: str) -> str:
    """`s` with lone surrogates replaced, so it encodes as UTF-8."""
    return _SURROGATE.sub("\ufffd", s)


class Redactor:
    """Replaces configured keys (whole, encoded, or any 8+ character piece) and key-shaped
    strings with `***`."""

    def __init__(self, secrets: Iterable[str] | None = None) -> None:
        keys = {k for k in (secrets or ()) if isinstance(k, str) and len(k) >= _MIN_SECRET}
        self.secrets = frozenset(keys)
        forms: set[str] = set()
        for k in keys:
            forms |= {k, quote(k, safe=""), quote_plus(k), json.dumps(k)[1:-1]}
        self.known = sorted(forms, key=len, reverse=True)
        self._cache: dict[str, str] = {}
        self._grams = {f[i:i + PIECE] for f in forms if len(f) >= PIECE
                       for i in range(len(f) - PIECE + 1)}
        # Pieces can only lie in runs of the keys' own characters: find those runs first
        # (fast, in the regex engine), then look their 8-character windows up in a set.
        alphabet = "".join(sorted({c for g in self._grams for c in g}))
        self._runs = re.compile(f"[{re.escape(alphabet)}]{{{PIECE},}}") if alphabet else None

    def extended(self, more: Iterable[str]) -> Redactor:
        """A redactor for these secrets and `more`."""
        return Redactor([*self.secrets, *more])

    def text(self, s: str) -> str:
        if len(s) < _CACHE_FROM:
            return self._text(s)
        # status.json is rewritten with the same long answers many times in a run.
        done = self._cache.get(s)
        if done is None:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.pop(next(iter(self._cache)))
            done = self._cache[s] = self._text(s)
        return done

    def _text(self, s: str) -> str:
        s = safe_text(s)
        for k in self.known:
            if k in s:
                s = s.replace(k, MASK)
        if self._runs is not None:
            s = self._mask_pieces(s)
        return KEY_SHAPES.sub(MASK, s)

    def _mask_pieces(self, s: str) -> str:
        assert self._runs is not None
        spans: list[list[int]] = []
        grams = self._grams
        for run in self._runs.finditer(s):
            token, base = run.group(), run.start()
            for i in range(len(token) - PIECE + 1):
                if token[i:i + PIECE] in grams:
                    start, end = base + i, base + i + PIECE
                    if spans and start <= spans[-1][1]:
                        spans[-1][1] = end
                    else:
                        spans.append([start, end])
        if not spans:
            return s
        out, at = [], 0
        for start, end in spans:
            out += [s[at:start], MASK]
            at = end
        out.append(s[at:])
        return "".join(out)

    def json(self, obj: Any, **dumps: Any) -> str:
        """`obj` as JSON text, redacted (the form every record file is written in)."""
        return json.dumps(self.value(obj), ensure_ascii=False, **dumps)

    def value(self, obj: Any) -> Any:
        """A JSON-like value with every string redacted (keys of mappings included); other
        objects become their redacted `str()`."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, Mapping):
            return {self.value(k): self.value(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.value(v) for v in obj]
        if obj is None or isinstance(obj, bool | int | float):
            return obj
        return self.text(str(obj))


_URL_PASSWORD = lazy(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:([^/\s@]+)@")
_BEARER = lazy(r"\b(?:Bearer|Basic|token)\s+([A-Za-z0-9._~+/=-]{8,})", re.I)


def secret_args(args: Iterable[str]) -> list[str]:
    """The secrets on a tool server's command line: values of secret-named options
    (`--api-key=X`, `--token X`, `-p X` is not guessed), secret-named `NAME=X` assignments,
    passwords in URLs (`https://user:X@host`) and bearer tokens (`Authorization: Bearer X`)."""
    found: list[str] = []
    items = [a for a in args if isinstance(a, str)]
    for i, arg in enumerate(items):
        name, eq, value = arg.partition("=")
        if eq and value and _SECRET_NAME.search(name):
            found.append(value)
        elif (arg.startswith("-") and not eq and _SECRET_NAME.search(arg)
              and i + 1 < len(items) and not items[i + 1].startswith("-")):
            found.append(items[i + 1])
        found += _URL_PASSWORD.findall(arg)
        found += _BEARER.findall(arg)
    return [f for f in found if len(f) >= _MIN_SECRET]


#: The server's own secrets (not a provider's): its HTTP token, cloud credentials, tokens the
#: operator's shell holds. Read from the process environment as well as the run's.
SERVER_SECRET_VARS = ("MASSGEN_MCP_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                      "GITHUB_TOKEN", "GH_TOKEN", "HF_TOKEN", "REDIS_PASSWORD")
#: Variables holding a URL whose password is a secret (the Redis store's).
_URL_VARS = ("MASSGEN_MCP_STORE", "REDIS_URL")
# Secrets the process learned another way (`--token`, `--store redis://:pw@...`).
_PROCESS_SECRETS: set[str] = set()


def add_process_secret(value: str | None) -> None:
    """Redact `value` everywhere from now on (a token or password given as an option)."""
    if value and len(value) >= _MIN_SECRET:
        _PROCESS_SECRETS.add(value)


def server_secrets(env: Mapping[str, str] | None = None) -> list[str]:
    """The server's own secrets: `SERVER_SECRET_VARS`, store URL passwords, and those given
    as options (`add_process_secret`), from `env` and the process environment."""
    import os

    found = list(_PROCESS_SECRETS)
    for source in (env, os.environ):
        if source is None:
            continue
        found += [v for name in SERVER_SECRET_VARS if (v := source.get(name))]
        for name in _URL_VARS:
            url = source.get(name)
            if url:
                found += _URL_PASSWORD.findall(url)
    return [f for f in found if isinstance(f, str) and len(f) >= _MIN_SECRET]


def configured_secrets(team: Team | None = None, env: Mapping[str, str] | None = None
                       ) -> list[str]:
    """Every key this process was configured with: the team's API keys, the provider key
    variables of the environment, the secrets of the team's tool servers (secret-named
    `env` and `headers`, and what `secret_args` finds in their `args` and `url`), and the
    server's own (`server_secrets`: its HTTP token, AWS keys, the store's password)."""
    from massgen_mcp.config.providers import PROVIDERS

    found: list[str] = server_secrets(env)
    if env is not None:
        for provider in PROVIDERS.values():
            for name in provider.key_env:
                value = env.get(name)
                if value:
                    found.append(value)
    if team is not None:
        for agent in team.agents:
            if agent.api_key is not None:
                found.append(agent.api_key.get_secret_value())
            for server in agent.backend.servers():
                found += [v for k, v in server.env.items() if _SECRET_NAME.search(k)]
                found += [v for k, v in server.headers.items() if _SECRET_NAME.search(k)]
                found += secret_args([*server.args, server.url or "",
                                      *(f"{k}: {v}" for k, v in server.headers.items())])
    return found


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """One-off redaction of `text` (for callers that hold only a key or two)."""
    return Redactor(secrets).text(text)


# ---------------------------------------------------------------------------- logging

_LOG_REDACTOR: Redactor | None = None


def install_log_redaction(secrets: Iterable[str]) -> None:
    """Redact every log record of this process from now on, whichever logger or handler:
    `--log-level DEBUG` makes the SDKs log request bodies (the task, answers, headers).

    A record factory, not a handler filter, so handlers added later are covered too. Each
    call adds `secrets` to those already redacted. Only records a logger emits pay for it."""
    global _LOG_REDACTOR
    import logging

    if _LOG_REDACTOR is None:
        _LOG_REDACTOR = Redactor([*secrets, *server_secrets()])
        make = logging.getLogRecordFactory()

        def redacted(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = make(*args, **kwargs)
            redactor = _LOG_REDACTOR
            if redactor is None:
                return record
            try:
                text = record.getMessage()
            except Exception:  # a malformed record: logging reports it itself later
                return record
            record.msg, record.args = redactor.text(text), None
            if record.exc_info and not record.exc_text:
                record.exc_text = redactor.text(logging.Formatter().formatException(
                    record.exc_info))
            return record

        logging.setLogRecordFactory(redacted)
        return
    new = set(secrets) | set(server_secrets())
    if not new <= _LOG_REDACTOR.secrets:
        _LOG_REDACTOR = _LOG_REDACTOR.extended(new)
