"""Which coding-agent CLIs are installed here, their versions, and whether they can run.

Shared by `list_backends` and `massgen-mcp doctor`. A version is read from the npm package
the executable belongs to when there is one (instant), else from ``CLI --version`` (Gemini
CLI takes seconds to start, so results are cached per executable and modification time).
Login state is what the CLI itself says where it can tell (``claude auth status --json``,
``codex login status``), else login files present/absent (nothing is read from them), and a
key variable the CLI reads (`keys.py`; only its name is reported).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple, TextIO

import anyio
from pydantic import BaseModel, Field

from massgen_mcp.backends.cli._process import base_env, cli_version, find_command, run_cli
from massgen_mcp.backends.cli.keys import env_key, passed_env


class Cli(NamedTuple):
    """One coding-agent CLI; key variables are in keys.py."""

    command: str
    package: str  # its npm package
    #: Login files under HOME. Only credential files count: ~/.claude.json or
    #: ~/.gemini/settings.json exist after any run, logged in or not.
    login_files: tuple[str, ...]
    login_how: str

    @property
    def install_hint(self) -> str:
        return (f"install it with `npm install -g {self.package}`, or set backend.command in "
                "the team file to its path")

    @property
    def login_hint(self) -> str:
        """Its own login, or an endpoint's key instead (doctor's advice, a turn's error)."""
        return f"{self.login_how}, or give base_url/api_key in the team file"


#: Backend type -> its CLI (`CliBackend.backend_type`).
CLIS: dict[str, Cli] = {
    "claude_code": Cli("claude", "@anthropic-ai/claude-code", (".claude/.credentials.json",),
                       "run `claude auth login` (or set ANTHROPIC_API_KEY)"),
    "codex": Cli("codex", "@openai/codex", (".codex/auth.json",),
                 "run `codex login` (or set OPENAI_API_KEY)"),
    "gemini_cli": Cli("gemini", "@google/gemini-cli", (".gemini/oauth_creds.json",),
                      "run `gemini` once and sign in (or set GEMINI_API_KEY)"),
    "copilot": Cli("copilot", "@github/copilot", (),
                   "run `copilot login` (or set COPILOT_GITHUB_TOKEN or GH_TOKEN)"),
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
        description="The CLI can reach its provider without a team file's api_key: it says "
                    "it is logged in, or a key variable it reads is set.")
    login: str = Field("", description="How that was found out (the CLI's own status "
                                       "command, a login file, a key variable's name).")
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


async def _login(kind: str, path: str, env: Mapping[str, str],
                 files: tuple[str, ...]) -> tuple[bool, str]:
    """(logged in, how we know): the CLI's own word where it has a status command."""
    home = env.get("HOME", "")
    key = env_key(kind, env)
    child = base_env(env) | passed_env(kind, env) | ({"HOME": home} if home else {})
    if "CODEX_HOME" in env and kind == "codex":
        child["CODEX_HOME"] = env["CODEX_HOME"]
    argv = {"claude_code": [path, "auth", "status", "--json"],
            "codex": [path, "login", "status"]}.get(kind)
    if argv is not None:
        try:
            code, out = await run_cli(argv, child, timeout=20.0)
        except (OSError, TimeoutError):
            code, out = -1, ""
        if kind == "claude_code" and code >= 0:
            try:
                data = json.loads(out[out.find("{"):]) if "{" in out else {}
            except ValueError:
                data = {}
            if isinstance(data, dict) and "loggedIn" in data:
                how = data.get("apiKeySource") or data.get("authMethod") or "login"
                return bool(data["loggedIn"]), (
                    f"`claude auth status`: {'logged in' if data['loggedIn'] else 'not logged in'}"
                    + (f" ({how})" if data["loggedIn"] else ""))
        if kind == "codex" and code >= 0:
            # Its output names part of a stored key: only what kind of login is reported.
            kind_of = " (API key)" if "API key" in out else " (ChatGPT)" if "ChatGPT" in out else ""
            if code == 0:
                return True, f"`codex login status`: logged in{kind_of}"
            if key:  # `codex exec` reads CODEX_API_KEY (ours from OPENAI_API_KEY too)
                return True, f"{key[0]} set (`codex login status`: not logged in)"
            return False, "`codex login status`: not logged in"
    if key:
        return True, f"{key[0]} set"
    found = [f for f in files if (Path(home or "~").expanduser() / f).exists()]
    if found:
        return True, f"login file ~/{found[0]}"
    if not files:  # no status command and no file to look for (Copilot: system keychain)
        return False, "cannot tell (no login status command; no token variable set)"
    return False, "no login file or key variable"


async def cli_statuses(env: Mapping[str, str], *, ask: bool = False) -> list[CliStatus]:
    """Every coding-agent CLI's state, looked up concurrently. With `ask`, the CLIs are
    asked for their login state (a second each; `doctor`), else it is guessed from files
    and key variables (`list_backends`)."""
    out: dict[str, CliStatus] = {}

    async def one(kind: str) -> None:
        cli = CLIS[kind]
        command, package, login_files = cli.command, cli.package, cli.login_files
        path = find_command(None, command, env)
        home = Path(env.get("HOME", "~")).expanduser()
        key = env_key(kind, env)
        login = bool(key) or any((home / f).exists() for f in login_files)
        how = f"{key[0]} set" if key else ("login file found" if login else "")
        if path is None:
            out[kind] = CliStatus(type=kind, command=command, installed=False, usable=False,
                                  login_found=login, login=how, fix=cli.install_hint)
            return
        version = await _version(path, package, env)
        if version and ask:
            login, how = await _login(kind, path, env, login_files)
        fix = "" if version else f"{path} --version fails: reinstall {package}"
        if version and not login:
            fix = cli.login_hint
        out[kind] = CliStatus(type=kind, command=command, installed=True, path=path,
                              version=version, usable=version is not None, login_found=login,
                              login=how, fix=fix)

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
        login = "" if not s.usable else (
            f"; {'login' if s.login_found else 'no login'}: {s.login}" if s.login else
            "; login found" if s.login_found else "; no login found")
        hint = f"  → {s.fix}" if s.fix else ""
        print(f"  {mark}{s.type:<13} {detail}{login}{hint}", file=out)
