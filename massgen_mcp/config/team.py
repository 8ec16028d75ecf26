"""The team schema: a team file's pydantic models and the resolved `Team`.

A team file has MassGen's shape::

    agents:
      - id: gpt
        backend: {type: openai, model: gpt-5}
      - id: claude
        backend: {type: claude, model: claude-sonnet-4-5, temperature: 0.3}
        system_message: You are a careful reviewer.
    orchestrator:
      max_new_answers_per_agent: 3
      orchestrator_timeout_seconds: 600

Everything is validated before any model is called; errors name the file, the field path
and what was expected. Keys MassGen has that we do not honour are kept as pydantic extras;
`massgen_keys.py` turns them into one warning per file and near-misses into errors. The
`orchestrator:` section's models are in `orchestration.py`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from typing import Any, Literal, Self

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from massgen_mcp.config.orchestration import (
    MAX_OUTPUT_TOKENS,
    MAX_PROMPT_CHARS,
    MAX_SECONDS,
    Lenient,
    OrchestratorConfig,
)
from massgen_mcp.config.providers import (
    PROVIDERS,
    UNSUPPORTED,
    Provider,
    canonical_type,
    known_type_names,
)
from massgen_mcp.config.stances import stance_map
from massgen_mcp.config.team_scale import MAX_AGENTS
from massgen_mcp.errors import ConfigError, format_validation_error
from massgen_mcp.paths import name_problem

_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


# ---------------------------------------------------------------------------- models


class MCPServerConfig(Lenient):
    """An MCP tool server an agent may use (stdio subprocess or streamable HTTP)."""

    name: str = ""
    type: Literal["stdio", "streamable-http"] = "stdio"
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    allowed_tools: list[str] | None = None
    exclude_tools: list[str] | None = None

    @field_validator("type", mode="before")
    @classmethod
    def _type_alias(cls, v: Any) -> Any:
        aliases = {"http": "streamable-http", "streamable_http": "streamable-http",
                   "streamablehttp": "streamable-http"}
        return aliases.get(v, v) if isinstance(v, str) else v

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.type == "stdio" and not self.command:
            raise ValueError("a stdio server needs 'command'")
        if self.type == "streamable-http" and not self.url:
            raise ValueError("a streamable-http server needs 'url'")
        return self


class BackendConfig(Lenient):
    type: str
    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    api_version: str | None = None  # azure_openai
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_tokens: int | None = Field(default=None, gt=0, le=MAX_OUTPUT_TOKENS)
    reasoning: dict[str, Any] | str | None = None  # {effort: low|medium|high} or "high"
    reasoning_effort: str | None = None
    text: dict[str, Any] | None = None  # Responses API: {verbosity: low|medium|high}
    # Sampling options OpenAI-compatible servers take as extra body fields (vLLM, SGLang).
    top_k: int | None = Field(default=None, ge=-1, le=1_000_000)
    chat_template_kwargs: dict[str, Any] | None = None
    # The provider's own server-side tools (see backends/native_tools.py).
    enable_web_search: bool = False
    enable_code_interpreter: bool = False  # OpenAI
    enable_code_execution: bool = False  # Anthropic, Gemini
    cwd: str | None = None  # MassGen's agent workspace: only `${cwd}` uses it here
    request_timeout_seconds: float = Field(default=600, gt=0, le=MAX_SECONDS)
    max_retries: int = Field(default=3, ge=0, le=10)
    mcp_servers: list[MCPServerConfig] | None = None  # a dict keyed by name is accepted too
    allowed_tools: list[str] | None = None
    exclude_tools: list[str] | None = None
    disallowed_tools: list[str] | None = None  # coding-agent CLIs (backends/cli/_options.py)

    @field_validator("type")
    @classmethod
    def _known_type(cls, v: str) -> str:
        name = canonical_type(v)
        if name in PROVIDERS:
            return name
        if name in UNSUPPORTED:
            raise ValueError(f"backend type '{v}' is not supported yet: {UNSUPPORTED[name]}")
        close = difflib.get_close_matches(name, known_type_names(), n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else (
            f"; known types: {', '.join(known_type_names())}")
        raise ValueError(f"'{v}' is not a known backend{hint}")

    @field_validator("mcp_servers", mode="before")
    @classmethod
    def _servers_by_name(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return [{**s, "name": k} if isinstance(s, dict) else s for k, s in v.items()]
        return v

    def servers(self) -> list[MCPServerConfig]:
        return list(self.mcp_servers or [])

    @model_validator(mode="after")
    def _check(self) -> Self:
        names = [s.name for s in self.servers()]
        for name in names:
            if not _SERVER_NAME.match(name) or "__" in name:
                raise ValueError(
                    f"mcp server name '{name}' is invalid: use letters, digits, '-' or '_' "
                    "(no '__', at most 64 characters)")
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"mcp server names must be unique: {', '.join(sorted(dup))}")
        return self

    @property
    def effort(self) -> str | None:
        if isinstance(self.reasoning, dict):
            return self.reasoning.get("effort") or self.reasoning_effort
        return self.reasoning or self.reasoning_effort


class AgentConfig(Lenient):
    id: str = Field(min_length=1, max_length=64)
    backend: BackendConfig
    system_message: str | None = Field(default=None, max_length=MAX_PROMPT_CHARS)
    append_system_prompt: str | None = Field(  # MassGen: added after system_message
        default=None, max_length=MAX_PROMPT_CHARS)

    @field_validator("id")
    @classmethod
    def _safe_id(cls, v: str) -> str:
        problem = name_problem(v)
        if problem is not None:  # the id names the agent's workspace and record directories
            raise ValueError(f"agent id {v!r} {problem} (it names the agent's directories); "
                             "e.g. 'reviewer-1'")
        return v


class TeamConfig(Lenient):
    agents: list[AgentConfig] = Field(min_length=1, max_length=MAX_AGENTS)
    orchestrator: OrchestratorConfig = Field(default_factory=OrchestratorConfig)
    name: str | None = None
    description: str | None = None

    @model_validator(mode="after")
    def _check(self) -> Self:
        ids = [a.id for a in self.agents]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"agent ids must be unique; repeated: {', '.join(dup)}")
        return self


# ---------------------------------------------------------------------------- resolved team


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One agent, ready to build a backend for: preset, endpoint and key resolved."""

    id: str
    provider: Provider
    model: str
    backend: BackendConfig
    api_key: SecretStr | None
    base_url: str | None
    system_message: str | None = None
    #: Where `api_key` came from: an environment variable's name, "team file", or None.
    key_source: str | None = None
    #: The stance the agent is asked to take (for / against / neutral / an instruction).
    stance: str | None = None
    # Why this agent cannot run (an unset ${VAR} it needs): its backend fails with this, the
    # others run, and the run says `degraded` and why (as MassGen fails only that agent).
    unavailable: str | None = None

    def __post_init__(self) -> None:
        problem = name_problem(self.id)  # every way a team is built (files, replays) ends here
        if problem is not None:
            raise ConfigError(f"agent id {self.id!r} {problem} (it names the agent's "
                              "directories)")

    @property
    def label(self) -> str:
        return f"{self.id} ({self.provider.name}/{self.model})"

    @property
    def endpoint(self) -> str:
        """The endpoint this agent calls, as a user would name it (no credentials or query:
        it is shown in results)."""
        if self.base_url:
            from urllib.parse import urlsplit, urlunsplit

            parts = urlsplit(self.base_url)
            host = parts.netloc.rpartition("@")[2]
            return urlunsplit((parts.scheme, host, parts.path, "", ""))
        label = self.provider.endpoint_label
        if label is not None:
            return label
        return f"the {self.provider.name} SDK's default"


