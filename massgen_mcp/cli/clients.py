"""What each client itself says about its massgen entry (`claude mcp list`, `codex mcp list
--json`, `gemini mcp list`), for `doctor`.

A registration that starts is not yet one the client uses: Claude Code waits for the user to
approve a project's `.mcp.json` server, Codex ignores an untrusted project's
`.codex/config.toml`, Gemini CLI disables project servers in untrusted folders, and each can
disable a server. Only the client can tell, so `doctor` asks the client's own CLI when it is
on PATH. These commands start nothing the client would not start on its own (Claude Code
health-checks only approved servers; Gemini CLI only those of a trusted folder).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from massgen_mcp.cli.registrations import Registration

LIST_TIMEOUT_S = 90.0  # Gemini CLI takes 10-25 s on a busy 2-core machine
PROGRAMS = {"claude": "claude", "codex": "codex", "gemini": "gemini"}
COMMANDS = {"claude": ["mcp", "list"], "codex": ["mcp", "list", "--json"],
            "gemini": ["mcp", "list"]}

PENDING = "registered, waiting for your approval"
UNTRUSTED = "project file not trusted"
DISABLED = "disabled"


@dataclass
class ClientView:
    """The client's own verdict on its massgen entry."""

    client: str
    state: str  # connected, enabled, PENDING, UNTRUSTED, DISABLED, fails, not listed, unknown
    ok: bool  # the client will use it
    fails: bool = False  # the client tried to start it and could not
    detail: str = ""  # the client's own words
    fix: str = ""


def _claude(out: str, name: str, regs: list[Registration]) -> ClientView:
    line = next((ln.strip() for ln in out.splitlines() if ln.startswith(f"{name}: ")), None)
    if line is None:
        in_project = any(r.path.name == ".mcp.json" for r in regs)
        fix = ("remove massgen from disabledMcpjsonServers in .claude/settings.local.json (or "
               "run `claude mcp reset-project-choices`), then approve it when `claude` asks"
               if in_project else "check `claude mcp list` in this directory")
        return ClientView("claude", "rejected" if in_project else "not listed", ok=False,
                          detail="claude mcp list does not list massgen", fix=fix)
    status = line.rsplit(" - ", 1)[-1]
    if "Connected" in status:
        return ClientView("claude", "connected", ok=True, detail=status)
    if "Pending approval" in status:
        return ClientView("claude", PENDING, ok=False, detail=status,
                          fix="run `claude` in this directory, trust the folder, and approve "
                              "massgen at \"New MCP server found in .mcp.json\"")
    if "Disabled" in status:
        return ClientView("claude", DISABLED, ok=False, detail=status,
                          fix="in `claude`: /mcp → massgen → Enable")
    if "Failed" in status:
        return ClientView("claude", "fails", ok=False, fails=True, detail=status,
                          fix="run `massgen-mcp setup --client claude` again")
    return ClientView("claude", "unknown", ok=False, detail=status)


def _codex(out: str, name: str, regs: list[Registration], project: Path) -> ClientView:
    try:
        servers = json.loads(out)
    except ValueError:
        return ClientView("codex", "unknown", ok=False, detail=out.strip()[:200])
    entry = next((s for s in servers if isinstance(s, dict) and s.get("name") == name), None)
    if entry is None:
        if any(r.path.is_relative_to(project) for r in regs):
            return ClientView(
                "codex", UNTRUSTED, ok=False, detail="codex mcp list does not list massgen",
                fix=f"trust this project: answer the trust prompt of the first `codex` run "
                    f"here, or add [projects.\"{project}\"] trust_level = \"trusted\" to "
                    "~/.codex/config.toml")
        return ClientView("codex", "not listed", ok=False,
                          detail="codex mcp list does not list massgen")
    if entry.get("enabled") is False:
        reason = entry.get("disabled_reason")
        return ClientView("codex", DISABLED, ok=False,
                          detail=f"disabled{': ' + str(reason) if reason else ''}",
                          fix="remove `enabled = false` from the massgen entry")
    return ClientView("codex", "enabled", ok=True, detail="enabled")


def _gemini(out: str, name: str, untrusted: bool) -> ClientView:
    line = next((ln.strip() for ln in out.splitlines()
                 if ln.strip()[2:].startswith(f"{name}: ")), None)
    if line is None:
        return ClientView("gemini", "not listed", ok=False,
                          detail="gemini mcp list does not list massgen")
    status = line.rsplit(" - ", 1)[-1]
    if status.startswith("Connected"):
        return ClientView("gemini", "connected", ok=True, detail=status)
    if status.startswith("Disabled"):
        if untrusted:
            return ClientView("gemini", UNTRUSTED, ok=False, detail="Disabled (untrusted folder)",
                              fix="run `gemini` here and choose Trust folder (or add this "
                                  "directory with TRUST_FOLDER to ~/.gemini/trustedFolders.json)")
        return ClientView("gemini", DISABLED, ok=False, detail=status,
                          fix="gemini mcp enable massgen")
    if status.startswith("Disconnected"):
        return ClientView("gemini", "fails", ok=False, fails=True, detail=status,
                          fix="run `massgen-mcp setup --client gemini` again")
    return ClientView("gemini", "unknown", ok=False, detail=status)


async def ask_client(client: str, regs: list[Registration], project: Path) -> ClientView | None:
    """The client's view of its massgen entry; None when the client cannot be asked (it has
    no listing command, or its CLI is not on PATH)."""
    import anyio

    program = PROGRAMS.get(client)
    found = shutil.which(program) if program else None
    if found is None:
        return None
    name = regs[0].name
    try:
        with anyio.fail_after(LIST_TIMEOUT_S):
            done = await anyio.run_process([found, *COMMANDS[client]], cwd=project,
                                           env=dict(os.environ), check=False,
                                           stdin=subprocess.DEVNULL)
    except TimeoutError:
        return ClientView(client, "unknown", ok=False,
                          detail=f"`{program} {' '.join(COMMANDS[client])}` did not answer "
                                 f"within {LIST_TIMEOUT_S:g} s")
    except OSError as e:
        return ClientView(client, "unknown", ok=False, detail=f"{program} did not run: {e}")
    out = done.stdout.decode("utf-8", "replace")
    err = done.stderr.decode("utf-8", "replace").strip()
    if done.returncode != 0:
        return ClientView(client, "unknown", ok=False,
                          detail=f"`{program} {' '.join(COMMANDS[client])}` exited "
                                 f"{done.returncode}: {err[-200:]}")
    if client == "claude":
        return _claude(out, name, regs)
    if client == "codex":
        return _codex(out, name, regs, project)
    both = f"{out}\n{err}"  # Gemini CLI writes its list to stderr
    return _gemini(both, name, untrusted="folder is untrusted" in both)
