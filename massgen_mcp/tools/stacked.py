"""One toolbox in front of another: the file tools or `execute_command` added to an agent's
MCP tools. The front one's tools are listed first and it answers the names it owns; every
other call goes to the toolbox behind it (none: the front one answers with its error)."""

from __future__ import annotations

from typing import Any

from massgen_mcp.messages import ToolCall, ToolSpec


class StackedToolbox:
    """`front` (a `FileToolbox`, a `ShellToolbox`) in front of `behind` (or of nothing)."""

    def __init__(self, front: Any, behind: Any | None) -> None:
        self._front = front
        self._behind = behind

    @property
    def tools(self) -> list[ToolSpec]:
        return [*self._front.tools, *(self._behind.tools if self._behind is not None else [])]

    @property
    def notes(self) -> list[str]:
        return [*self._front.notes, *(self._behind.notes if self._behind is not None else [])]

    def owns(self, tool_name: str) -> bool:
        return bool(self._front.owns(tool_name)) or (
            self._behind is not None and bool(self._behind.owns(tool_name)))

    async def call(self, call: ToolCall) -> tuple[str, bool]:
        if self._front.owns(call.name) or self._behind is None:
            result: tuple[str, bool] = await self._front.call(call)
        else:
            result = await self._behind.call(call)
        return result
