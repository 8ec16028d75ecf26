"""Which providers can run here: keys present (never shown), local servers answering.

Shared by the `list_backends` tool and `massgen-mcp doctor`. Keys are only ever reported
as present/absent (and, in `doctor`, as their last four characters).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from massgen_mcp.backends.cli.availability import CliStatus, cli_statuses
from massgen_mcp.config.choose import resolve_team
from massgen_mcp.config.env import Environment
from massgen_mcp.config.local import local_models, local_team_models
from massgen_mcp.config.prices import price_table, prices_as_of
from massgen_mcp.config.providers import PROVIDERS
from massgen_mcp.errors import MassgenError
from massgen_mcp.paths import bundled_team_names


class ProviderStatus(BaseModel):
    provider: str
    wire_format: str
    usable: bool
    key_variables: list[str] = Field(default_factory=list)
    key_present: bool = False
    key_hint: str | None = Field(default=None, description="Last 4 characters (doctor only).")
    key_source: str | None = Field(default=None, description=(
        "The variable the key comes from, and the project's .env file when only it sets it."))
    local: bool = False
    endpoint: str | None = None
    models: list[str] = Field(default_factory=list, description="Models a local server lists.")
    fix: str = Field(default="", description="What to do to make it usable.")


class BackendsReport(BaseModel):
    providers: list[ProviderStatus]
    default_team: str = Field(description="What a call without models/team would run on.")
    default_team_error: str | None = None
    bundled_teams: list[str]
    sampling_available: bool = False
    coding_agents: list[CliStatus] = Field(
        default_factory=list, description="Coding-agent CLIs (claude_code, codex, gemini_cli).")
    prices: dict[str, dict[str, dict[str, float]]] = Field(
        default_factory=dict, description="USD per million input/output tokens used for cost "
        "estimates, by provider and model; a model not listed has an unknown cost.")
    prices_as_of: str = ""
    usage: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="By provider, over every finished run in this "
        "server's run records (every process sharing its --store): runs, provider_calls "
        "(cancelled ones included), cancelled_calls, input/output/total tokens, cost_usd.")


def provider_statuses(env: Environment, local: dict[str, list[str]],
                      show_hint: bool = False) -> list[ProviderStatus]:
    out = []
    for p in PROVIDERS.values():
        if p.name in ("chatcompletion", "sampling", "function", "test", "demo") or p.coding_cli:
            continue  # coding-agent CLIs are reported by cli_statuses()
        if p.keys_from_its_config:  # AG2 (an optional extra): keys of its llm_config
            from massgen_mcp.backends.ag2 import ag2_status_fix

            fix = ag2_status_fix()
            out.append(ProviderStatus(provider=p.name, wire_format=p.wire, usable=not fix,
                                      fix=fix))
            continue
        if p.local:
            models = local.get(p.name)
            endpoint = env.get(f"{p.name.upper()}_BASE_URL") or p.base_url
            out.append(ProviderStatus(
                provider=p.name, wire_format=p.wire, usable=models is not None, local=True,
                endpoint=endpoint, models=(models or [])[:20],
                fix="" if models is not None else
                f"start {p.name} so that {endpoint}/models answers (or set "
                f"{p.name.upper()}_BASE_URL), then use models='{p.name}/<model>'"))
            continue
        key = env.first(p.key_env)
        fix = "" if key else f"set {' or '.join(p.key_env)}" + (
            f" (get one at {p.signup})" if p.signup else "")
        if p.name == "azure_openai" and key and not env.first(("AZURE_OPENAI_ENDPOINT",)):
            fix = "set AZURE_OPENAI_ENDPOINT (or base_url in a team file)"
        out.append(ProviderStatus(
            provider=p.name, wire_format=p.wire, usable=bool(key) and not fix,
            key_variables=list(p.key_env), key_present=bool(key),
            key_hint=("…" + key[-4:]) if key and show_hint and len(key) > 8 else None,
            key_source=_source(env, p.key_env) if key else None, endpoint=p.base_url, fix=fix))
    return out


def _source(env: Environment, names: tuple[str, ...]) -> str | None:
    name = next((n for n in names if n in env), None)
    if name is None:
        return None
    return env.source_of(name) if hasattr(env, "source_of") else name


async def backends_report(env: Environment, default_team: str | None = None, *,
                          sampling_available: bool = False,
                          show_hint: bool = False, ask_clis: bool = False) -> BackendsReport:
    """Every provider's state, and the team a call without models/team would run on."""
    local = await local_models(env)
    error = None
    try:
        team = resolve_team(default_team=default_team, env=env,
                            sampling_available=sampling_available,
                            extra_models=local_team_models(local))
        default = f"{team.name}: " + ", ".join(f"{a.provider.name}/{a.model}" for a in team.agents)
    except MassgenError as e:
        default, error = "none", str(e)
    return BackendsReport(providers=provider_statuses(env, local, show_hint),
                          default_team=default, default_team_error=error,
                          bundled_teams=bundled_team_names(),
                          sampling_available=sampling_available,
                          coding_agents=await cli_statuses(env, ask=ask_clis),
                          prices=price_table(), prices_as_of=prices_as_of())
