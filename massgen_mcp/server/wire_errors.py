"""Replies to stdio messages the SDK could not read, so a client is never left waiting.

The SDK's stdio reader hands the session an exception for a line it cannot parse (malformed
JSON, or JSON nested deeper than its parser's recursion limit: a request nested 200,000 deep)
and the session drops it: the client gets no reply at all. JSON-RPC 2.0 asks for an error
reply: -32700 (parse error) or -32600 (invalid request), with the request's id when it can be
read (a bounded scan of the line's top level), else `null`.
"""

from __future__ import annotations

import json
import re
from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
SCAN_CHARS = 65_536  # how much of an unreadable line is searched for its id
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


def error_reply(exc: Exception) -> dict[str, Any] | None:
    """The JSON-RPC error to send for a line the SDK could not read (None: nothing to answer,
    e.g. a malformed *response* of ours, which must not be answered)."""
    errors = _errors(exc)
    if errors is None:
        return None
    if any(e.get("type") == "json_invalid" for e in errors):
        raw = next((e["input"] for e in errors if isinstance(e.get("input"), str)), "")
        return _reply(top_level_id(str(raw)), PARSE_ERROR,
                      "Parse error: the message is not valid JSON, or is nested too deeply")
    for e in errors:
        message = e.get("input")
        if (isinstance(message, dict) and "method" in message
                and isinstance(message.get("id"), str | int)
                and not isinstance(message.get("id"), bool)):
            return _reply(message["id"], INVALID_REQUEST,
                          "Invalid Request: the message is not a JSON-RPC request this "
                          "server can read")
    return None


def _errors(exc: Exception) -> list[dict[str, Any]] | None:
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    try:
        found = errors(include_url=False)
    except Exception:
        return None
    return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else None


def _reply(request_id: str | int | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def top_level_id(text: str) -> str | int | None:
    """The `id` member of the top-level object of a JSON text, read without parsing the rest
    (only the first SCAN_CHARS characters); None if there is none to be found."""
    depth = 0
    key: str | None = None
    expect_value = False
    last: str | None = None
    for m in _TOKEN.finditer(text, 0, min(len(text), SCAN_CHARS)):
        tok = m.group()
        if tok in "{[":
            depth += 1
            expect_value = False
        elif tok in "}]":
            depth -= 1
            if depth <= 0:
                return None
        elif tok == ":":
            expect_value = depth == 1 and last is not None and last.startswith('"')
            key = _string(last) if expect_value and last else None
        elif tok == ",":
            expect_value = False
        elif depth == 1 and expect_value and key == "id":
            return _scalar_id(tok)
        last = tok
    return None


def _string(tok: str) -> str | None:
    try:
        value = json.loads(tok)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _scalar_id(tok: str) -> str | int | None:
    try:
        value = json.loads(tok)
    except ValueError:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return value
