"""What a team named in a *tool argument* may do, and where `${VAR}` expands.

The operator (who starts the server or types a CLI command) is trusted: `--team any.yaml`
works as before. A tool argument is not: it comes from a coding agent that may be reading a
hostile repository. So over MCP, `team` names

- a bundled team (`frontier`, `local`, ...), or
- a file in the server's team directories: each `--team-dir` and the user's
  `~/.config/massgen-mcp/teams/` (by name, `review`, or by a path inside them), or
- the operator's own `--team` / `--checkpoint-team` value.

Anything else is refused unless the operator started the server with `--allow-team-path`.
Even then such a file may not start processes (`mcp_servers`), read files
(`orchestrator.context_paths`) or change where keys go (`base_url`, `api_key`, headers),
unless the operator chose `--allow-team-path=full`.

`${VAR}` expands only in fields that hold secrets or endpoints (a backend's `api_key`,
`base_url`, `api_version`, its `mcp_servers` and a CLI agent's `env`), never in prompts such as
`system_message`, which are sent to a model. Fields that choose an endpoint or a process (and
`env` entries that name an endpoint, like `ANTHROPIC_BASE_URL`) read the real environment only,
not the project's `.env` (see `env.py`). In a restricted file, `${VAR}` is refused everywhere:
such a file may not hold keys or endpoints at all, and a variable in `api_version` or a model
name would carry a secret into a URL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from massgen_mcp.config.env import expand_vars, redirects
from massgen_mcp.config.yaml_file import check_path_text
from massgen_mcp.errors import ConfigError

PathAccess = Literal["none", "restricted", "full"]
ALLOW_FLAG = "--allow-team-path"
# Backend fields that decide where requests and keys go, or that start processes.
_REDIRECTING = ("base_url", "api_base", "azure_endpoint", "endpoint", "api_key", "headers", "env",
                "default_headers", "extra_headers", "http_headers")
_PROCESSES = ("mcp_servers", "custom_tools", "command", "cwd")
# Backend fields where `${VAR}` is expanded (the whole value, for mcp_servers).
_EXPANDED = ("api_key", "base_url", "api_version", "mcp_servers", "env")  # env: a CLI agent's
_SECRET_FIELDS = ("api_key",)  # where a `${VAR}` may take its value from the project's .env
# A shell for the agent's model (tools/shell.py), and the network for it: the operator's call.
_SHELL = ("enable_mcp_command_line", "command_line_docker_network_mode", "command_line_network",
          "command_line_execution_mode", "command_line_docker_image")
# Orchestrator limits a tool call's own arguments cap (server/tools.py): a restricted file may
# not go past what the call itself could ask for.
_TOOL_LIMITS = {"max_new_answers_per_agent": 20, "orchestrator_timeout_seconds": 86400}


@dataclass(frozen=True)
class TeamPolicy:
    """The operator's choices about teams named by tool calls."""

    team_dirs: tuple[Path, ...] = ()
    path_access: PathAccess = "none"
    operator_teams: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def create(cls, team_dirs: list[str] | None = None, path_access: str | None = None,
               operator_teams: list[str | None] | None = None) -> TeamPolicy:
        from massgen_mcp.paths import user_teams_dir

        dirs = [Path(d).expanduser().resolve() for d in team_dirs or []]
        dirs.append(user_teams_dir().resolve())
        access = path_access or "none"
        if access not in ("none", "restricted", "full"):
            raise ConfigError(f"{ALLOW_FLAG}: '{access}' is not one of restricted, full")
        return cls(tuple(dict.fromkeys(dirs)), access,  # type: ignore[arg-type]
                   frozenset(t for t in operator_teams or [] if t))


@dataclass(frozen=True)
class TeamSource:
    """Where a tool call's team comes from, and whether its file is restricted."""

    name: str  # the bundled name, or the file's stem
    path: Path | None  # None: load the bundled team `name`
    restricted: bool = False
    operator: bool = False  # the operator's own --team value: load it as the operator would


def team_dir_files(dirs: tuple[Path, ...]) -> dict[str, Path]:
    """Team files in the team directories by name (the first directory wins)."""
    found: dict[str, Path] = {}
    for d in dirs:
        if not d.is_dir():
            continue
        for p in sorted([*d.glob("*.yaml"), *d.glob("*.yml")]):
            found.setdefault(p.stem, p)
    return found