@dataclass(frozen=True, slots=True)
class Team:
    name: str
    agents: tuple[AgentSpec, ...]
    orchestrator: OrchestratorConfig
    source: str  # file path, "models:<list>" or "bundled:<name>"
    # What the file asks for that this team will not do (one line per file, for users).
    warnings: tuple[str, ...] = ()
    #: What the caller should know about how the team was put together (agents left out).
    notes: tuple[str, ...] = ()

    def with_output_cap(self, tokens: int) -> Team:
        """A copy whose agents without a `max_tokens` of their own get `tokens`."""
        agents = tuple(a if a.backend.max_tokens is not None else replace(
            a, backend=a.backend.model_copy(update={"max_tokens": tokens}))
            for a in self.agents)
        return Team(self.name, agents, self.orchestrator, self.source, self.warnings,
                    self.notes)

    def with_stances(self, stances: list[str] | dict[str, str] | None,
                     where: str = "stances") -> Team:
        """A copy with these stances set: a mapping agent id -> stance, or a list of
        `for`, `against`, `neutral` or an instruction, in config order, each optionally
        `agent_id=stance` to name its agent (PAL-style)."""
        if not stances:
            return self
        by_id = stance_map(stances, [a.id for a in self.agents], where)
        agents = tuple(replace(a, stance=by_id[a.id]) if a.id in by_id else a
                       for a in self.agents)
        return Team(self.name, agents, self.orchestrator, self.source, self.warnings,
                    self.notes)

    def with_overrides(self, **knobs: Any) -> Team:
        """A copy with orchestrator knobs replaced (None values are ignored)."""
        changes = {k: v for k, v in knobs.items() if v is not None}
        if not changes:
            return self
        try:
            orch = OrchestratorConfig.model_validate(
                {**self.orchestrator.model_dump(exclude_unset=True), **changes})
        except ValidationError as e:
            raise ConfigError(format_validation_error(e, "options")) from None
        return Team(self.name, self.agents, orch, self.source, self.warnings, self.notes)
