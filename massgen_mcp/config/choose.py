"""Which team a call runs on when it names none: keys that are set, local servers, sampling.

Also: a bundled team whose keys are only partly set runs with the agents it can (two at
least) and says which it left out; and every message names the caller's own way of saying
things (`Vocabulary`: CLI flags, MCP tool arguments or Python keyword arguments).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from massgen_mcp.config.env import Environment
from massgen_mcp.errors import ConfigError, MissingKeyError
from massgen_mcp.paths import bundled_configs_dir, own_command

if TYPE_CHECKING:  # the team models and loaders load when a team is chosen (start-up time)
    from massgen_mcp.config.team import AgentSpec, Team

AUTO_PROVIDERS = ("openai", "claude", "gemini", "grok", "openrouter")
AUTO_MODELS = {"openrouter": ("openai/gpt-5", "anthropic/claude-sonnet-4.5",
                              "google/gemini-2.5-pro")}
MIN_AGENTS = 2
KEY_VARIABLES = "OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, XAI_API_KEY or " \
                "OPENROUTER_API_KEY"


@dataclass(frozen=True)
class Vocabulary:
    """How a caller names the choices: `{}` stands for the value."""

    models: str
    team: str
    timeout: str
    max_answers: str
    sampling: bool  # whether this caller can run on its client's model
    stances: str = "stances"
    min_agreement: str = "min_agreement"

    @property
    def models_name(self) -> str:
        return self.models.split("{}")[0].rstrip(" ='\"")


CLI = Vocabulary(models="--models {}", team="--team {}", timeout="--timeout",
                 max_answers="--max-answers", sampling=False, stances="--stance",
                 min_agreement="--min-agreement")
MCP = Vocabulary(models="models='{}'", team="team='{}'", timeout="timeout_s",
                 max_answers="max_answers_per_agent", sampling=True)
PYTHON = Vocabulary(models='models="{}"', team='team="{}"', timeout="timeout_s",
                    max_answers="max_answers_per_agent", sampling=False)


def no_models_help(vocab: Vocabulary = MCP) -> str:
    sampling = (f"; with an MCP client that supports sampling, "
                f"{vocab.models.format('sampling')} uses the client's model"
                if vocab.sampling else "")
    example = vocab.models.format("openai/gpt-5,anthropic/claude-sonnet-4-5")
    return (f"no models are configured: set a provider key ({KEY_VARIABLES}) in the "
            "environment or a .env file, or start a local model server (Ollama, LM Studio, "
            f"vLLM, SGLang), or pass {example} (or {vocab.models.format('ollama/llama3.3')} "
            "for a local server) or "
            f"{vocab.team.format('frontier')} (a bundled team or a team YAML path){sampling}. "
            f"Run `{own_command()} doctor` to see what is available.")


#: A default team on a single provider is not three copies of one configuration: its agents
#: use these models of that provider, ...
SINGLE_PROVIDER_MODELS = {
    "openai": ("gpt-5", "gpt-5-mini", "gpt-5"),
    "claude": ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"),
    "gemini": ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-pro"),
    "grok": ("grok-4", "grok-3-mini", "grok-4"),
}
#: ... these temperatures (where the provider's models take one: OpenAI's and xAI's
#: reasoning models do not) ...
SINGLE_PROVIDER_TEMPERATURES = {"claude": (None, 0.3, 1.0), "gemini": (None, 0.3, 1.0)}
#: ... and these stances (prompts.STANCES).
SINGLE_PROVIDER_STANCES = ("neutral", "against", "for")


def auto_team_models(env: Environment) -> list[str]:
    """The --models list a default team is built from: one agent per provider with a key;
    with a single provider, three agents on it, on different models where it has them
    (OpenRouter: three different vendors)."""
    from massgen_mcp.config.providers import PROVIDERS

    available = [n for n in AUTO_PROVIDERS if env.first(PROVIDERS[n].key_env)]
    direct = [n for n in available if n != "openrouter"]
    if len(direct) >= 2:
        return [f"{n}/{PROVIDERS[n].default_model}" for n in direct]
    if "openrouter" in available:
        return [f"openrouter/{m}" for m in AUTO_MODELS["openrouter"]]
    if direct:
        name = direct[0]
        models = SINGLE_PROVIDER_MODELS.get(name, (PROVIDERS[name].default_model,) * 3)
        return [f"{name}/{m}" for m in models]
    return []


def vary_single_provider(team: Team) -> Team:
    """A default team whose agents all use one provider, with different temperatures and
    stances (their models differ already, where the provider has several)."""
    providers = {a.provider.name for a in team.agents}
    if len(providers) != 1 or len(team.agents) < 2:
        return team
    name = providers.pop()
    temperatures = SINGLE_PROVIDER_TEMPERATURES.get(name)
    agents = []
    for i, a in enumerate(team.agents):
        backend = a.backend
        t = temperatures[i % len(temperatures)] if temperatures else None
        if t is not None and backend.temperature is None:
            backend = backend.model_copy(update={"temperature": t})
        agents.append(replace(a, backend=backend,
                              stance=SINGLE_PROVIDER_STANCES[i % len(SINGLE_PROVIDER_STANCES)]))
    def described(a: AgentSpec) -> str:
        t = a.backend.temperature
        return (f"{a.id} ({a.model}, temperature {'default' if t is None else t}, "
                f"stance {a.stance})")

    varied = ", ".join(described(a) for a in agents)
    note = (f"the default team uses one provider ({name}, the only one with a key); its "
            f"agents differ so they do not all answer alike: {varied}")
    return replace(team, agents=tuple(agents), notes=(*team.notes, note))


def keys_note(team: Team) -> str:
    """Which key (by variable name) and endpoint each agent of a default team uses."""
    return "keys and endpoints: " + "; ".join(
        f"{a.id}: {a.key_source or 'no key'} at {a.endpoint}" for a in team.agents)


def _bundled_file(name: str) -> str | None:
    if "/" in name or name.endswith((".yaml", ".yml")):
        return None
    path = bundled_configs_dir() / f"{name}.yaml"
    return str(path) if path.is_file() else None


def _load(name: str, env: Environment) -> Team:
    """A team by name or path; a bundled team with missing keys keeps the agents it can
    run (at least MIN_AGENTS) and notes the others."""
    from massgen_mcp.config.load import load_team, team_from_data

    try:
        return load_team(name, env)
    except MissingKeyError:
        path = _bundled_file(name)
        if path is None:
            raise
    import yaml  # type: ignore[import-untyped,unused-ignore]

    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    kept, missing = [], []
    for agent in data.get("agents") or []:
        try:
            team_from_data({"agents": [agent]}, f"{name}.yaml", env)
            kept.append(agent)
        except MissingKeyError as e:
            backend = agent.get("backend") or {}
            missing.append((str(agent.get("id")), f"{backend.get('type')}/"
                            f"{backend.get('model', '')}".rstrip("/"), e.env_vars))
    variables = [" or ".join(v) for _, _, v in missing]
    if len(kept) < MIN_AGENTS:
        can = f"only {kept[0].get('id')} can run" if kept else "none of its agents can run"
        raise ConfigError(
            f"team '{name}' needs {_and(variables)}, which {'is' if len(variables) == 1 else 'are'}"
            f" not set ({can}, and a team needs at least {MIN_AGENTS}); set "
            f"{'it' if len(variables) == 1 else 'them'} in the environment or a .env file, "
            f"or try the demo team first: {own_command()} run \"...\" --team demo (no key)")
    team = load_team_from(data, kept, name, env)
    left = "; ".join(f"{aid} ({model}): {' or '.join(v)} not set" for aid, model, v in missing)
    note = (f"team '{name}' runs with {len(kept)} of its {len(kept) + len(missing)} agents; "
            f"left out {left}")
    return replace(team, notes=(*team.notes, note))


def load_team_from(data: dict[str, object], agents: list[object], name: str,
                   env: Environment) -> Team:
    from massgen_mcp.config.load import team_from_data

    team = team_from_data({**data, "agents": agents}, f"{name}.yaml", env, name=name)
    return replace(team, source=f"bundled:{name}")


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def resolve_team(
    *,
    models: str | list[str] | None = None,
    team: str | None = None,
    default_team: str | None = None,
    env: Environment | None = None,
    sampling_available: bool = False,
    extra_models: list[str] | None = None,
    vocabulary: Vocabulary = MCP,
) -> Team:
    """Pick the team for a call: the call's models, else its team, else the server's default
    team, else one built from the keys that are set (or local model servers found by the
    caller, `extra_models`), else the MCP client's own model through sampling."""
    from massgen_mcp.config.shorthand import team_from_models
    from massgen_mcp.config.team import Team

    env = env if env is not None else Environment()
    if models:
        return team_from_models(models, env, where=vocabulary.models_name)
    if team:
        return _load(team, env)
    if default_team:
        return _load(default_team, env)
    auto = auto_team_models(env) or list(extra_models or [])
    if auto:
        t = team_from_models(auto, env)
        chosen = vary_single_provider(
            Team("auto", t.agents, t.orchestrator, "auto:" + ",".join(auto)))
        return replace(chosen, notes=(*chosen.notes, keys_note(chosen)))
    if sampling_available:
        t = team_from_models(["sampling"] * 3, env)
        return Team("sampling", t.agents, t.orchestrator, "auto:sampling")
    raise ConfigError(no_models_help(vocabulary))
