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
    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str, flags: int) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:  # only for what the slots do not hold
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return getattr(self._compiled, name)


def lazy(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`re.compile(pattern, flags)`, done when the pattern is first used."""
    return cast("re.Pattern[str]", _Lazy(pattern, flags))
