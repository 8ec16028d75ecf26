"""Which team a call runs on when it names none: keys that are set, local servers, sampling."""

from __future__ import annotations

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import load_team
from massgen_mcp.config.providers import PROVIDERS
from massgen_mcp.config.shorthand import team_from_models
from massgen_mcp.config.team import Team
from massgen_mcp.errors import ConfigError

AUTO_PROVIDERS = ("openai", "claude", "gemini", "grok", "openrouter")
AUTO_MODELS = {"openrouter": ("openai/gpt-5", "anthropic/claude-sonnet-4.5",
                              "google/gemini-2.5-pro")}
NO_MODELS_HELP = (
    "no models are configured: set a provider key (OPENAI_API_KEY, ANTHROPIC_API_KEY, "
    "GEMINI_API_KEY, XAI_API_KEY or OPENROUTER_API_KEY) in the environment or a .env file, "
    "or pass models (e.g. models='openai/gpt-5,anthropic/claude-sonnet-4-5', or "
    "'ollama/llama3.3' for a local server) or a team (a bundled name or a team YAML path); "
    "with an MCP client that supports sampling, models='sampling' uses the client's model. "
    "Run `massgen-mcp doctor` to see what is available.")


def auto_team_models(env: Environment) -> list[str]:
    """The --models list a default team is built from: one agent per provider with a key;
    with a single provider, three agents on it (OpenRouter: three different vendors)."""
    available = [n for n in AUTO_PROVIDERS if env.first(PROVIDERS[n].key_env)]
    direct = [n for n in available if n != "openrouter"]
    if len(direct) >= 2:
        return [f"{n}/{PROVIDERS[n].default_model}" for n in direct]
    if "openrouter" in available:
        return [f"openrouter/{m}" for m in AUTO_MODELS["openrouter"]]
    if direct:
        return [f"{direct[0]}/{PROVIDERS[direct[0]].default_model}"] * 3
    return []


def resolve_team(
    *,
    models: str | list[str] | None = None,
    team: str | None = None,
    default_team: str | None = None,
    env: Environment | None = None,
    sampling_available: bool = False,
    extra_models: list[str] | None = None,
) -> Team:
    """Pick the team for a call: the call's models, else its team, else the server's default
    team, else one built from the keys that are set (or local model servers found by the
    caller, `extra_models`), else the MCP client's own model through sampling."""
    env = env if env is not None else Environment()
    if models:
        return team_from_models(models, env)
    if team:
        return load_team(team, env)
    if default_team:
        return load_team(default_team, env)
    auto = auto_team_models(env) or list(extra_models or [])
    if auto:
        t = team_from_models(auto, env)
        return Team("auto", t.agents, t.orchestrator, "auto:" + ",".join(auto))
    if sampling_available:
        t = team_from_models(["sampling"] * 3, env)
        return Team("sampling", t.agents, t.orchestrator, "auto:sampling")
    raise ConfigError(NO_MODELS_HELP)
