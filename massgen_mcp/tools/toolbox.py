"""One agent's view of its MCP tool servers: the tool names the model sees, routing a call to
the right session, allowed/excluded tools, and what to tell the model when a server is gone.

Sessions themselves (starting, stopping, the processes) are in `session.py`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from massgen_mcp.messages import ToolCall, ToolSpec

if TYPE_CHECKING:
    import mcp_types as types

    from massgen_mcp.config.team import BackendConfig, MCPServerConfig

log = logging.getLogger(__name__)

PREFIX = "mcp__"
MAX_RESULT_CHARS = 20_000
MAX_NAME_LENGTH = 64  # the tightest provider limit on function names (OpenAI, Anthropic)
_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")

EventFn = Callable[[str, dict[str, Any]], None]


class ToolServer(Protocol):
    """One MCP server session of an agent, as the toolbox routes to it (session.py's
    `ServerSession`)."""

    name: str
    state: str  # starting, ready, failed, closing or dead
    reason: str  # why it failed or died
    config: MCPServerConfig
    tools: list[types.Tool]
    on_lost: Callable[[Any], None]  # called with the session when it dies during the run

    async def call(self, tool: str, exposed: str, arguments: dict[str, Any]
                   ) -> tuple[str, bool]: ...


@dataclass(frozen=True, slots=True)
class AgentToolConfig:
    """One agent's tool servers and its backend-level tool filters."""

    servers: tuple[MCPServerConfig, ...] = ()
    allowed_tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] | None = None

    @classmethod
    def from_backend(cls, backend: BackendConfig) -> AgentToolConfig:
        return cls(
            servers=tuple(backend.servers()),
            allowed_tools=_opt_tuple(backend.allowed_tools),
            exclude_tools=_opt_tuple(backend.exclude_tools),
        )


def _opt_tuple(items: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if items is None else tuple(items)


def tool_name(server: str, tool: str) -> str:
    """The name the model sees: ``mcp__<server>__<tool>``, made safe for every provider."""
    name = _BAD_NAME_CHARS.sub("_", f"{PREFIX}{server}__{tool}")
    if len(name) > MAX_NAME_LENGTH:
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        name = f"{name[: MAX_NAME_LENGTH - 9]}_{digest}"
    return name


def render_result(result: types.CallToolResult, limit: int = MAX_RESULT_CHARS) -> str:
    """A tool result as text: text blocks joined, other content described, size bounded."""
    import mcp_types as types

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            kind = "image" if isinstance(block, types.ImageContent) else "audio"
            parts.append(f"[{kind}: {block.mime_type}, {len(block.data) * 3 // 4} bytes]")
        elif isinstance(block, types.EmbeddedResource):
            res = block.resource
            if isinstance(res, types.TextResourceContents):
                parts.append(f"[resource {res.uri}]\n{res.text}")
            else:
                parts.append(f"[resource {res.uri}: {res.mime_type or 'binary'}, "
                             f"{len(res.blob) * 3 // 4} bytes]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource link {block.uri}: {block.name}]")
        else:
            parts.append(f"[{getattr(block, 'type', 'unknown')} content]")
    has_text = any(isinstance(b, types.TextContent) for b in result.content)
    if result.structured_content is not None and not has_text:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, default=str))
    text = "\n".join(parts)
    if len(text) > limit:
        text = f"{text[:limit]}\n[truncated: showing {limit} of {len(text)} characters]"
    return text


