"""Team configuration: the YAML team file, `--models` shorthands, `${VAR}` and `.env`.

This is the only module that reads YAML or the environment. A team file has MassGen's
shape::

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
and what was expected.
"""

from __future__ import annotations

import difflib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from .env import Environment, expand_vars
from .errors import ConfigError, MissingKeyError
from .providers import (
    PROVIDERS,
    UNSUPPORTED,
    Provider,
    canonical_type,
    known_type_names,
    provider_for_base_url,
)

log = logging.getLogger(__name__)

Level = Literal["lenient", "balanced", "strict"]
_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


# ---------------------------------------------------------------------------- models


class _Lenient(BaseModel):
    """Accepts MassGen keys we do not implement (logged and ignored), but turns a near-miss
    of a key we *do* implement into an error, so `temperture: 0.2` is not silently lost."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _check_extras(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = set(cls.model_fields) | {f.alias for f in cls.model_fields.values() if f.alias}
        for key in data:
            if key in known:
                continue
            close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.8)
            if close:
                raise ValueError(f"unknown field '{key}'; did you mean '{close[0]}'?")
            log.info("ignoring unsupported config field %r", key)
        return data


class MCPServerConfig(_Lenient):
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


class BackendConfig(_Lenient):
    type: str
    model: str | None = None
    base_url: str | None = None
    api_key: SecretStr | None = None
    api_version: str | None = None  # azure_openai
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_tokens: int | None = Field(default=None, gt=0)
    reasoning: dict[str, Any] | str | None = None  # {effort: low|medium|high} or "high"
    reasoning_effort: str | None = None
    request_timeout_seconds: float = Field(default=600, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    mcp_servers: list[MCPServerConfig] | None = None  # a dict keyed by name is accepted too
    allowed_tools: list[str] | None = None
    exclude_tools: list[str] | None = None

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


class AgentConfig(_Lenient):
    id: str = Field(min_length=1, max_length=64)
    backend: BackendConfig
    system_message: str | None = None


class OrchestratorConfig(_Lenient):
    max_new_answers_per_agent: int | None = Field(default=None, ge=1)
    answer_novelty_requirement: Level = "lenient"
    voting_sensitivity: Level = "lenient"
    skip_final_presentation: bool = False
    orchestrator_timeout_seconds: float = Field(default=1800, gt=0)
    fairness_lead_cap: int | None = Field(default=2, ge=1)
    max_total_tokens: int | None = Field(default=None, gt=0)
    max_attempts_per_turn: int = Field(default=3, ge=1, le=10)
    max_tool_calls_per_turn: int = Field(default=20, ge=0, le=200)
    tool_call_timeout_seconds: float = Field(default=60, gt=0)
    tool_server_startup_timeout_seconds: float = Field(default=30, gt=0)


class TeamConfig(_Lenient):
    agents: list[AgentConfig] = Field(min_length=1, max_length=32)
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

    @property
    def label(self) -> str:
        return f"{self.id} ({self.provider.name}/{self.model})"


@dataclass(frozen=True, slots=True)
class Team:
    name: str
    agents: tuple[AgentSpec, ...]
    orchestrator: OrchestratorConfig
    source: str  # file path, "models:<list>" or "bundled:<name>"

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
        return Team(self.name, self.agents, orch, self.source)


def format_validation_error(err: ValidationError, where: str) -> str:
    """`team.yaml: agents[1].backend.type: 'opnai' is not a known backend; did you mean ...`"""
    lines = []
    for e in err.errors(include_url=False):
        path = ""
        for part in e["loc"]:
            if isinstance(part, int):
                path += f"[{part}]"
            elif str(part).startswith(("function-", "union[", "list[", "dict[")):
                continue  # pydantic's internal union/validator markers mean nothing to users
            else:
                path += f".{part}" if path else str(part)
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "missing":
            msg = "this field is required"
        elif e["type"] == "extra_forbidden":
            msg = "unknown field"
        lines.append(f"{where}: {path}: {msg}" if path else f"{where}: {msg}")
    # A union reports the same failure once per member; show each line once.
    return "\n".join(dict.fromkeys(lines))


def _resolve_agent(agent: AgentConfig, index: int, env: Environment, where: str) -> AgentSpec:
    b = agent.backend
    provider = PROVIDERS[b.type]
    path = f"{where}: agents[{index}].backend"
    model = b.model or provider.default_model
    if not model and provider.wire != "sampling":
        raise ConfigError(f"{path}.model: this field is required for type '{b.type}'")
    # A local server that is not on its default port: OLLAMA_BASE_URL, LMSTUDIO_BASE_URL, ...
    moved = env.get(f"{provider.name.upper()}_BASE_URL") if provider.local else None
    base_url = b.base_url or moved or provider.base_url
    if b.type == "chatcompletion" and not b.base_url:
        raise ConfigError(f"{path}.base_url: type 'chatcompletion' needs a base_url "
                          "(the OpenAI-compatible endpoint, e.g. http://localhost:8000/v1)")
    if b.type == "azure_openai" and not base_url:
        base_url = env.first(("AZURE_OPENAI_ENDPOINT",))
        if not base_url:
            raise ConfigError(f"{path}.base_url: azure_openai needs the resource endpoint; "
                              "set AZURE_OPENAI_ENDPOINT or backend.base_url")
    api_key = b.api_key
    if api_key is None and provider.wire != "sampling" and not provider.local:
        key_env = provider.key_env
        if b.type == "chatcompletion" and base_url:
            match = provider_for_base_url(base_url)
            key_env = match.key_env if match else key_env
            if match is None and _is_loopback(base_url):
                key_env = ()  # a local OpenAI-compatible server needs no key
        if key_env:
            found = env.first(key_env)
            if found is None:
                raise MissingKeyError(provider.name, key_env, f"{where}: agents[{index}]")
            api_key = SecretStr(found)
    return AgentSpec(
        id=agent.id,
        provider=provider,
        model=model or "client-model",
        backend=b,
        api_key=api_key,
        base_url=base_url,
        system_message=agent.system_message,
    )


def _is_loopback(url: str) -> bool:
    host = re.sub(r"^[a-z]+://", "", url).split("/", 1)[0].rsplit(":", 1)[0]
    return host in {"localhost", "127.0.0.1", "[::1]", "::1", "0.0.0.0"}


def team_from_data(
    data: Any, where: str, env: Environment | None = None, name: str | None = None
) -> Team:
    """Validate a parsed team file (already a dict) and resolve its agents."""
    env = env if env is not None else Environment()
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping with an 'agents' list at the top level")
    data = dict(data)
    if "agents" not in data and "agent" in data:  # MassGen's single-agent form
        data["agents"] = [data.pop("agent")]
    # MassGen keeps the whole-run timeout in its own top-level section.
    timeouts = data.pop("timeout_settings", None)
    if isinstance(timeouts, dict) and "orchestrator_timeout_seconds" in timeouts:
        orch = dict(data.get("orchestrator") or {})
        orch.setdefault("orchestrator_timeout_seconds", timeouts["orchestrator_timeout_seconds"])
        data["orchestrator"] = orch
    for section in ("ui", "logging"):
        data.pop(section, None)
    data = expand_vars(data, env, "")
    try:
        team = TeamConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, where)) from None
    agents = tuple(_resolve_agent(a, i, env, where) for i, a in enumerate(team.agents))
    return Team(name or team.name or Path(where).stem, agents, team.orchestrator, where)


def load_team_file(path: str | Path, env: Environment | None = None) -> Team:
    """Load and validate a team YAML file."""
    import yaml

    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p}: team file not found") from None
    except OSError as e:
        raise ConfigError(f"{p}: cannot read team file: {e.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(f"{p.name}: not valid YAML{at}: {problem}") from None
    return team_from_data(data, p.name, env, name=p.stem)


def bundled_configs_dir() -> Path:
    """Where the ready team files live (inside the wheel, or the repo's configs/)."""
    here = Path(__file__).resolve().parent
    packaged = here / "_configs"
    return packaged if packaged.is_dir() else here.parent / "configs"


def bundled_team_names() -> list[str]:
    d = bundled_configs_dir()
    return sorted(p.stem for p in d.glob("*.yaml")) if d.is_dir() else []


def load_team(name_or_path: str, env: Environment | None = None) -> Team:
    """A team by bundled name (`frontier`, `local`, ...) or by YAML file path."""
    candidate = Path(name_or_path).expanduser()
    if candidate.suffix in {".yaml", ".yml"} or candidate.exists() or "/" in name_or_path:
        return load_team_file(candidate, env)
    bundled = bundled_configs_dir() / f"{name_or_path}.yaml"
    if bundled.is_file():
        team = load_team_file(bundled, env)
        return Team(team.name, team.agents, team.orchestrator, f"bundled:{name_or_path}")
    names = bundled_team_names()
    close = difflib.get_close_matches(name_or_path, names, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise ConfigError(f"no team named '{name_or_path}': {hint}bundled teams are "
                      f"{', '.join(names) or '(none)'}; or give a path to a team YAML file")


def parse_models(models: str | list[str]) -> list[tuple[str, str]]:
    """`openai/gpt-5,anthropic/claude-sonnet-4-5` -> [(type, model), ...]."""
    items = models.split(",") if isinstance(models, str) else list(models)
    out = []
    for raw in (m.strip() for m in items):
        if not raw:
            continue
        if raw == "sampling":
            out.append(("sampling", ""))
            continue
        prefix, sep, model = raw.partition("/")
        if not sep or not model:
            raise ConfigError(f"--models: '{raw}' should be provider/model, e.g. openai/gpt-5 "
                              "or openrouter/meta-llama/llama-3.3-70b-instruct")
        out.append((prefix, model))
    if not out:
        raise ConfigError("--models: give at least one provider/model")
    return out


def team_from_models(
    models: str | list[str], env: Environment | None = None,
    orchestrator: dict[str, Any] | None = None,
) -> Team:
    """Build a team from the `--models` shorthand; agent ids come from the model names."""
    pairs = parse_models(models)
    agents, seen = [], set()
    for i, (kind, model) in enumerate(pairs):
        base = re.sub(r"[^A-Za-z0-9_.-]+", "-", model.rsplit("/", 1)[-1]).strip("-") or kind
        agent_id, n = base, 2
        while agent_id in seen:
            agent_id, n = f"{base}-{n}", n + 1
        seen.add(agent_id)
        backend: dict[str, Any] = {"type": kind}
        if model:
            backend["model"] = model
        agents.append({"id": agent_id, "backend": backend})
        del i
    spec = ",".join(f"{k}/{m}" if m else k for k, m in pairs)
    return team_from_data({"agents": agents, "orchestrator": orchestrator or {}},
                          "--models", env, name=f"models:{spec}")
