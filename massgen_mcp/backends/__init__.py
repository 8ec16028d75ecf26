"""Model backends: one small Protocol, one module per wire format.

A backend turns a provider-neutral conversation into one model reply (`Turn`). It owns its
SDK client, the SDK's retries/timeouts, and the mapping of that SDK's errors to
`PermanentBackendError` / `TransientBackendError`. Provider SDKs are imported lazily inside
each module, so importing this package costs nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from massgen_mcp.config.team import AgentSpec
    from massgen_mcp.messages import Message, ToolSpec, Turn


@runtime_checkable
class Backend(Protocol):
    """What the orchestrator needs from a model."""

    provider: str
    model: str

    async def turn(
        self, messages: list[Message], tools: list[ToolSpec], *, require_tool: bool = False
    ) -> Turn:
        """One model reply to `messages`, offering `tools`.

        `require_tool` asks the model to call one of the tools (tool_choice=required/any)
        where the provider supports it. Raises `PermanentBackendError` when retrying cannot
        help and `TransientBackendError` when the SDK's retries were used up.
        """
        ...

    async def aclose(self) -> None:
        """Release the HTTP client."""
        ...


# wire format -> "module:Class"
_REGISTRY: dict[str, str] = {
    "openai_responses": "massgen_mcp.backends.openai_responses:OpenAIResponsesBackend",
    "openai_chat": "massgen_mcp.backends.openai_chat:OpenAIChatBackend",
    "anthropic": "massgen_mcp.backends.anthropic:AnthropicBackend",
    "gemini": "massgen_mcp.backends.gemini:GeminiBackend",
    "sampling": "massgen_mcp.backends.sampling:SamplingBackend",
    "function": "massgen_mcp.backends.function:FunctionBackend",
    "claude_code": "massgen_mcp.backends.cli.claude_code:ClaudeCodeBackend",
    "codex": "massgen_mcp.backends.cli.codex:CodexBackend",
    "gemini_cli": "massgen_mcp.backends.cli.gemini_cli:GeminiCliBackend",
    "copilot": "massgen_mcp.backends.cli.copilot:CopilotBackend",
}


def create_backend(spec: AgentSpec, **context: Any) -> Backend:
    """Build the backend for one agent. `context` carries runtime objects some backends
    need (the sampling backend needs the MCP session of the calling client)."""
    if spec.unavailable:  # e.g. an unset ${VAR} of this agent (config/load.py)
        from massgen_mcp.errors import ConfigError

        raise ConfigError(spec.unavailable)
    module_name, _, cls_name = _REGISTRY[spec.provider.wire].partition(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    return cls(spec, **context)
