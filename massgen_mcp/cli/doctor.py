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
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from massgen_mcp.backends.availability import BackendsReport, backends_report
from massgen_mcp.backends.cli.availability import print_coding_agents
from massgen_mcp.config.env import Environment

if TYPE_CHECKING:
    from massgen_mcp.cli.clients import ClientView
    from massgen_mcp.cli.probe import Probe
    from massgen_mcp.cli.protection import Protection
    from massgen_mcp.cli.registrations import Registration

NO_TEAM = "no team can run"


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
    """Verdict first (what can run now, as commands to paste), then the details: the
    providers that are ready, one line for those without a key, coding agents, clients."""
    from massgen_mcp.cli.registrations import CLIENT_NAMES
    from massgen_mcp.paths import own_command

    me = own_command()
    _print_verdict(f, out)
    print("\nProviders:", file=out)
    missing, silent = [], []
    for p in f.report.providers:
        if p.local and not p.usable:
            silent.append(p.provider)
            continue
        if not p.usable and not p.local and not p.key_present and p.wire_format != "ag2":
            missing.append(p)
            continue
        mark = "ok " if p.usable else "-- "
        if p.local:
            detail = f"answering at {p.endpoint} ({len(p.models)} models)"
        elif p.wire_format == "ag2":  # an optional extra; keys by each llm_config's api_type
            detail = "AG2 installed" if p.usable else "AG2 not installed"
        else:
            detail = f"key set ({p.key_hint or 'present'})"
            if p.key_source and " from " in p.key_source:
                detail += f": {p.key_source}"  # only the project's .env sets it
        print(f"  {mark}{p.provider:<13} {detail}{'' if p.usable else '  → ' + p.fix}", file=out)
    if missing:
        names = ", ".join(p.provider for p in missing)
        first = missing[0].key_variables[0] if missing[0].key_variables else "its key"
        print(f"  -- no key for {names}  → set one (e.g. {first}) in the environment or a "
              f".env file; `{me} doctor --json` lists each variable", file=out)
    if silent:
        print(f"  -- no local server answers ({', '.join(silent)})  → start one (e.g. "
              "`ollama serve`), or point OLLAMA_BASE_URL / LMSTUDIO_BASE_URL / "
              "VLLM_BASE_URL / SGLANG_BASE_URL at it", file=out)
    print_coding_agents(f.report.coding_agents, out)
    print(f"\nBundled teams: {', '.join(f.report.bundled_teams) or '(none)'}", file=out)
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
    steps = []
    if not f.regs:
        steps.append(f"register with a client, in your project's directory: {me} setup "
                     "--client claude (or codex, cursor, gemini, vscode)")
    if f.failing:
        steps.append("fix the registrations marked !! above")
    steps += [f"{v.client}: {v.state}" + (f": {v.fix}" if v.fix else "") for v in f.waiting]
    if steps:
        print("\nNext steps:", file=out)
        for step in steps:
            print(f"  - {step}", file=out)


def _print_verdict(f: Findings, out: TextIO) -> None:
    """The first lines: whether a run works here, and the commands that run now."""
    from massgen_mcp.cli.whatcanrun import EXAMPLE_TASK, options, render
    from massgen_mcp.paths import own_command

    if f.can_run:
        print(f"Ready: {own_command()} run {shlex.quote(EXAMPLE_TASK)} runs on the default "
              f"team ({f.report.default_team})", file=out)
        return
    local = {p.provider: p.models for p in f.report.providers if p.local and p.usable}
    ready = [s.type for s in f.report.coding_agents if s.usable and s.login_found]
    print(f"{NO_TEAM} without naming one (no provider key is set). What can run now:",
          file=out)
    print(render(options(EXAMPLE_TASK, local, ready), keys_missing=True), file=out)


def _print_protection(p: Protection, out: TextIO) -> None:
    """Which layers guard Bash here, in plain words, and the fix when it is not a boundary."""
    print(f"\nProtection: {p.summary}", file=out)
    if p.fix:
        print(f"  → {p.fix}", file=out)
