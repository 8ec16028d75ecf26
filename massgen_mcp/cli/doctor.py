"""`massgen-mcp doctor`: what can run here (providers, local servers), where massgen-mcp is
registered, whether each registered command really starts and answers `tools/list`, and what
each client itself says about it (approved, trusted, enabled).

Exit 1 only for a registration that does not start (doctor's own start, or the client's).
Everything else is a state to finish setting up, printed with its next step: no provider key
yet (sampling, local servers and keys later are normal), a server waiting for the user's
approval, an untrusted project, a disabled entry.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from massgen_mcp.backends.availability import BackendsReport, backends_report
from massgen_mcp.backends.cli.availability import no_key_hint, print_coding_agents
from massgen_mcp.config.env import Environment

if TYPE_CHECKING:
    from massgen_mcp.cli.clients import ClientView
    from massgen_mcp.cli.probe import Probe
    from massgen_mcp.cli.protection import Protection
    from massgen_mcp.cli.registrations import Registration

NO_TEAM = "no team can run yet"


@dataclass
class Findings:
    report: BackendsReport
    regs: list[Registration]
    probes: list[Probe]
    views: dict[str, ClientView | None]  # per registered client; None: the client can't tell
    hook: str | None
    protection: Protection | None = None  # which layers guard Bash here (protection.py)

    @property
    def can_run(self) -> bool:
        return self.report.default_team_error is None

    @property
    def failing(self) -> bool:
        """A registration that does not start, by doctor's own start or by the client's."""
        return (not all(p.ok for p in self.probes)
                or any(v is not None and v.fails for v in self.views.values()))

    @property
    def waiting(self) -> list[ClientView]:
        """Clients that will not use their entry yet (approval, trust, disabled)."""
        return [v for v in self.views.values() if v is not None and not v.ok and not v.fails]


async def _gather(project: Path, env: Environment, ask_clients: bool) -> Findings:
    import anyio

    from massgen_mcp.cli.clients import ask_client
    from massgen_mcp.cli.probe import probe
    from massgen_mcp.cli.registrations import find_registrations, hook_registered

    regs = find_registrations(project)
    probes: list[Any] = [None] * len(regs)
    clients = sorted({r.client for r in regs if r.command})
    views: dict[str, ClientView | None] = dict.fromkeys(clients)
    found: dict[str, BackendsReport] = {}

    async def one(i: int) -> None:
        probes[i] = await probe(regs[i], project)

    async def ask(client: str) -> None:
        views[client] = await ask_client(client, [r for r in regs if r.client == client],
                                         project)

    async def report() -> None:
        found["report"] = await backends_report(env, show_hint=True, ask_clis=True)

    async with anyio.create_task_group() as tg:
        tg.start_soon(report)
        for i in range(len(regs)):
            tg.start_soon(one, i)
        for client in clients if ask_clients else ():
            tg.start_soon(ask, client)
    return Findings(found["report"], regs, probes, views, hook_registered(project))


def doctor_main(args: argparse.Namespace) -> int:
    import anyio

    project = Path(args.dir).resolve()
    env = Environment(dotenv_dir=project)
    found = anyio.run(_gather, project, env, not getattr(args, "no_clients", False))
    from massgen_mcp.cli.protection import protection

    found.protection = protection(project)
    if args.json:
        _print_json(found)
    else:
        _print_text(found, project, sys.stdout)
    return 1 if found.failing else 0


def _print_json(f: Findings) -> None:
    views = {c: (asdict(v) if v else None) for c, v in f.views.items()}
    print(json.dumps({
        "report": f.report.model_dump(mode="json"), "can_run": f.can_run, "hook": f.hook,
        "protection": asdict(f.protection) if f.protection else None,
        "registrations": [{"client": r.client, "path": str(r.path), "command": r.argv,
                           "starts": p.ok, "tools": p.tools, "problem": p.problem,
                           "fix": p.fix, "client_state": views.get(r.client)}
                          for r, p in zip(f.regs, f.probes, strict=True)],
        "clients": views,
        "warnings": ([f"{NO_TEAM}: {f.report.default_team_error}"] if not f.can_run else [])
                    + [f"{v.client}: {v.state}" for v in f.waiting],
    }, indent=2))


def _print_text(f: Findings, project: Path, out: TextIO) -> None:
    from massgen_mcp.cli.registrations import CLIENT_NAMES

    print("Providers:", file=out)
    for p in f.report.providers:
        mark = "ok " if p.usable else "-- "
        if p.local:
            detail = (f"answering at {p.endpoint} ({len(p.models)} models)" if p.usable
                      else "not answering")
        elif p.wire_format == "ag2":  # an optional extra; keys by each llm_config's api_type
            detail = "AG2 installed" if p.usable else "AG2 not installed"
        else:
            detail = (f"key set ({p.key_hint or 'present'})" if p.key_present
                      else "no key")
        print(f"  {mark}{p.provider:<13} {detail}{'' if p.usable else '  → ' + p.fix}", file=out)
    print_coding_agents(f.report.coding_agents, out)
    hint = no_key_hint(any(p.key_present for p in f.report.providers), f.report.coding_agents)
    if hint:
        print(f"  → {hint}", file=out)
    print(f"\nDefault team: {f.report.default_team}", file=out)
    if f.report.default_team_error:
        print(f"  warning: {NO_TEAM}: {f.report.default_team_error}", file=out)
    print(f"Bundled teams: {', '.join(f.report.bundled_teams) or '(none)'}", file=out)
    print(f"\nRegistered for {project}:", file=out)
    for client in CLIENT_NAMES:
        mine = [(r, pr) for r, pr in zip(f.regs, f.probes, strict=True) if r.client == client]
        if not mine:
            print(f"  -- {client:<8} not registered", file=out)
        view = f.views.get(client)
        for r, pr in mine:
            command = " ".join(r.argv) or r.url or "?"
            state = f"starts, {pr.tools} tools" if pr.ok else "FAILS"
            mark = "!! " if not pr.ok or (view and view.fails) else (
                "-- " if view and not view.ok else "ok ")
            print(f"  {mark}{client:<8} {r.path}: {command}  [{state}]", file=out)
            if not pr.ok:
                print(f"       {pr.problem}" + (f"\n       → {pr.fix}" if pr.fix else ""),
                      file=out)
        if mine and view is not None:
            print(f"       {client} says: {view.state} ({view.detail})"
                  + (f"\n       → {view.fix}" if view.fix and not view.ok else ""), file=out)
    print(f"  {'ok ' if f.hook else '-- '}{'hook':<8} {f.hook or 'no PreToolUse hook'}", file=out)
    if f.protection:
        _print_protection(f.protection, out)
    print("\nNext steps:", file=out)
    if not f.can_run:
        print(f"  - {NO_TEAM}: set a provider key (see above), start a local model server, "
              "or use a client that offers sampling (models='sampling')", file=out)
    if not f.regs:
        print("  - register: massgen-mcp setup --client claude (or codex, cursor, gemini, "
              "vscode; see the README for each client's approval step)", file=out)
    if f.failing:
        print("  - fix the registrations marked !! above", file=out)
    for v in f.waiting:
        print(f"  - {v.client}: {v.state}" + (f": {v.fix}" if v.fix else ""), file=out)
    if f.can_run:
        print('  - try: massgen-mcp run "What is the capital of Australia?"', file=out)


def _print_protection(p: Protection, out: TextIO) -> None:
    """Which layers guard Bash here, in plain words, and the fix when it is not a boundary."""
    print(f"\nProtection: {p.summary}", file=out)
    if p.fix:
        print(f"  → {p.fix}", file=out)
