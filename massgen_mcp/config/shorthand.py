"""The `--models` shorthand: `openai/gpt-5,anthropic/claude-sonnet-4-5` as a team."""

from __future__ import annotations

import re
from typing import Any

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.config.providers import is_weights_path, short_model
from massgen_mcp.config.team import Team
from massgen_mcp.errors import ConfigError

#: The longest agent id taken from a model's name.
ID_CHARS = 32


def parse_models(models: str | list[str], where: str = "--models") -> list[tuple[str, str]]:
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
            raise ConfigError(f"{where}: '{raw}' should be provider/model, e.g. openai/gpt-5 "
                              "or openrouter/meta-llama/llama-3.3-70b-instruct")
        out.append((prefix, model))
    if not out:
        raise ConfigError(f"{where}: give at least one provider/model")
    return out


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.")[:64]


def team_from_models(
    models: str | list[str], env: Environment | None = None,
    orchestrator: dict[str, Any] | None = None, where: str = "--models",
) -> Team:
    """Build a team from the `--models` shorthand; agent ids come from the model names.
    `where` is how the caller names the argument in messages (`--models`, `models`)."""
    pairs = parse_models(models, where)
    agents, seen = [], set()
    for i, (kind, model) in enumerate(pairs):
        # An id names directories (never '.', '..' or empty: `openai/..` gives `openai`), and
        # people read it: a weights path gives its file's name, cut (the -2, -3 of a repeated
        # model then stays visible).
        short = short_model(model, limit=ID_CHARS) if is_weights_path(model) else model
        base = _safe(short.rsplit("/", 1)[-1]) or _safe(kind) or f"agent-{i + 1}"
        agent_id, n = base, 2
        while agent_id in seen:
            agent_id, n = f"{base}-{n}", n + 1
        seen.add(agent_id)
        backend: dict[str, Any] = {"type": kind}
        if model:
            backend["model"] = model
        agents.append({"id": agent_id, "backend": backend})
    spec = ",".join(f"{k}/{m}" if m else k for k, m in pairs)
    return team_from_data({"agents": agents, "orchestrator": orchestrator or {}},
                          where, env, name=f"models:{spec}")