class AgentToolbox:
    """One agent's MCP client sessions for a whole run.

    ``tools`` lists what the model may call now (servers that died are removed); ``notes``
    explains, in words for the run's result, what was dropped or filtered and why.
    """

    def __init__(self, agent_id: str, config: AgentToolConfig, servers: Sequence[ToolServer],
                 emit: EventFn) -> None:
        self.agent_id = agent_id
        self.tools: list[ToolSpec] = []
        self.notes: list[str] = []
        self._config = config
        self._servers = list(servers)
        self._emit = emit
        self._routes: dict[str, tuple[ToolServer, str]] = {}
        for server in servers:
            server.on_lost = self._on_lost

    @property
    def server_states(self) -> dict[str, str]:
        """Each server's state: ready, failed, dead or closing."""
        return {s.name: s.state for s in self._servers}

    def owns(self, tool_name: str) -> bool:
        """Whether a call by this name is an MCP tool call this toolbox should answer."""
        return tool_name in self._routes or tool_name.startswith(PREFIX)

    async def call(self, call: ToolCall) -> tuple[str, bool]:
        """Run one tool call; returns ``(text, is_error)`` and never raises (bar cancellation).

        Safe to run concurrently: the MCP session matches answers to requests by id.
        """
        route = self._routes.get(call.name)
        if route is None:
            names = ", ".join(t.name for t in self.tools[:30]) or "none"
            more = f" and {len(self.tools) - 30} more" if len(self.tools) > 30 else ""
            return f"unknown tool {call.name}; the MCP tools available are: {names}{more}", True
        server, tool = route
        if call.arguments_error:
            return f"{call.name} was not called: invalid arguments: {call.arguments_error}", True
        try:
            return await server.call(tool, call.name, dict(call.arguments))
        except Exception as exc:  # the model gets a result, we get a log line
            log.warning("MCP tool %s of agent %s failed: %r", call.name, self.agent_id, exc)
            return f"{call.name} failed: {describe(exc)}", True

    def _build(self) -> None:
        for server in self._servers:
            if server.state == "failed":
                self._note_failed(server)
        ready = [s for s in self._servers if s.state == "ready"]
        used: set[str] = set()
        for server in ready:
            hidden = 0
            for tool in server.tools:
                if not self._allowed(server.name, tool.name):
                    hidden += 1
                    continue
                name = tool_name(server.name, tool.name)
                n = 2
                while name in self._routes:  # two raw names that sanitize alike
                    name = tool_name(server.name, f"{tool.name}_{n}")
                    n += 1
                self._routes[name] = (server, tool.name)
                self.tools.append(_spec(name, tool))
            for tool in server.tools:
                used |= self._keys(server.name, tool.name)
            if hidden:
                self.notes.append(f"MCP server '{server.name}': {hidden} of {len(server.tools)} "
                                  "tools hidden by allowed_tools/exclude_tools")
        if len(ready) == len(self._servers):  # a failed server's names cannot be checked
            lists: list[Sequence[str] | None] = [self._config.allowed_tools,
                                                 self._config.exclude_tools]
            for server in self._servers:
                lists += [server.config.allowed_tools, server.config.exclude_tools]
            for entry in dict.fromkeys(e for entries in lists for e in entries or ()):
                if entry not in used:
                    self.notes.append(f"tool filter entry '{entry}' matches no tool")

    def _allowed(self, server: str, tool: str) -> bool:
        keys = self._keys(server, tool)
        cfg = self._servers_by_name(server).config
        for allowed in (self._config.allowed_tools, cfg.allowed_tools):
            if allowed is not None and not keys & set(allowed):
                return False
        for excluded in (self._config.exclude_tools, cfg.exclude_tools):
            if excluded and keys & set(excluded):
                return False
        return True

    @staticmethod
    def _keys(server: str, tool: str) -> set[str]:
        return {tool, f"{PREFIX}{server}__{tool}", tool_name(server, tool)}

    def _servers_by_name(self, name: str) -> ToolServer:
        return next(s for s in self._servers if s.name == name)

    def _note_failed(self, server: ToolServer) -> None:
        self.notes.append(f"MCP server '{server.name}' failed to start: {server.reason}; "
                          "its tools are not available")
        self._emit("tool_server_failed", {"agent": self.agent_id, "server": server.name,
                                          "reason": server.reason})

    def _on_lost(self, server: ToolServer) -> None:
        gone = [name for name, (s, _) in self._routes.items() if s is server]
        self.tools = [t for t in self.tools if t.name not in gone]
        self.notes.append(f"MCP server '{server.name}' stopped during the run: {server.reason}; "
                          f"its {len(gone)} tools were removed")
        self._emit("tool_server_died", {"agent": self.agent_id, "server": server.name,
                                        "reason": server.reason, "tools_removed": gone})


def _spec(name: str, tool: types.Tool) -> ToolSpec:
    schema = dict(tool.input_schema or {})
    schema.setdefault("type", "object")
    if schema["type"] == "object":
        schema.setdefault("properties", {})
    return ToolSpec(name=name, description=tool.description or tool.title or "", parameters=schema)


def describe(exc: BaseException) -> str:
    """A one-line account of a failure, unwrapping task-group exception groups."""
    from mcp.shared.exceptions import MCPError

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}: {exc.message}"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


