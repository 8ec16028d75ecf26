"""The MassGen config keys of the coding-agent backends, read from a team file's backend.

`BackendConfig` keeps keys it does not know as extras; the CLI backends read theirs here and
warn once about the rest, so a typo'd or unsupported key is never silently lost.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from massgen_mcp.config.massgen_keys import CLI_KEYS

if TYPE_CHECKING:
    from massgen_mcp.config.team import AgentSpec

log = logging.getLogger(__name__)

# MassGen keys these backends honour (besides model, base_url, api_key, allowed_tools,
# mcp_servers, request_timeout_seconds and max_retries, which BackendConfig has).
KNOWN = CLI_KEYS - {"max_thinking_tokens"}
# MassGen keys that are about its own process, not the CLI: accepted without a warning.
IGNORED = frozenset({"max_thinking_tokens", "enable_mcp_command_line", "command_line_docker",
                     "enable_web_search", "exclude_file_operation_mcps"})


#: A CLI's own agentic turns per call are bounded like every other limit in a team file (the
#: run's deadlines bound the time; this bounds what one call may do).
MAX_TURNS = 500


@dataclass(frozen=True)
class CliOptions:
    command: str | None = None
    cwd: str | None = None
    system_prompt: str | None = None  # replaces the CLI's own system prompt
    append_system_prompt: str | None = None
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    permission_mode: str | None = None
    max_turns: int | None = None
    sandbox_mode: str | None = None
    approval_policy: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = 600.0
    max_retries: int = 0
    unknown: tuple[str, ...] = ()

    @classmethod
    def from_spec(cls, spec: AgentSpec) -> CliOptions:
        b = spec.backend
        extra: dict[str, Any] = dict(b.model_extra or {})
        unknown = tuple(sorted(k for k in extra if k not in KNOWN and k not in IGNORED))
        if unknown:
            log.warning("agent %s (%s): ignoring unsupported keys %s", spec.id,
                        spec.provider.name, ", ".join(unknown))

        def text(key: str) -> str | None:
            v = getattr(b, key, None) if key in type(b).model_fields else extra.get(key)
            return str(v) if v is not None else None

        def names(v: Any) -> tuple[str, ...]:
            if isinstance(v, str):
                return tuple(x.strip() for x in v.split(",") if x.strip())
            return tuple(str(x) for x in v or ())

        max_turns = extra.get("max_turns")
        raw_env = extra.get("env")
        env: dict[str, Any] = raw_env if isinstance(raw_env, dict) else {}
        return cls(
            command=text("command"), cwd=text("cwd"), system_prompt=text("system_prompt"),
            append_system_prompt=text("append_system_prompt"),
            allowed_tools=names(b.allowed_tools), disallowed_tools=names(
                getattr(b, "disallowed_tools", None) or extra.get("disallowed_tools")),
            permission_mode=text("permission_mode"),
            max_turns=min(int(max_turns), MAX_TURNS) if isinstance(max_turns, int | str)
            and str(max_turns).isdigit() else None,
            sandbox_mode=text("sandbox_mode"), approval_policy=text("approval_policy"),
            env={str(k): str(v) for k, v in env.items()},
            timeout=b.request_timeout_seconds, max_retries=b.max_retries, unknown=unknown)
