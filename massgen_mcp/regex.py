"""Regular expressions compiled on first use. Standard library only.

The hook is a new process for every tool call, and compiling its few hundred patterns took
most of its time, while one command meets only the rules for the programs it names. The
server's start-up pays for the patterns its modules define, too, while most are for runs. A
module-level `lazy(...)` stands for `re.compile(...)` and compiles at its first match.
"""

from __future__ import annotations

import re
from typing import Any, cast


class _Lazy:
    """Compiles at the first attribute asked for, and keeps each one asked for (the bound
    `sub`, `search`, ...) in its own `__dict__`: later uses are a plain attribute lookup, as
    fast as on the compiled pattern (redaction calls `sub` on every string it writes)."""

    def __init__(self, pattern: str, flags: int) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:  # only for what is not kept yet
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        value = getattr(self._compiled, name)
        self.__dict__[name] = value
        return value


def lazy(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`, done when the pattern is first used."""
    return cast("re.Pattern[str]", _Lazy(pattern, flags))
