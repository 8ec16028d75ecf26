"""Reading the JSON that models actually write, and saying what had to be repaired.

Small and local models wrap tool arguments in code fences, put raw newlines or tabs inside
strings, quote with single quotes (Python style), or encode the object twice. A careful human
reads all of these; strict `json.loads` reads none. `loads_lenient` tries the strict reading
first and each repair only when it fails, so well-formed JSON costs nothing extra, and returns
a note naming the repair so the run record says what was changed.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```$", re.S)


def loads_lenient(text: str) -> tuple[Any, str | None]:
    """The JSON value in `text` and a note naming any repair (None when none was needed).

    Raises ValueError (json.JSONDecodeError) with the strict parser's message when no repair
    gives a value.
    """
    try:
        return _unwrap(json.loads(text), None)
    except ValueError as e:
        first_error = e
    notes: list[str] = []
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
        notes.append("removed a code fence")
    for attempt in (_as_is, _outer_object, _single_quotes):
        got = attempt(body)
        if got is not None:
            value, note = got
            if note:
                notes.append(note)
            return _unwrap(value, "; ".join(notes) or None)
    raise first_error


def _unwrap(value: Any, note: str | None) -> tuple[Any, str | None]:
    """A JSON string that itself holds an object (arguments encoded twice) is that object."""
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            inner = json.loads(value, strict=False)
        except ValueError:
            return value, note
        if isinstance(inner, dict):
            return inner, "; ".join(n for n in (note, "decoded arguments encoded twice") if n)
    return value, note


def _as_is(body: str) -> tuple[Any, str | None] | None:
    try:
        return json.loads(body), None
    except ValueError:
        pass
    try:  # raw control characters (newlines, tabs) inside strings
        return json.loads(body, strict=False), "accepted raw control characters in strings"
    except ValueError:
        return None


def _outer_object(body: str) -> tuple[Any, str | None] | None:
    start, end = body.find("{"), body.rfind("}")
    if start == -1 or end <= start or (start == 0 and end == len(body) - 1):
        return None  # no object, or the whole body (already tried)
    got = _as_is(body[start:end + 1])
    if got is None:
        got = _single_quotes(body[start:end + 1])
    if got is None:
        return None
    return got[0], "; ".join(n for n in ("ignored text around the JSON", got[1]) if n)


def _single_quotes(body: str) -> tuple[Any, str | None] | None:
    if "'" not in body:
        return None
    converted = _requote(body)
    if converted is None:
        return None
    try:
        value = json.loads(converted, strict=False)
    except ValueError:
        return None
    return value, "read single-quoted strings"


def _requote(body: str) -> str | None:
    """`body` with its single-quoted strings rewritten as JSON strings (Python literal style:
    `{'a': 'it\\'s'}`), and Python's True/False/None outside strings as JSON's."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch in "'\"":
            j, buf = i + 1, []
            while j < n and body[j] != ch:
                if body[j] == "\\" and j + 1 < n:
                    nxt = body[j + 1]
                    # \' is only an escape in the single-quoted style
                    buf.append(nxt if nxt == "'" else body[j:j + 2])
                    j += 2
                    continue
                buf.append('\\"' if body[j] == '"' else body[j])
                j += 1
            if j >= n:
                return None  # an unterminated string
            inner = "".join(buf)
            out.append('"' + (inner if ch == "'" else body[i + 1:j]) + '"')
            i = j + 1
            continue
        word = re.match(r"True|False|None", body[i:])
        if word and (i == 0 or not body[i - 1].isalnum()):
            out.append({"True": "true", "False": "false", "None": "null"}[word.group()])
            i += len(word.group())
            continue
        out.append(ch)
        i += 1
    return "".join(out)
