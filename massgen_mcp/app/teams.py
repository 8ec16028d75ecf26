"""Choosing the team a call runs on: its limits checked, a tool call's team file held to the
operator's policy, and the reference a queued run carries to its worker.

A tool call's team is a `ChosenTeam`: the resolved team together with how the call named it.
A run handed to a worker carries that reference (runs/scale/queue.py), never the resolved
team and its keys; the worker resolves it again under the same policy (cli/worker.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from massgen_mcp.errors import InputError

if TYPE_CHECKING:
    from massgen_mcp.config.choose import Vocabulary
    from massgen_mcp.config.env import Environment
    from massgen_mcp.config.team import Team
    from massgen_mcp.config.trust import TeamPolicy


@dataclass(frozen=True)
class ChosenTeam:
    """The team a tool call chose (`App.tool_team`) and how the call named it."""

    team: Team
    #: The call's team arguments and the operator's caps, which a worker resolves the team
    #: from again; None when only this process can run it (it samples the client's model:
    #: only this process has the client's session).
    reference: dict[str, Any] | None

    @staticmethod
    def of(team: Team | ChosenTeam) -> ChosenTeam:
        """`team` as a `ChosenTeam`: a plain `Team` (the CLI's, the Python API's, a worker's)
        has no reference, so its runs always run in this process."""
        return team if isinstance(team, ChosenTeam) else ChosenTeam(team, None)


def check_limits(words: Vocabulary, *, timeout_s: float | None,
                 max_answers_per_agent: int | None,
                 min_agreement: float | dict[str, float] | None) -> None:
    """Refuse limits no run can have, in the caller's own words."""
    if timeout_s is not None and timeout_s <= 0:
        raise InputError(f"{words.timeout} must be a positive number of seconds")
    if max_answers_per_agent is not None and max_answers_per_agent < 1:
        raise InputError(f"{words.max_answers} must be at least 1")
    shares = min_agreement.values() if isinstance(min_agreement, dict) else [min_agreement]
    if any(v is not None and not 0 < v <= 1 for v in shares):
        raise InputError(f"{words.min_agreement} is the share of votes the winner needs: "
                         "a number above 0 and at most 1, e.g. 0.67")


def check_cli_agents(team: Team, where: str, allowed: bool) -> None:
    """A coding-agent CLI is a process with the user's login and tools: a tool call may
    only start one from a team the operator chose, unless they said otherwise (`allowed`)."""
    cli = [a.id for a in team.agents if a.provider.coding_cli]
    if cli and not allowed:
        raise InputError(
            f"{where}: {', '.join(cli)} would start a coding-agent CLI (on the user's own "
            "login), which a tool call may only do through the server's --team or a "
            "--team-dir file; start the server with --allow-cli-agents to allow it")


async def tool_team(name: str, policy: TeamPolicy, cwd: Path, env: Environment, *,
                    allow_cli_agents: bool) -> Team:
    """The team a tool call's `team` argument names, held to the operator's `policy`
    (config/trust.py); the file is read and parsed off the event loop."""
    from massgen_mcp.config.load import load_team, team_from_data
    from massgen_mcp.config.trust import check_restricted, resolve_team_argument
    from massgen_mcp.config.yaml_file import read_yaml_async

    source = resolve_team_argument(name, policy, cwd)
    if source.path is None:  # bundled, or the operator's own --team value
        bundled = await anyio.to_thread.run_sync(lambda: load_team(source.name, env))
        if not source.operator:  # a bundled team of CLIs (`clis`) runs on the user's
            check_cli_agents(bundled, f"team '{name}'", allow_cli_agents)  # logins
        return bundled
    path = source.path
    data = await read_yaml_async(path, regular_only=True)
    if source.restricted:
        check_restricted(data, path.name)
    chosen = team_from_data(data, path.name, env, name=path.stem)
    if source.restricted:
        check_cli_agents(chosen, path.name, allow_cli_agents)
    return chosen
