"""Loading team files: YAML, `${VAR}` expansion, MassGen's keys, and key resolution.

This module and `env.py` are the only readers of YAML and the environment; everything
downstream gets a resolved `Team`.
"""

from __future__ import annotations

import difflib
import logging
import re
from pathlib import Path
from typing import Any

from pydantic import SecretStr, ValidationError

from massgen_mcp.config.ag2 import primary_key_env, shape_team
from massgen_mcp.config.env import Environment
from massgen_mcp.config.massgen_keys import (
    COSMETIC,
    native_losses,
    near_misses,
    team_warning,
    unhonoured,
)
from massgen_mcp.config.providers import NEEDS_BASE_URL, PROVIDERS, provider_for_base_url
from massgen_mcp.config.team import AgentConfig, AgentSpec, Team, TeamConfig
from massgen_mcp.config.trust import expand_team_vars
from massgen_mcp.config.yaml_file import check_path_text, read_yaml
from massgen_mcp.errors import ConfigError, MissingKeyError, format_validation_error
from massgen_mcp.paths import bundled_configs_dir, bundled_team_names
from massgen_mcp.urls import is_loopback_url

log = logging.getLogger(__name__)


def _resolve_agent(agent: AgentConfig, index: int, env: Environment, where: str) -> AgentSpec:
    b = agent.backend
    provider = PROVIDERS[b.type]
    path = f"{where}: agents[{index}].backend"
    model = b.model or provider.default_model
    if not model and provider.needs_model:
        raise ConfigError(f"{path}.model: this field is required for type '{b.type}'")
    # A local server that is not on its default port: OLLAMA_BASE_URL, LMSTUDIO_BASE_URL, ...
    moved = env.get(f"{provider.name.upper()}_BASE_URL") if provider.local else None
    base_url = b.base_url or moved or provider.base_url
    if b.type in NEEDS_BASE_URL and not b.base_url:
        raise ConfigError(f"{path}.base_url: type '{b.type}' needs a base_url "
                          f"({NEEDS_BASE_URL[b.type]})")
    if b.type == "azure_openai" and not base_url:
        base_url = env.first(("AZURE_OPENAI_ENDPOINT",))
        if not base_url:
            raise ConfigError(f"{path}.base_url: azure_openai needs the resource endpoint; "
                              "set AZURE_OPENAI_ENDPOINT or backend.base_url")
    api_key = b.api_key
    key_source = "team file" if api_key is not None else None
    if api_key is None and not provider.uses_client_model and not provider.local:
        key_env = provider.key_env
        if provider.keys_from_its_config:  # the first llm_config entry's provider (config/ag2.py)
            key_env = primary_key_env(b, base_url)
        if b.type == "chatcompletion" and base_url:
            match = provider_for_base_url(base_url)
            key_env = match.key_env if match else key_env
            if match is None and is_loopback_url(base_url):
                key_env = ()  # a local OpenAI-compatible server needs no key
        if key_env:
            found = env.first(key_env)
            if found is None:
                raise MissingKeyError(provider.name, key_env, f"{where}: agents[{index}]")
            api_key = SecretStr(found)
            key_source = next(n for n in key_env if n in env)
    return AgentSpec(
        id=agent.id,
        provider=provider,
        model=model or "client-model",
        backend=b,
        api_key=api_key,
        base_url=base_url,
        system_message="\n\n".join(
            t for t in (agent.system_message, agent.append_system_prompt) if t) or None,
        key_source=key_source,
    )


def _massgen_shape(data: dict[str, Any]) -> dict[str, Any]:
    """MassGen's layout folded into ours: `agent:`, `timeout_settings:`, display sections."""
    data = dict(data)
    if "agents" not in data and "agent" in data:  # MassGen's single-agent form
        data["agents"] = [data.pop("agent")]
    # MassGen keeps the whole-run timeout in its own top-level section.
    timeouts = data.pop("timeout_settings", None)
    if isinstance(timeouts, dict):
        orch = dict(data.get("orchestrator") or {})
        if "orchestrator_timeout_seconds" in timeouts:
            orch.setdefault("orchestrator_timeout_seconds",
                            timeouts["orchestrator_timeout_seconds"])
        rest = {k: v for k, v in timeouts.items() if k != "orchestrator_timeout_seconds"}
        if rest:  # per-round timeouts: kept so that the warning names them
            data["timeout_settings"] = rest
        data["orchestrator"] = orch
    for section in COSMETIC:
        data.pop(section, None)
    return data


def _cwd_placeholders(agent: Any) -> dict[str, str]:
    """MassGen's `${cwd}`: the agent's working directory (its backend.cwd, else ours)."""
    backend = agent.get("backend") if isinstance(agent, dict) else None
    cwd = backend.get("cwd") if isinstance(backend, dict) else None
    base = Path.cwd()
    return {"cwd": str((base / cwd).resolve() if isinstance(cwd, str) and cwd else base)}


def _expand(data: dict[str, Any], env: Environment, problems: list[str]) -> dict[str, Any]:
    # Only in fields that hold secrets or endpoints, never in prompts (config/trust.py).
    return expand_team_vars(data, env, placeholders=_cwd_placeholders, errors=problems)


_AGENT_PATH = re.compile(r"^agents\[(\d+)\]\.backend\.(?:mcp_servers(?:\[(\d+)\]|\.([^.\[]+)))?")


