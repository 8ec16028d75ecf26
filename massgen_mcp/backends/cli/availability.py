"""Which coding-agent CLIs are installed here, their versions, and whether they can run.

Shared by `list_backends` and `massgen-mcp doctor`. A version is read from the npm package
the executable belongs to when there is one (instant), else from ``CLI --version`` (Gemini
CLI takes seconds to start, so results are cached per executable and modification time).
Login state is only looked up as files present/absent; nothing is read from them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

import anyio
from pydantic import BaseModel, Field

from massgen_mcp.backends.cli._process import cli_version, find_command

# type -> (command, npm package, login files under HOME, key variables, how to log in)
CLIS: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...], str]] = {
    "claude_code": ("claude", "@anthropic-ai/claude-code", (".claude/.credentials.json",
                                                            ".claude.json"),
                    ("ANTHROPIC_API_KEY",), "run `claude` and /login"),
    "codex": ("codex", "@openai/codex", (".codex/auth.json",), ("OPENAI_API_KEY",),
              "run `codex login`"),
    "gemini_cli": ("gemini", "@google/gemini-cli", (".gemini/oauth_creds.json",
                                                    ".gemini/settings.json"),
                   ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "run `gemini` once and sign in"),
}
_cache: dict[tuple[str, float], str] = {}


class CliStatus(BaseModel):
    type: str = Field(description="The backend type in a team file (claude_code, ...).")
    command: str
    installed: bool
    path: str | None = None
    version: str | None = None
    usable: bool = Field(description="Installed and its --version runs.")
    login_found: bool = Field(
        description="A login file or key variable was found (a team file's base_url/api_key "
                    "works without one).")
    fix: str = ""


def _npm_version(executable: str, package: str) -> str | None:
    """The version in the package.json of the npm package holding `executable`."""
    here = Path(os.path.realpath(executable)).parent
    for d in (here, *here.parents[:3]):
        try:
            data = json.loads((d / "package.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("name") == package:
            return str(data.get("version") or "") or None
    return None


async def _version(executable: str, package: str, env: Mapping[str, str]) -> str | None:
    try:
        key = (executable, os.stat(executable).st_mtime)
    except OSError:
        return None
    if key not in _cache:
        found = _npm_version(executable, package)
        if found is None:
            try:
                found = await cli_version(executable, env)
            except (OSError, TimeoutError):
                return None
        _cache[key] = found
    return _cache[key]


async def cli_statuses(env: Mapping[str, str]) -> list[CliStatus]:
    """Every coding-agent CLI's state, looked up concurrently."""
    out: dict[str, CliStatus] = {}

    async def one(kind: str) -> None:
        command, package, login_files, key_vars, login_how = CLIS[kind]
        path = find_command(None, command, env)
        home = Path(env.get("HOME", "~")).expanduser()
        login = any((home / f).exists() for f in login_files) or any(
            env.get(k) for k in key_vars)
        if path is None:
            out[kind] = CliStatus(type=kind, command=command, installed=False, usable=False,
                                  login_found=login,
                                  fix=f"install it: npm install -g {package} (or set "
                                      "backend.command in the team file)")
            return
        version = await _version(path, package, env)
        fix = "" if version else f"{path} --version fails: reinstall {package}"
        if version and not login:
            fix = f"{login_how}, or give base_url/api_key in the team file"
        out[kind] = CliStatus(type=kind, command=command, installed=True, path=path,
                              version=version, usable=version is not None, login_found=login,
                              fix=fix)

    async with anyio.create_task_group() as tg:
        for kind in CLIS:
            tg.start_soon(one, kind)
    return [out[k] for k in CLIS]


def print_coding_agents(statuses: list[CliStatus], out: TextIO) -> None:
    """The `doctor` section: one line per CLI."""
    print("\nCoding agents (team file types):", file=out)
    for s in statuses:
        mark = "ok " if s.usable else "-- "
        detail = (f"{s.version} at {s.path}" if s.usable else
                  "not installed" if not s.installed else "does not run")
        login = "" if not s.usable else ("; login found" if s.login_found else "; no login found")
        hint = f"  → {s.fix}" if s.fix else ""
        print(f"  {mark}{s.type:<13} {detail}{login}{hint}", file=out)
