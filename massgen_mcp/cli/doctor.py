"""`massgen-mcp doctor`: what can run here (providers, local servers), where massgen-mcp is
registered, and whether each registered command really starts and answers `tools/list`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from massgen_mcp.backends.availability import backends_report
from massgen_mcp.backends.cli.availability import no_key_hint, print_coding_agents
from massgen_mcp.config.env import Environment


def doctor_main(args: argparse.Namespace) -> int:
    import anyio

    from massgen_mcp.cli.probe import probe
    from massgen_mcp.cli.registrations import CLIENT_NAMES, find_registrations, hook_registered

    project = Path(args.dir).resolve()
    env = Environment(dotenv_dir=project)
    regs = find_registrations(project)

    async def check() -> tuple[Any, list[Any]]:
        report = await backends_report(env, show_hint=True, ask_clis=True)
        results: list[Any] = [None] * len(regs)

        async def one(i: int) -> None:
            results[i] = await probe(regs[i], project)

        async with anyio.create_task_group() as tg:
            for i in range(len(regs)):
                tg.start_soon(one, i)
        return report, results

    report, probes = anyio.run(check)
    can_run = report.default_team_error is None
    started = all(p.ok for p in probes)
    hook = hook_registered(project)
    if args.json:
        print(json.dumps({
            "report": report.model_dump(mode="json"), "can_run": can_run, "hook": hook,
            "registrations": [{"client": r.client, "path": str(r.path), "command": r.argv,
                               "starts": p.ok, "tools": p.tools, "problem": p.problem,
                               "fix": p.fix} for r, p in zip(regs, probes, strict=True)],
        }, indent=2))
        return 0 if can_run and started else 1
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
    hint = no_key_hint(any(p.key_present for p in report.providers), report.coding_agents)
    if hint:
        print(f"  → {hint}", file=out)
    print(f"\nDefault team: {report.default_team}", file=out)
    if report.default_team_error:
        print(f"  {report.default_team_error}", file=out)
    print(f"Bundled teams: {', '.join(report.bundled_teams) or '(none)'}", file=out)
    print(f"\nRegistered for {project}:", file=out)
    for client in CLIENT_NAMES:
        mine = [(r, p) for r, p in zip(regs, probes, strict=True) if r.client == client]
        if not mine:
            print(f"  -- {client:<8} not registered", file=out)
        for r, p in mine:
            command = " ".join(r.argv) or r.url or "?"
            state = (f"starts, {p.tools} tools" if p.ok else "FAILS")
            print(f"  {'ok ' if p.ok else '!! '}{client:<8} {r.path}: {command}  [{state}]",
                  file=out)
            if not p.ok:
                print(f"       {p.problem}" + (f"\n       → {p.fix}" if p.fix else ""),
                      file=out)
    print(f"  {'ok ' if hook else '-- '}{'hook':<8} {hook or 'no PreToolUse hook'}", file=out)
    print("\nNext steps:", file=out)
    if not can_run:
        print("  - set a provider key (see above) or start a local model server", file=out)
    if not regs:
        print("  - register: massgen-mcp setup --client claude (or codex, cursor, gemini, "
              "vscode; see the README for each client's approval step)", file=out)
    if not started:
        print("  - fix the registrations marked !! above", file=out)
    if can_run:
        print('  - try: massgen-mcp run "What is the capital of Australia?"', file=out)
    return 0 if can_run and started else 1
