"""What can run here: provider keys (masked), local model servers, client registrations.

Shared by the `list_backends` tool and `massgen-mcp doctor`. Keys are only ever reported
as present/absent (and, in `doctor`, as their last four characters).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from .config import Environment, bundled_team_names
from .errors import MassgenError
from .providers import PROVIDERS, Provider
from .teams import resolve_team

if TYPE_CHECKING:
    from .service import Service

PROBE_TIMEOUT = 0.8


class ProviderStatus(BaseModel):
    provider: str
    wire_format: str
    usable: bool
    key_variables: list[str] = Field(default_factory=list)
    key_present: bool = False
    key_hint: str | None = Field(default=None, description="Last 4 characters (doctor only).")
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


async def probe_local(provider: Provider, base_url: str | None = None) -> list[str] | None:
    """Model ids a local OpenAI-compatible server lists, or None when it does not answer."""
    import httpx

    url = (base_url or provider.base_url or "").rstrip("/") + "/models"
    try:
        async with httpx.AsyncClient(timeout=PROBE_TIMEOUT) as client:
            response = await client.get(url)
        if response.status_code != 200:
            return None
        data = response.json().get("data", [])
        return [str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id")]
    except (httpx.HTTPError, ValueError, AttributeError):
        return None


async def local_models(env: Environment) -> dict[str, list[str]]:
    """Local servers that answer, with their models (probed in parallel)."""
    import anyio

    found: dict[str, list[str]] = {}

    async def one(p: Provider) -> None:
        override = env.get(f"{p.name.upper()}_BASE_URL")
        models = await probe_local(p, override)
        if models is not None:
            found[p.name] = models

    async with anyio.create_task_group() as tg:
        for p in PROVIDERS.values():
            if p.local:
                tg.start_soon(one, p)
    return found


def local_team_models(found: dict[str, list[str]]) -> list[str]:
    """Up to three agents from the first local server that lists models."""
    for name in ("ollama", "lmstudio", "vllm", "sglang"):
        models = found.get(name) or []
        if models:
            picks = models[:3]
            return [f"{name}/{m}" for m in (picks * 3)[:3]]
    return []


def provider_statuses(env: Environment, local: dict[str, list[str]],
                      show_hint: bool = False) -> list[ProviderStatus]:
    out = []
    for p in PROVIDERS.values():
        if p.name in ("chatcompletion", "sampling"):
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
            endpoint=p.base_url, fix=fix))
    return out


async def backends_report(service: Service, *, sampling_available: bool = False,
                          show_hint: bool = False) -> BackendsReport:
    env = service.env
    local = await local_models(env)
    error = None
    try:
        team = resolve_team(default_team=service.default_team, env=env,
                            sampling_available=sampling_available,
                            extra_models=local_team_models(local))
        default = f"{team.name}: " + ", ".join(f"{a.provider.name}/{a.model}" for a in team.agents)
    except MassgenError as e:
        default, error = "none", str(e)
    return BackendsReport(providers=provider_statuses(env, local, show_hint),
                          default_team=default, default_team_error=error,
                          bundled_teams=bundled_team_names(),
                          sampling_available=sampling_available)


def registrations(project: Path) -> dict[str, str | None]:
    """Where massgen-mcp is registered for each client (None: not registered)."""
    found: dict[str, str | None] = {"claude": None, "codex": None, "cursor": None}
    for client, path in (("claude", project / ".mcp.json"),
                         ("cursor", project / ".cursor" / "mcp.json"),
                         ("cursor", Path.home() / ".cursor" / "mcp.json"),
                         ("claude", Path.home() / ".claude.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        servers = data.get("mcpServers", {}) if isinstance(data, dict) else {}
        if isinstance(servers, dict) and any("massgen" in str(k) for k in servers):
            found[client] = found[client] or str(path)
    for path in (project / ".codex" / "config.toml", Path.home() / ".codex" / "config.toml"):
        try:
            if "[mcp_servers.massgen" in path.read_text(encoding="utf-8"):
                found["codex"] = found["codex"] or str(path)
        except OSError:
            continue
    hooks = project / ".claude" / "settings.json"
    try:
        if "massgen-mcp hook" in hooks.read_text(encoding="utf-8"):
            found["claude-hook"] = str(hooks)
    except OSError:
        pass
    return found


def doctor_main(args: argparse.Namespace) -> int:
    import anyio

    from .service import Service

    project = Path(args.dir).resolve()
    service = Service(cwd=project)
    report = anyio.run(lambda: backends_report(service, show_hint=True))
    regs = registrations(project)
    can_run = report.default_team_error is None
    if args.json:
        print(json.dumps({"report": report.model_dump(mode="json"), "registrations": regs,
                          "can_run": can_run}, indent=2))
        return 0 if can_run else 1
    out = sys.stdout
    print("Providers:", file=out)
    for p in report.providers:
        mark = "ok " if p.usable else "-- "
        if p.local:
            detail = (f"answering at {p.endpoint} ({len(p.models)} models)" if p.usable
                      else "not answering")
        else:
            detail = (f"key set ({p.key_hint or 'present'})" if p.key_present
                      else "no key")
        print(f"  {mark}{p.provider:<13} {detail}{'' if p.usable else '  → ' + p.fix}", file=out)
    print(f"\nDefault team: {report.default_team}", file=out)
    if report.default_team_error:
        print(f"  {report.default_team_error}", file=out)
    print(f"Bundled teams: {', '.join(report.bundled_teams) or '(none)'}", file=out)
    print(f"\nRegistered in {project}:", file=out)
    for client, where in regs.items():
        print(f"  {'ok ' if where else '-- '}{client:<12} {where or 'not registered'}", file=out)
    print("\nNext steps:", file=out)
    if not can_run:
        print("  - set a provider key (see above) or start a local model server", file=out)
    if not any(regs.get(c) for c in ("claude", "codex", "cursor")):
        print("  - register: massgen-mcp setup --client claude (or: claude mcp add massgen -- "
              "massgen-mcp)", file=out)
    if can_run:
        print('  - try: massgen-mcp run "What is the capital of Australia?"', file=out)
    return 0 if can_run else 1
