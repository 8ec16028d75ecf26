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
`system_message`, which are sent to a model.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from massgen_mcp.config.env import expand_vars
from massgen_mcp.config.yaml_file import check_path_text
from massgen_mcp.errors import ConfigError

PathAccess = Literal["none", "restricted", "full"]
ALLOW_FLAG = "--allow-team-path"
# Backend fields that decide where requests and keys go, or that start processes.
_REDIRECTING = ("base_url", "api_base", "azure_endpoint", "endpoint", "api_key", "headers",
                "default_headers", "extra_headers", "http_headers")
_PROCESSES = ("mcp_servers", "custom_tools", "command", "cwd")
# Backend fields where `${VAR}` is expanded (the whole value, for mcp_servers).
_EXPANDED = ("api_key", "base_url", "api_version", "mcp_servers", "env")  # env: a CLI agent's


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
            return TeamSource(arg, mine[arg])
        if (bundled_configs_dir() / f"{arg}.yaml").is_file():
            return TeamSource(arg, None)
        names = sorted({*bundled_team_names(), *mine})
        close = difflib.get_close_matches(arg, names, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ConfigError(f"no team named '{arg}': {hint}teams are {', '.join(names) or '(none)'}"
                          f"; or put a team YAML file in {_dirs_text(policy)}")
    path = (cwd / Path(arg).expanduser()).resolve()
    if _inside(path, policy.team_dirs):
        return TeamSource(path.stem, path)
    if policy.path_access == "none":
        raise ConfigError(
            f"team '{arg}': a tool call may name a bundled team or a file in the server's team "
            f"directories ({_dirs_text(policy)}); this file is outside them. The operator can "
            f"add its directory with --team-dir, or start the server with {ALLOW_FLAG} to let "
            "tool calls name any team file (without mcp_servers, base_url, api_key or headers)")
    return TeamSource(path.stem, path, restricted=policy.path_access == "restricted")


def _dirs_text(policy: TeamPolicy) -> str:
    return ", ".join(str(d) for d in policy.team_dirs) or "none configured"


def check_restricted(data: Any, where: str) -> None:
    """Refuse a restricted team file that starts processes, reads files or redirects keys."""
    if not isinstance(data, dict):
        return
    agents = data.get("agents")
    if agents is None and "agent" in data:
        agents = [data["agent"]]
    found = []
    orchestrator = data.get("orchestrator")
    if isinstance(orchestrator, dict) and orchestrator.get("context_paths"):
        found.append("orchestrator.context_paths")  # would let the agents read those files
    for i, agent in enumerate(agents if isinstance(agents, list) else []):
        backend = agent.get("backend") if isinstance(agent, dict) else None
        if isinstance(backend, dict):
            found += [f"agents[{i}].backend.{k}" for k in backend
                      if k in _PROCESSES or k in _REDIRECTING]
    if found:
        raise ConfigError(
            f"{where}: {', '.join(found)}: a team file named by a tool call may not start "
            "processes (mcp_servers), read files (context_paths) or change where keys go "
            "(base_url, api_key, headers); "
            f"move the file into a --team-dir, or have the operator start the server with "
            f"{ALLOW_FLAG}=full")


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
    for i, agent in enumerate(agents):
        backend = agent.get("backend") if isinstance(agent, dict) else None
        if isinstance(backend, dict):
            names = placeholders(agent) if placeholders else None
            backend = {k: expand_vars(v, env, f"agents[{i}].backend.{k}", placeholders=names,
                                      errors=errors)
                       if k in _EXPANDED else v for k, v in backend.items()}
            agent = {**agent, "backend": backend}
        out["agents"].append(agent)
    return out
