"""Destructive SQL in a text: DROP/TRUNCATE, or DELETE/UPDATE without a WHERE that
filters. Whoever hands SQL to a database (a shell's `-c`, a file it runs, an HTTP body, an
MCP tool's `query`) is judged by this one reading. Standard library only.
"""

from __future__ import annotations

import re

from massgen_mcp.hook.policy import Finding
from massgen_mcp.regex import lazy

_SQL_DELETE = lazy(r"\bDELETE\s+FROM\s+[\w.\"`\[\]]+(?P<rest>[^;]*)", re.I)
_SQL_UPDATE = lazy(r"\bUPDATE\s+[\w.\"`\[\]]+\s+SET\b(?P<rest>[^;]*)", re.I)
_SQL_DROP = lazy(
    r"\b(DROP\s+(TABLE|DATABASE|SCHEMA|VIEW|INDEX|COLLECTION|KEYSPACE|USER|ROLE)\b"
    r"|TRUNCATE\s+(TABLE\s+)?[\w.\"`\[\]]+|ALTER\s+TABLE\s+\S+\s+DROP\b)",
    re.I,
)
_QUOTES = " ;'\"\n"
#: A WHERE that holds for every row (`WHERE 1=1`, `WHERE true`) is no WHERE.
_WHERE = lazy(r"\bWHERE\s+(?!(1\s*=\s*1|true|1|'(\w*)'\s*=\s*'\2')\s*(;|$|--|/\*|['\"]))",
                    re.I)
#: A client's `--command=SQL`: its dashes start an option, not a SQL comment.
_LONG_OPTION = lazy(r"(?:^|(?<=\s))--[a-z][\w-]*=", re.I)
#: A bare long option (`--host h --query=DROP ...`): left out of the text, not a comment.
BARE_LONG = lazy(r"--[a-z][\w-]*", re.I)
_SQL_COMMENT = lazy(r"/\*.*?\*/|--[^\n]*|#[^\n]*", re.S)


def sql_finding(text: str) -> Finding | None:
    """Destructive SQL in `text`: DROP/TRUNCATE, or DELETE/UPDATE without WHERE.

    Comments are removed first, the way the server reads the statement (`DROP/**/TABLE`
    is `DROP TABLE`; a `WHERE` after `--` is no WHERE)."""
    text = _SQL_COMMENT.sub(" ", _LONG_OPTION.sub(" ", text))
    match = _SQL_DROP.search(text)
    if match:
        statement = match.group(0).strip(_QUOTES)
        return Finding("destruction", "sql-drop", f"runs destructive SQL `{statement}`")
    for pattern, verb in ((_SQL_DELETE, "DELETE"), (_SQL_UPDATE, "UPDATE")):
        for m in pattern.finditer(text):
            if not _WHERE.search(m.group("rest")):
                statement = m.group(0)[:60].strip(_QUOTES)
                return Finding("destruction", "sql-no-where",
                               f"runs {verb} without WHERE: `{statement}`")
    return None
