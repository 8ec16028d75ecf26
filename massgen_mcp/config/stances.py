"""Stances for a team's agents (PAL-style): `for`, `against`, `neutral` or an instruction,
given per agent by position or as `agent_id=stance`."""

from __future__ import annotations

from massgen_mcp.errors import ConfigError

#: The longest stance instruction accepted (it goes into the agent's system prompt).
MAX_STANCE_CHARS = 1000


def stance_map(stances: list[str] | dict[str, str], ids: list[str],
               where: str) -> dict[str, str]:
    items = list(stances.items()) if isinstance(stances, dict) else []
    if not isinstance(stances, dict):
        positional = 0
        for raw in stances:
            key, sep, rest = str(raw).partition("=")
            if sep and key.strip() in ids:
                items.append((key.strip(), rest))
            else:
                if positional >= len(ids):
                    raise ConfigError(f"{where}: {len(stances)} stances for a team of "
                                      f"{len(ids)} agents ({', '.join(ids)}); give one per "
                                      "agent, or name agents as id=stance")
                items.append((ids[positional], str(raw)))
                positional += 1
    out = {}
    for agent_id, stance in items:
        text = str(stance).strip()
        if agent_id not in ids:
            raise ConfigError(f"{where}: no agent '{agent_id}' in this team (agents: "
                              f"{', '.join(ids)})")
        if not text or len(text) > MAX_STANCE_CHARS:
            raise ConfigError(f"{where}: the stance for {agent_id} must be for, against, "
                              f"neutral or an instruction of 1 to {MAX_STANCE_CHARS} "
                              "characters")
        out[agent_id] = text
    return out
