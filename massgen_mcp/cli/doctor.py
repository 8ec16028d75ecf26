"""`massgen-mcp doctor`: what can run here (providers, local servers) and where massgen-mcp
is registered."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from massgen_mcp.backends.cli.availability import print_coding_agents
from massgen_mcp.config.availability import backends_report
from massgen_mcp.config.env import Environment


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

    project = Path(args.dir).resolve()
    env = Environment(dotenv_dir=project)
    report = anyio.run(lambda: backends_report(env, show_hint=True))
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
    print_coding_agents(report.coding_agents, out)
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