def _isolate_unset(data: dict[str, Any], problems: list[str]
                   ) -> tuple[dict[str, Any], dict[int, list[str]], list[str]]:
    """An unset ${VAR} fails only what needs it, as in MassGen: an MCP server using one is
    left out (and said so), an agent using one elsewhere cannot run (the others do). Returns
    the data without those servers, {agent index: its problems}, and the servers' notes;
    problems that belong to no agent stay in `problems`."""
    failed: dict[int, list[str]] = {}
    servers: dict[int, set[str]] = {}
    notes: list[str] = []
    rest = []
    for problem in problems:
        m = _AGENT_PATH.match(problem)
        if m is None:
            rest.append(problem)
            continue
        agent = int(m.group(1))
        server = m.group(2) if m.group(2) is not None else m.group(3)
        if server is not None:
            servers.setdefault(agent, set()).add(server)
            notes.append(f"{problem.split(': environment', 1)[0]}: not started "
                         f"({problem.split(': ', 1)[1].split(';', 1)[0]})")
        else:
            failed.setdefault(agent, []).append(problem)
    problems[:] = rest
    if servers:
        agents = list(data.get("agents") or [])
        for i, names in servers.items():
            backend = dict(agents[i]["backend"])
            configured = backend.get("mcp_servers")
            if isinstance(configured, list):
                backend["mcp_servers"] = [s for j, s in enumerate(configured)
                                          if str(j) not in names]
            elif isinstance(configured, dict):
                backend["mcp_servers"] = {k: v for k, v in configured.items()
                                          if k not in names}
            agents[i] = {**agents[i], "backend": backend}
        data = {**data, "agents": agents}
    return data, failed, notes


def team_from_data(
    data: Any, where: str, env: Environment | None = None, name: str | None = None
) -> Team:
    """Validate a parsed team file (already a dict) and resolve its agents.

    Every problem of the file is reported at once, one line each (file, field path, what
    was expected, the fix). Keys accepted but not honoured become `Team.warnings`.
    """
    env = env if env is not None else Environment()
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping with an 'agents' list at the top level")
    problems: list[str] = []
    ag2_problems: list[str] = []  # what an ag2 member's agent_config gets wrong
    # An ag2 member's first llm_config entry becomes its backend fields before expansion.
    data = _expand(shape_team(_massgen_shape(data), ag2_problems), env, problems)
    data, unset, server_notes = _isolate_unset(data, problems)
    # A file that is refused anyway names these too (every problem at once).
    unset_lines = [f"{where}: {p}" for i in sorted(unset) for p in unset[i]]
    problems = [f"{where}: {p}" for p in [*problems, *ag2_problems]]
    problems += [f"{where}: {p}" for p in near_misses(data)]
    try:
        team = TeamConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError("\n".join(
            [*problems, *unset_lines, *format_validation_error(e, where).splitlines()])) from None
    agents: list[AgentSpec] = []
    missing: list[MissingKeyError] = []
    for i, a in enumerate(team.agents):
        if i in unset:  # it cannot run; the run goes on without it and says why
            agents.append(AgentSpec(a.id, PROVIDERS[a.backend.type], a.backend.model or "?",
                                    a.backend, None, None,
                                    unavailable=f"{where}: " + "; ".join(unset[i])))
            continue
        try:
            agents.append(_resolve_agent(a, i, env, where))
        except MissingKeyError as e:
            missing.append(e)
        except ConfigError as e:
            problems.append(str(e))
    if missing and not problems:  # still a MissingKeyError (naming the first variable)
        missing[0].args = ("\n".join(str(m) for m in missing),)
        raise missing[0]
    if problems or missing:
        raise ConfigError("\n".join([*problems, *unset_lines, *(str(m) for m in missing)]))
    lost = unhonoured(data)
    for i, spec in enumerate(agents):
        for what, paths in native_losses(spec.provider, spec.backend,
                                         f"agents[{i}].backend").items():
            lost.setdefault(what, []).extend(paths)
    warning = team_warning(where, lost)
    warnings = ((warning,) if warning else ()) + tuple(f"{where}: {n}" for n in server_notes)
    return Team(name or team.name or Path(where).stem, tuple(agents), team.orchestrator, where,
                warnings)


def load_team_file(path: str | Path, env: Environment | None = None) -> Team:
    """Load and validate a team YAML file (size, aliases and nesting bounded)."""
    p = Path(path).expanduser()
    data = read_yaml(p)
    team = team_from_data(data, p.name, env, name=p.stem)
    for warning in team.warnings:  # on stderr for the CLI; the server also puts it in notes
        log.warning("%s", warning)
    return team


def load_team(name_or_path: str, env: Environment | None = None) -> Team:
    """A team by bundled name (`frontier`, `local`, ...) or by YAML file path."""
    check_path_text(name_or_path)
    candidate = Path(name_or_path).expanduser()
    if candidate.suffix in {".yaml", ".yml"} or candidate.exists() or "/" in name_or_path:
        return load_team_file(candidate, env)
    bundled = bundled_configs_dir() / f"{name_or_path}.yaml"
    if bundled.is_file():
        team = load_team_file(bundled, env)
        return Team(team.name, team.agents, team.orchestrator, f"bundled:{name_or_path}",
                    team.warnings)
    names = bundled_team_names()
    close = difflib.get_close_matches(name_or_path, names, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise ConfigError(f"no team named '{name_or_path}': {hint}bundled teams are "
                      f"{', '.join(names) or '(none)'}; or give a path to a team YAML file")
