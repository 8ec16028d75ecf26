"""JSON-RPC 2.0 as lines on a CLI's stdin/stdout: the client side, for CLIs that serve it
(Gemini CLI's ``--acp``, the Agent Client Protocol; Codex's ``app-server``).

The CLI is the server of our requests (``initialize``, ``session/new``, ``turn/start``, ...)
and the client of its own (permission and approval requests); while we wait, its
notifications and requests are handed to the caller's callbacks.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from massgen_mcp.backends.cli._base import TurnState
from massgen_mcp.backends.cli._live import NEW_SYSTEM, StreamingCliBackend
from massgen_mcp.backends.cli._process import CliProcess
from massgen_mcp.errors import TransientBackendError

Notify = Callable[[str, dict[str, Any]], None]
Serve = Callable[[str, dict[str, Any]], dict[str, Any] | None]  # None: method not found


def obj(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (what a peer sends is not trusted)."""
    return value if isinstance(value, dict) else {}


class RpcError(Exception):
    """The CLI answered a request with a JSON-RPC error."""


class RpcClient:
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

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        await self.proc.send({"jsonrpc": "2.0", "method": method,
                              **({"params": params} if params is not None else {})})

    async def wait(self, rid: int | None, notify: Notify | None = None,
                   serve: Serve | None = None,
                   done: Callable[[], bool] | None = None) -> dict[str, Any]:
        """The result of request `rid` (or, with `rid` None, {} once `done()` says so after a
        notification); RpcError on an error answer, EOFError when the CLI exits first.
        Notifications and the CLI's own requests meanwhile go to the callbacks."""
        if rid is not None and rid in self._answered:
            return self._result(self._answered.pop(rid))
        async for msg in self.proc.events():
            if "method" in msg:
                params = obj(msg.get("params"))
                if "id" not in msg:
                    if notify is not None:
                        notify(str(msg["method"]), params)
                    if rid is None and done is not None and done():
                        return {}
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
            raise RpcError(str(err.get("message") or err or "error"))
        result = msg.get("result")
        return result if isinstance(result, dict) else {}


class RpcCliBackend(StreamingCliBackend):
    """A long-lived CLI spoken to in JSON-RPC: ``initialize`` when the process starts (its
    start-up happens there, off any turn for a standby), a conversation of its own per run
    (opened on the run's first turn, in the run's workspace, so any standby fits any run
    unless `fits` says otherwise), one request per turn. Subclasses: `initialize_params`,
    `open` (the conversation; sets `session_id`), `prompt` (one turn)."""

    can_move = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._rpc: RpcClient | None = None
        self._init_id: int | None = None  # `initialize`, sent when the process started

    # ------------------------------------------------------------------ for subclasses

    def initialize_params(self) -> dict[str, Any]:
        raise NotImplementedError

    async def initialized(self, rpc: RpcClient) -> None:
        """After the answer to ``initialize`` (Codex wants a notification)."""

    async def open(self, rpc: RpcClient, system_text: str, tools_file: Path) -> str:
        """Open this run's conversation; returns the first prompt's prefix (the system text
        when the protocol has no place for it, else "")."""
        raise NotImplementedError

    async def prompt(self, rpc: RpcClient, prompt: str, state: TurnState) -> None:
        raise NotImplementedError

    def check(self) -> None:
        """Raise a PermanentBackendError for a setting the CLI cannot take (before it starts)."""

    def fits(self, tools_file: Path) -> bool:
        """Whether a standby started from `_warm_plan` can serve this run."""
        return True

    # ------------------------------------------------------------------ the process

    async def _start_live(self, exe: str, system_text: str, tools_file: Path,
                          resume: str | None, key: str) -> None:
        await super()._start_live(exe, system_text, tools_file, None, key)
        assert self._live is not None
        self._rpc = RpcClient(self._live)
        with contextlib.suppress(OSError):  # gone at once: the turn says why
            self._init_id = await self._rpc.send("initialize", self.initialize_params())
        self.session_id = None  # conversations are opened per run

    async def _stop_live(self) -> None:
        await super()._stop_live()
        self._rpc, self._init_id = None, None
        self.session_id = None  # the conversation lived in the process

    async def started(self) -> None:
        """Until the CLI has answered ``initialize`` (its start-up is over); call it only
        between turns."""
        if self._rpc is not None and self._init_id is not None:
            await self._rpc.wait(self._init_id)
            self._init_id = None
            await self.initialized(self._rpc)

    # ------------------------------------------------------------------ a turn

    async def _invoke(self, exe: str, prompt: str, system_text: str, tools_file: Path,
                      on_call: Any, resume: str | None) -> TurnState:
        self.check()
        if self._moving:  # a standby taken by this run: used as it is if it fits and runs
            self._moving = False
            if (self._live is None or self._live.returncode is not None
                    or not self.fits(tools_file)):
                await self._stop_live()
            else:
                self.started_warm = True
                self.first_plan = self._warm_plan
        if self._live is not None and self._live.returncode is not None:
            await self._stop_live()
        if resume and self.session_id is None:
            # The conversation was lost with its process: the caller retries with everything.
            return TurnState(error="the session ended with its process")
        if self._live is None:
            await self._start_live(exe, system_text, tools_file, None,
                                   json.dumps([exe, tools_file.read_text(encoding="utf-8")]))
        state = TurnState()
        finished = False
        try:
            async with self._bridge.serving(on_call):
                with anyio.move_on_after(self.opts.timeout):
                    try:
                        await self._turn(prompt, system_text, tools_file, state)
                    except (RpcError, EOFError, OSError) as e:
                        tail = self._live.stderr_tail() if self._live is not None else ""
                        state.error = str(e) + (f": {tail}" if tail and not isinstance(
                            e, RpcError) else "")
                    finished = True
        finally:
            if not finished or state.error:
                await self._stop_live()  # the next turn opens a new conversation
        if not finished:
            raise TransientBackendError(
                f"{self.display} gave no result within {self.opts.timeout:g}s (stopped): "
                "raise backend.request_timeout_seconds, or check that its endpoint answers",
                provider=self.provider, model=self.model)
        return state

    async def _turn(self, prompt: str, system_text: str, tools_file: Path,
                    state: TurnState) -> None:
        await self.started()
        rpc = self._rpc
        if rpc is None:
            raise EOFError("the CLI is not running")
        if self.session_id is None:
            prefix = await self.open(rpc, system_text, tools_file)
            prompt = f"{prefix}\n\n{prompt}" if prefix else prompt
            self._live_system = system_text
        elif system_text != self._live_system:
            prompt = f"{NEW_SYSTEM}\n{system_text}\n</instructions>\n\n{prompt}"
        await self.prompt(rpc, prompt, state)
        state.session_id = self.session_id

    def user_message(self, prompt: str) -> dict[str, Any]:  # not used: prompts are requests
        raise NotImplementedError

    def on_event(self, event: dict[str, Any], state: TurnState) -> None:  # likewise
        raise NotImplementedError
