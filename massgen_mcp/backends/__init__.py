"""Model backends: one small Protocol, one module per wire format.

A backend turns a provider-neutral conversation into one model reply (`Turn`). It owns its
SDK client, the SDK's retries/timeouts, and the mapping of that SDK's errors to
`PermanentBackendError` / `TransientBackendError`. Provider SDKs are imported lazily inside
each module, so importing this package costs nothing.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from massgen_mcp.config.team import AgentSpec
    from massgen_mcp.messages import Message, ToolSpec, Turn


@runtime_checkable
class Backend(Protocol):
    """What the orchestrator needs from a model."""

    provider: str
    model: str

    async def turn(self, messages: list[Message], tools: list[ToolSpec]) -> Turn:
        """One model reply to `messages`, offering `tools` (the model chooses whether to call
        one). Raises `PermanentBackendError` when retrying cannot help and
        `TransientBackendError` when the SDK's retries were used up.
        """
        ...

    async def aclose(self) -> None:
        """Release the HTTP client."""
        ...


class AgentWorkspaces(Protocol):
    """The run's agent workspaces, as a coding-agent backend uses them (runs/workspace.py)."""

    #: The run's directory (a long-lived CLI may read its whole `snapshots/`).
    run_dir: Path

    def dir_for(self, agent_id: str, name: str | None = None) -> Path: ...

    def snapshots_in(self, text: str) -> list[tuple[str, Path]]: ...

    def describe(self, agent_id: str, text: str) -> str: ...


@dataclass(frozen=True, slots=True)
class BackendContext:
    """What a backend is built with besides its `AgentSpec`: the objects of the caller and of
    the run that only some backends need. The caller sets `session`; the engine adds the rest
    for the backends it builds per run."""

    #: The calling MCP client's session: the sampling backend asks that client's model.
    session: Any = None
    #: The environment of the run (a coding-agent CLI's process gets its keys from it).
    env: Mapping[str, str] | None = None
    #: The run's directory (a coding-agent CLI keeps its files under `agents/<id>/`).
    run_dir: Path | None = None
    #: The agents' workspaces when the team has context paths (coding-agent CLIs work there).
    workspaces: AgentWorkspaces | None = None


# wire format -> "module:Class"
_REGISTRY: dict[str, str] = {
    "openai_responses": "massgen_mcp.backends.openai_responses:OpenAIResponsesBackend",
    "openai_chat": "massgen_mcp.backends.openai_chat:OpenAIChatBackend",
    "anthropic": "massgen_mcp.backends.anthropic:AnthropicBackend",
    "gemini": "massgen_mcp.backends.gemini:GeminiBackend",
    "sampling": "massgen_mcp.backends.sampling:SamplingBackend",
    "function": "massgen_mcp.backends.function:FunctionBackend",
    "test": "massgen_mcp.backends.testing:SchemaAgentBackend",
    "demo": "massgen_mcp.backends.demo:DemoBackend",
    "claude_code": "massgen_mcp.backends.cli.claude_code:ClaudeCodeBackend",
    "codex": "massgen_mcp.backends.cli.codex:CodexBackend",
    "gemini_cli": "massgen_mcp.backends.cli.gemini_cli:GeminiCliBackend",
    "copilot": "massgen_mcp.backends.cli.copilot:CopilotBackend",
    "ag2": "massgen_mcp.backends.ag2:AG2Backend",
}


def create_backend(spec: AgentSpec, context: BackendContext | None = None) -> Backend:
    """Build the backend for one agent; every backend class takes `(spec, context)`."""
    if spec.unavailable:  # e.g. an unset ${VAR} of this agent (config/load.py)
        from massgen_mcp.errors import ConfigError

        raise ConfigError(spec.unavailable)
    module_name, _, cls_name = _REGISTRY[spec.provider.wire].partition(":")
    cls = getattr(importlib.import_module(module_name), cls_name)
    backend: Backend = cls(spec, context or BackendContext())
    return backend
