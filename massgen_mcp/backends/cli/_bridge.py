"""The server end of the workflow MCP server: a Unix socket that receives a CLI's
`new_answer` / `vote` calls while its turn runs.

The socket lives in a private directory (mode 0700) under the system temp dir, since Unix
socket paths are limited to ~100 bytes and run directories can be deeper than that.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from massgen_mcp.messages import ToolCall

# Called for every call that arrives: returns (text the CLI sees, is_error).
OnCall = Callable[[ToolCall], tuple[str, bool]]
MAX_CALL_BYTES = 4 * 1024 * 1024


def workflow_server_argv(tools_file: Path, socket_path: Path) -> list[str]:
    """The command line of the workflow MCP server (a stdlib-only script: fast to start)."""
    script = Path(__file__).resolve().parents[2] / "tools" / "workflow_server.py"
    return [sys.executable, "-S", str(script), "--tools", str(tools_file),
            "--socket", str(socket_path)]


class CallBridge:
    """A private Unix socket; while `serving(on_call)` is open, each call goes to `on_call`."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="massgen-cli-"))
        self.socket_path = self.dir / "w.sock"
        self._listener: anyio.abc.SocketListener | None = None
        self._seq = 0

    async def listen(self) -> None:
        """Create the socket (connections queue until `serving`)."""
        if self._listener is None:
            self._listener = await anyio.create_unix_listener(self.socket_path)
            self.socket_path.chmod(0o600)

    @contextlib.asynccontextmanager
    async def serving(self, on_call: OnCall) -> AsyncIterator[None]:
        await self.listen()
        listener = self._listener
        assert listener is not None

        async def handle(stream: anyio.abc.SocketStream) -> None:
            async with stream:
                data = b""
                with anyio.move_on_after(30):
                    while not data.endswith(b"\n") and len(data) < MAX_CALL_BYTES:
                        try:
                            data += await stream.receive()
                        except (anyio.EndOfStream, anyio.BrokenResourceError):
                            break
                text, is_error = self._dispatch(data, on_call)
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await stream.send(
                        (json.dumps({"text": text, "is_error": is_error}) + "\n").encode())

        async with anyio.create_task_group() as tg:
            tg.start_soon(_serve, listener, handle)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()

    def _dispatch(self, data: bytes, on_call: OnCall) -> tuple[str, bool]:
        try:
            msg: Any = json.loads(data)
        except ValueError:
            return "the call could not be read; call the tool again", True
        if not isinstance(msg, dict):
            return "the call could not be read; call the tool again", True
        self._seq += 1
        args = msg.get("arguments")
        error = None if isinstance(args, dict) else "the arguments must be a JSON object"
        call = ToolCall(f"cli_{self._seq}", str(msg.get("name", "")),
                        args if isinstance(args, dict) else {}, error)
        return on_call(call)

    async def aclose(self) -> None:
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.aclose()
            self._listener = None
        shutil.rmtree(self.dir, ignore_errors=True)


async def _serve(listener: anyio.abc.SocketListener,
                 handle: Callable[[anyio.abc.SocketStream], Coroutine[Any, Any, None]]) -> None:
    async with anyio.create_task_group() as tg:
        while True:
            stream = await listener.accept()
            tg.start_soon(handle, stream)
