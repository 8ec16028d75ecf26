"""Why a run stops before its agents are done: the one stop state of a run.

A cancel (this process, another replica, a worker's front end), a server shutdown, a budget
and the time limit all write here, and only the first one counts; the orchestrator reads it
for the run's status, and its outermost cancel scope is bound here, so a stop asked before
the run started takes effect the moment it starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import anyio

    from massgen_mcp.coordination.result import RunStatus


class RunStop:
    def __init__(self) -> None:
        #: How the run ends because of the stop (cancelled, interrupted, timeout,
        #: budget_exceeded); None while nobody asked it to stop.
        self.status: RunStatus | None = None
        #: What the stop says beyond its status (which budget ran out, ...).
        self.detail: str | None = None
        self._scope: anyio.CancelScope | None = None

    @property
    def requested(self) -> bool:
        return self.status is not None

    def request(self, status: RunStatus = "cancelled", detail: str | None = None) -> None:
        """Stop the run now (the first request sets the status; any later one only makes
        sure the run stops)."""
        if self.status is None:
            self.status, self.detail = status, detail
        if self._scope is not None:
            self._scope.cancel()

    def bind(self, scope: anyio.CancelScope) -> None:
        """The run's outermost scope: a stop asked before this is honoured now."""
        self._scope = scope
        if self.status is not None:
            scope.cancel()
