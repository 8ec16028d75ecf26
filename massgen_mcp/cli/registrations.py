"""Where massgen-mcp is registered (project and user files of each client) and with which
command, read with each format's own parser (JSON, `tomllib`)."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLIENT_NAMES = ("claude", "codex", "cursor", "gemini", "vscode")


@dataclass
class Registration:
    client: str
    path: Path
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None  # an HTTP registration: nothing to start
    name: str = "massgen"  # the entry's key: the name the client lists it by

    @property
    def argv(self) -> list[str]:
        return [self.command, *self.args] if self.command else []


def _entries(servers: Any) -> list[tuple[str, dict[str, Any]]]:
    if not isinstance(servers, dict):
        return []
    return [(k, v) for k, v in servers.items() if "massgen" in str(k) and isinstance(v, dict)]


def _registration(client: str, path: Path, entry: dict[str, Any],
                  name: str = "massgen") -> Registration:
    command = entry.get("command")
    args = entry.get("args") or []
    env = entry.get("env") or {}
    return Registration(
        client, path, command=command if isinstance(command, str) and command else None,
        args=[str(a) for a in args] if isinstance(args, list) else [],
        env={str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {},
        url=entry.get("url") or entry.get("httpUrl") or None, name=name)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def find_registrations(project: Path, home: Path | None = None) -> list[Registration]:
    """Every massgen entry in the project's and the user's client files."""
    home = home or Path.home()
    found: list[Registration] = []
    json_files = [("claude", project / ".mcp.json", "mcpServers"),
                  ("cursor", project / ".cursor" / "mcp.json", "mcpServers"),
                  ("gemini", project / ".gemini" / "settings.json", "mcpServers"),
                  ("vscode", project / ".vscode" / "mcp.json", "servers"),
                  ("cursor", home / ".cursor" / "mcp.json", "mcpServers"),
                  ("gemini", home / ".gemini" / "settings.json", "mcpServers"),
                  ("claude", home / ".claude.json", "mcpServers")]
    for client, path, key in json_files:
        data = _read_json(path)
        if isinstance(data, dict):
            found += [_registration(client, path, e, k) for k, e in _entries(data.get(key))]
    # `claude mcp add` (local scope) keeps the project's servers in ~/.claude.json.
    claude = _read_json(home / ".claude.json")
    projects = claude.get("projects") if isinstance(claude, dict) else None
    mine = projects.get(str(project)) if isinstance(projects, dict) else None
    if isinstance(mine, dict):
        found += [_registration("claude", home / ".claude.json", e, k)
                  for k, e in _entries(mine.get("mcpServers"))]
    for path in (project / ".codex" / "config.toml", home / ".codex" / "config.toml"):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        found += [_registration("codex", path, e, k)
                  for k, e in _entries(data.get("mcp_servers"))]
    return found


def hook_registered(project: Path) -> str | None:
    """The settings file holding the massgen PreToolUse hook, if any."""
    path = project / ".claude" / "settings.json"
    data = _read_json(path)
    entries = ((data.get("hooks") or {}).get("PreToolUse") if isinstance(data, dict) else None)
    for entry in entries if isinstance(entries, list) else []:
        for hook in (entry.get("hooks") or []) if isinstance(entry, dict) else []:
            if isinstance(hook, dict) and "hook pre-tool-use" in str(hook.get("command", "")):
                return str(path)
    return None