def _inside(path: Path, dirs: tuple[Path, ...]) -> bool:
    return any(path.is_relative_to(d) for d in dirs)


def resolve_team_argument(arg: str, policy: TeamPolicy, cwd: Path) -> TeamSource:
    """Which team a tool call's `team` argument may load (ConfigError when not allowed)."""
    from massgen_mcp.paths import bundled_configs_dir, bundled_team_names

    check_path_text(arg)
    if arg in policy.operator_teams:
        return TeamSource(arg, None, operator=True)
    is_path = "/" in arg or "\\" in arg or arg.endswith((".yaml", ".yml")) or arg.startswith("~")
    if not is_path:
        mine = team_dir_files(policy.team_dirs)
        if arg in mine:
            # A symlink in a team directory is trusted only if it leads to a file that is
            # in one too: otherwise it is a path outside, however it was named.
            real = mine[arg].resolve()
            if _inside(real, policy.team_dirs):
                return TeamSource(arg, real)
            return _outside(arg, real, policy, f"team '{arg}' is a link to {real}, which is "
                            "outside the team directories")
        if (bundled_configs_dir() / f"{arg}.yaml").is_file():
            return TeamSource(arg, None)
        names = sorted({*bundled_team_names(), *mine})
        import difflib

        close = difflib.get_close_matches(arg, names, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ConfigError(f"no team named '{arg}': {hint}teams are {', '.join(names) or '(none)'}"
                          f"; or put a team YAML file in {_dirs_text(policy)}")
    path = (cwd / Path(arg).expanduser()).resolve()
    if _inside(path, policy.team_dirs):
        return TeamSource(path.stem, path)
    return _outside(arg, path, policy, "this file is outside them")


def _outside(arg: str, path: Path, policy: TeamPolicy, why: str) -> TeamSource:
    """A team file outside the team directories: refused, or restricted, as the operator
    chose."""
    if policy.path_access == "none":
        raise ConfigError(
            f"team '{arg}': a tool call may name a bundled team or a file in the server's team "
            f"directories ({_dirs_text(policy)}); {why}. The operator can "
            f"add its directory with --team-dir, or start the server with {ALLOW_FLAG} to let "
            "tool calls name any team file (without mcp_servers, base_url, api_key or headers)")
    return TeamSource(path.stem, path, restricted=policy.path_access == "restricted")


def _dirs_text(policy: TeamPolicy) -> str:
    return ", ".join(str(d) for d in policy.team_dirs) or "none configured"


def check_restricted(data: Any, where: str) -> None:
    """Refuse a restricted team file that starts processes, reads files or redirects keys."""
    from massgen_mcp.config.ag2 import restricted_paths as ag2_restricted_paths

    if not isinstance(data, dict):
        return
    agents = data.get("agents")
    if agents is None and "agent" in data:
        agents = [data["agent"]]
    found = []
    orchestrator = data.get("orchestrator")
    if isinstance(orchestrator, dict) and orchestrator.get("context_paths"):
        found.append("orchestrator.context_paths")  # would let the agents read those files
    privileged = _privileged(data, agents)
    if privileged:
        raise ConfigError(
            f"{where}: {', '.join(privileged)}: a team file named by a tool call may not give "
            "its agents a shell or the network, nor raise limits past what the tool's own "
            f"arguments allow (max_answers_per_agent 20, timeout_s 86400); "
            f"move the file into a --team-dir, or have the operator start the server with "
            f"{ALLOW_FLAG}=full")
    for i, agent in enumerate(agents if isinstance(agents, list) else []):
        backend = agent.get("backend") if isinstance(agent, dict) else None
        if isinstance(backend, dict):
            found += [f"agents[{i}].backend.{k}" for k in backend
                      if k in _PROCESSES or k in _REDIRECTING]
            found += [f"agents[{i}].backend.{k} (${{...}})" for k, v in backend.items()
                      if k not in _PROCESSES and k not in _REDIRECTING and _has_var(v)]
            found += ag2_restricted_paths(backend, f"agents[{i}].backend")  # nested llm_config
    if found:
        raise ConfigError(
            f"{where}: {', '.join(found)}: a team file named by a tool call may not start "
            "processes (mcp_servers), read files (context_paths), change where keys go "
            "(base_url, api_key, headers) or read environment variables (${...}); "
            f"move the file into a --team-dir, or have the operator start the server with "
            f"{ALLOW_FLAG}=full")


def _privileged(data: dict[str, Any], agents: Any) -> list[str]:
    """The keys of a restricted file that only the operator may set (see `_SHELL` and
    `_TOOL_LIMITS`)."""
    found = []
    orchestrator = data.get("orchestrator")
    if isinstance(orchestrator, dict):
        for key, cap in _TOOL_LIMITS.items():
            if key not in orchestrator:
                continue
            value = orchestrator[key]
            too_high = value is None or (isinstance(value, int | float) and value > cap)
            if too_high or not isinstance(value, int | float | None):
                found.append(f"orchestrator.{key} (above {cap})")
    for i, agent in enumerate(agents if isinstance(agents, list) else []):
        backend = agent.get("backend") if isinstance(agent, dict) else None
        if isinstance(backend, dict):
            found += [f"agents[{i}].backend.{k}" for k in backend
                      if k in _SHELL and backend[k] not in (None, False, "none")]
    return found


def _has_var(value: Any) -> bool:
    """Does a YAML value hold `${` anywhere (a variable that would be expanded)?"""
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, dict):
        return any(_has_var(k) or _has_var(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_var(v) for v in value)
    return False


def expand_team_vars(data: Any, env: Any, *,
                     placeholders: Callable[[Any], Mapping[str, str]] | None = None,
                     errors: list[str] | None = None) -> Any:
    """`${VAR}` expanded in the fields that hold secrets or endpoints, and nowhere else.

    `placeholders(agent)` gives names that are not environment variables (MassGen's
    `${cwd}`); `errors` collects unset variables instead of raising (see `expand_vars`).
    """
    if not isinstance(data, dict):
        return data
    agents = data.get("agents")
    if not isinstance(agents, list):
        return data
    out = dict(data)
    out["agents"] = []
    # Keys may come from the project's .env; endpoints and commands only from the real
    # environment (unless the operator allowed the .env to set them).
    endpoints = env.endpoints() if hasattr(env, "endpoints") else env
    for i, agent in enumerate(agents):
        backend = agent.get("backend") if isinstance(agent, dict) else None
        if isinstance(backend, dict):
            names = placeholders(agent) if placeholders else None
            new: dict[str, Any] = {}
            for k, v in backend.items():
                where = f"agents[{i}].backend.{k}"
                if k == "mcp_servers":
                    new[k] = _expand_servers(v, env, endpoints, where, names, errors)
                elif k == "env":
                    new[k] = _expand_env(v, env, endpoints, where, names, errors)
                elif k in _EXPANDED:
                    new[k] = expand_vars(v, env if k in _SECRET_FIELDS else endpoints, where,
                                         placeholders=names, errors=errors)
                else:
                    new[k] = v
            agent = {**agent, "backend": new}
        out["agents"].append(agent)
    return out


def _expand_env(values: Any, env: Any, endpoints: Any, where: str,
                names: Mapping[str, str] | None, errors: list[str] | None) -> Any:
    """A process's `env`: keys may come from the .env, but not a variable that names an
    endpoint, a proxy or a CA bundle (`ANTHROPIC_BASE_URL: ${X}`)."""
    if not isinstance(values, dict):
        return expand_vars(values, endpoints, where, placeholders=names, errors=errors)
    return {k: expand_vars(v, endpoints if redirects(str(k)) else env, f"{where}.{k}",
                           placeholders=names, errors=errors)
            for k, v in values.items()}


def _expand_servers(servers: Any, env: Any, endpoints: Any, where: str,
                    names: Mapping[str, str] | None, errors: list[str] | None) -> Any:
    """A backend's `mcp_servers` (list or mapping by name): `env` and `headers` values are
    secrets (they may come from the .env); command, args, url and cwd are not."""
    def one(server: Any, at: str) -> Any:
        if not isinstance(server, dict):
            return expand_vars(server, endpoints, at, placeholders=names, errors=errors)
        return {k: _expand_env(v, env, endpoints, f"{at}.{k}", names, errors) if k == "env"
                else expand_vars(v, env if k == "headers" else endpoints, f"{at}.{k}",
                                 placeholders=names, errors=errors)
                for k, v in server.items()}

    if isinstance(servers, list):
        return [one(s, f"{where}[{j}]") for j, s in enumerate(servers)]
    if isinstance(servers, dict):
        return {k: one(s, f"{where}.{k}") for k, s in servers.items()}
    return expand_vars(servers, endpoints, where, placeholders=names, errors=errors)
