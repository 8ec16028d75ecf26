"""The small MCP server that hands `new_answer` / `vote` to a coding-agent CLI.

A CLI agent (Claude Code, Codex, Gemini CLI) starts this as a stdio MCP server. It lists the
workflow tools of the agent's current turn (read from ``--tools FILE``) and forwards each call
over a Unix socket (``--socket PATH``) to the massgen-mcp process that runs the CLI, where the
call becomes the agent's `Turn` like any backend's tool call; the reply it gets back is the
tool result the CLI sees.

Standard library only, run as a script (not through the package): the CLI waits for its MCP
servers before its first model request, and importing the MCP SDK costs ~1-2 s here against
~0.05 s for this file. It speaks MCP's stdio transport (one JSON-RPC message per line) and
only what a tool server needs: initialize, ping, tools/list, tools/call.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from typing import Any

PROTOCOLS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
CALL_TIMEOUT = 600.0  # the runner answers at once; this only bounds a runner that died


def _reply(msg_id: Any, result: Any = None, error: dict[str, Any] | None = None) -> None:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id}
    if error is not None:
        body["error"] = error
    else:
        body["result"] = result
    sys.stdout.write(json.dumps(body) + "\n")
    sys.stdout.flush()


def _forward(sock_path: str, name: str, arguments: Any) -> tuple[str, bool]:
    """Send one call to the runner and wait for the text the CLI should see."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(CALL_TIMEOUT)
            s.connect(sock_path)
            s.sendall((json.dumps({"name": name, "arguments": arguments}) + "\n").encode())
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        reply = json.loads(data or b"{}")
        return str(reply.get("text", "")), bool(reply.get("is_error"))
    except (OSError, ValueError) as e:
        return f"massgen-mcp is not reachable ({e}); stop and end your turn.", True


def serve(tools: list[dict[str, Any]], sock_path: str) -> None:
    names = {t["name"] for t in tools}
    listed = [{"name": t["name"], "description": t.get("description", ""),
               "inputSchema": t.get("parameters") or {"type": "object"}} for t in tools]
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "id" not in msg:
            continue  # a notification (initialized, cancelled): nothing to answer
        method, params, msg_id = msg.get("method"), msg.get("params") or {}, msg["id"]
        if method == "initialize":
            asked = params.get("protocolVersion")
            _reply(msg_id, {"protocolVersion": asked if asked in PROTOCOLS else PROTOCOLS[0],
                            "capabilities": {"tools": {"listChanged": False}},
                            "serverInfo": {"name": "massgen", "version": "1"}})
        elif method == "ping":
            _reply(msg_id, {})
        elif method == "tools/list":
            _reply(msg_id, {"tools": listed})
        elif method == "tools/call":
            name = str(params.get("name", ""))
            if name not in names:
                text, is_error = f"unknown tool {name!r}; available: {sorted(names)}", True
            else:
                text, is_error = _forward(sock_path, name, params.get("arguments") or {})
            _reply(msg_id, {"content": [{"type": "text", "text": text}], "isError": is_error})
        else:
            _reply(msg_id, error={"code": -32601, "message": f"method not found: {method}"})


def _die_with_parent() -> None:
    """Exit when the CLI that started us is gone, even if our stdin stays open (Codex starts
    its MCP servers outside its own process group). A poll, not PR_SET_PDEATHSIG: that fires
    when the *thread* that spawned us exits, and the CLIs spawn from worker threads."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def main(argv: list[str]) -> int:
    _die_with_parent()
    args = dict(zip(argv[::2], argv[1::2], strict=False))
    if "--tools" not in args or "--socket" not in args:
        sys.stderr.write("usage: workflow_server.py --tools FILE --socket PATH\n")
        return 2
    with open(args["--tools"], encoding="utf-8") as f:
        tools = json.load(f)
    serve(tools, args["--socket"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
