"""The client side of the Agent Client Protocol (ACP): JSON-RPC 2.0 as lines on a CLI's
stdin/stdout, for a CLI that serves it (Gemini CLI's ``--acp``).

The CLI is the server of our requests (``initialize``, ``session/new``, ``session/prompt``)
and the client of its own (``session/request_permission``); while one of ours is pending,
its notifications (``session/update``) and requests are handed to the caller's callbacks.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from massgen_mcp.backends.cli._process import CliProcess

Notify = Callable[[str, dict[str, Any]], None]
Serve = Callable[[str, dict[str, Any]], dict[str, Any] | None]  # None: method not found


def obj(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (what a peer sends is not trusted)."""
    return value if isinstance(value, dict) else {}


class AcpError(Exception):
    """The CLI answered a request with a JSON-RPC error."""


class AcpClient:
    """Requests over one CLI process; one at a time (the backend's turns are sequential)."""

    def __init__(self, proc: CliProcess) -> None:
        self.proc = proc
        self._ids = itertools.count(1)
        self._answered: dict[int, dict[str, Any]] = {}

    async def send(self, method: str, params: dict[str, Any]) -> int:
        """Send a request and return its id, without waiting (see `wait`)."""
        rid = next(self._ids)
        await self.proc.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    async def wait(self, rid: int, notify: Notify | None = None,
                   serve: Serve | None = None) -> dict[str, Any]:
        """The result of request `rid`; AcpError on an error answer, EOFError when the CLI
        exits first. Notifications and the CLI's own requests meanwhile go to the callbacks."""
        if rid in self._answered:
            return self._result(self._answered.pop(rid))
        async for msg in self.proc.events():
            if "method" in msg:
                params = obj(msg.get("params"))
                if "id" not in msg:
                    if notify is not None:
                        notify(str(msg["method"]), params)
                    continue
                answer = serve(str(msg["method"]), params) if serve is not None else None
                reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
                if answer is None:
                    reply["error"] = {"code": -32601, "message": "method not found"}
                else:
                    reply["result"] = answer
                await self.proc.send(reply)
            elif isinstance(msg.get("id"), int):
                if msg["id"] == rid:
                    return self._result(msg)
                self._answered[msg["id"]] = msg  # a request sent earlier without waiting
        raise EOFError("the CLI exited")

    async def request(self, method: str, params: dict[str, Any], notify: Notify | None = None,
                      serve: Serve | None = None) -> dict[str, Any]:
        return await self.wait(await self.send(method, params), notify, serve)

    @staticmethod
    def _result(msg: dict[str, Any]) -> dict[str, Any]:
        if "error" in msg:
            err = msg["error"] if isinstance(msg["error"], dict) else {}
            raise AcpError(str(err.get("message") or err or "error"))
        result = msg.get("result")
        return result if isinstance(result, dict) else {}
