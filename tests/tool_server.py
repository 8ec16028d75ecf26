"""A small MCP tool server that misbehaves on demand, for the agent-tools tests.

Run it as ``python tests/tool_server.py [--startup ok|crash|hang] [--ignore-sigterm]
[--http PORT] [--name NAME]``.
Over stdio by default; ``--http PORT`` serves streamable HTTP on 127.0.0.1:PORT/mcp.
It writes one line to stderr at start-up so tests can check where stderr goes.
"""

# No `from __future__ import annotations` here: the tools below are defined inside build()
# so the SDK is imported only after the start-up failure modes, and MCPServer resolves
# string annotations against module globals, where those local names do not exist.

import argparse
import os
import signal
import sys
import time
from typing import Any


def build(name: str) -> Any:
    # Imported here so the start-up failure modes fail fast, before the SDK's import cost.
    import anyio
    from mcp.server.mcpserver import Image, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import BaseModel

    class Point(BaseModel):
        x: int
        y: int

    server = MCPServer(name, log_level="WARNING")
    calls = 0

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def fail(message: str = "boom") -> str:
        """Always fails with the given message."""
        raise ToolError(message)

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep, then answer."""
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    meeting: dict[str, Any] = {"arrived": 0}

    @server.tool()
    async def meet(n: int) -> str:
        """Wait (up to 30 s) until `n` calls of meet are in progress at once: proves calls
        run concurrently without timing them."""
        if "event" not in meeting:
            meeting["event"] = anyio.Event()
        meeting["arrived"] += 1
        if meeting["arrived"] >= n:
            meeting["event"].set()
        with anyio.move_on_after(30):
            await meeting["event"].wait()
            return f"met {n}"
        return f"alone: {meeting['arrived']} of {n} arrived"

    @server.tool()
    def crash() -> str:
        """Kill this server process at once."""
        os._exit(3)

    @server.tool()
    async def hang() -> str:
        """Never answers."""
        await anyio.sleep_forever()
        return "unreachable"

    @server.tool()
    def env_keys() -> str:
        """Names of the environment variables this process sees, comma separated."""
        return ",".join(sorted(os.environ))

    @server.tool()
    def counter() -> int:
        """How many times this tool was called in this process (per-process state)."""
        nonlocal calls
        calls += 1
        return calls

    @server.tool()
    def pid() -> int:
        """This server's process id."""
        return os.getpid()

    @server.tool()
    def big(size: int) -> str:
        """A text of `size` characters."""
        return "x" * size

    @server.tool(structured_output=True)
    def point(x: int, y: int) -> Point:
        """A structured result."""
        return Point(x=x, y=y)

    @server.tool()
    def picture() -> Image:
        """A tiny image."""
        return Image(data=b"\x89PNG\r\n\x1a\n0000", format="png")

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--startup", choices=["ok", "crash", "hang"], default="ok")
    parser.add_argument("--http", type=int, default=0)
    parser.add_argument("--name", default="test-tools")
    parser.add_argument("--ignore-sigterm", action="store_true")
    args = parser.parse_args()
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print(f"tool_server {args.name} starting (pid {os.getpid()})", file=sys.stderr, flush=True)
    if args.startup == "crash":
        token = os.environ.get("TOOL_TOKEN", "")  # a careless server echoing its secret
        print(f"tool_server: told to crash before serving (token {token})", file=sys.stderr,
              flush=True)
        sys.exit(7)
    if args.startup == "hang":
        time.sleep(3600)
    server = build(args.name)
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
