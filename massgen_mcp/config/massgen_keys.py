"""MassGen's keys that massgen-mcp accepts but does not honour, and near-miss detection.

A MassGen team file should load unchanged, but a file that loads must not silently lose what it
was written for: `team_warning` names every key that is accepted but not honoured and what the
team loses, in one line per file. `near_misses` turns an unknown key that is one typo away from
a key we implement (``temperture``) into an error, unless it is a real MassGen key.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from massgen_mcp.config.ag2 import AG2_BACKEND_KEYS, is_ag2
from massgen_mcp.config.ag2 import losses as ag2_losses
from massgen_mcp.config.orchestration import VOTING_SENSITIVITY
from massgen_mcp.config.team import TeamConfig

if TYPE_CHECKING:
    from massgen_mcp.config.providers import Provider

_CUSTOM = "agents do not get MassGen's custom tools"
_MEDIA = "agents cannot generate images, audio or video"
_WORKSPACE = "agents share no workspace snapshots"
_PEERS = "peer answers reach an agent when it restarts, not mid-stream"

# key -> what the team loses without it (keys of any section; section-specific below).
LOSSES: dict[str, str] = {
    "cwd": "agents get no workspace directory (only ${cwd} in the file uses it)",
    "custom_tools": _CUSTOM, "auto_discover_custom_tools": _CUSTOM,
    "exclude_custom_tools": _CUSTOM, "shared_tools_directory": _CUSTOM,
    "enable_code_based_tools": _CUSTOM, "direct_mcp_servers": _CUSTOM,
    "exclude_file_operation_mcps": "nothing (there are no file-operation MCP servers here)",
    "enable_image_generation": _MEDIA, "enable_audio_generation": _MEDIA,
    "enable_video_generation": _MEDIA, "enable_file_generation": "agents cannot create files",
    "enable_multimodal_tools": _MEDIA, "image_generation_backend": _MEDIA,
    "video_generation_backend": _MEDIA, "audio_generation_backend": _MEDIA,
    "upload_files": "files are not uploaded to the provider",
    "enable_x_search": "agents have no X search",
    "extra_body": "the extra request fields are not sent",
    "permission_mode": "nothing (only the CLI agents have permission modes)",
    "permissions": "nothing (only the CLI agents have permission modes)",
    "snapshot_storage": _WORKSPACE, "agent_temporary_workspace": _WORKSPACE,
    "coordination": "MassGen's coordination extras (planning, skills, subagents, ...) are off",
    "voting_threshold": "every vote counts (there is no threshold)",
    "max_midstream_injections_per_round": _PEERS, "defer_peer_updates_until_restart": _PEERS,
    "allow_midstream_peer_updates_before_checklist_submit": _PEERS,
    "skip_coordination_rounds": "the agents still coordinate",
    "memory": "agents keep no memory between runs",
    "timeout_settings": "round timeouts are not applied (orchestrator_timeout_seconds is)",
    "security": "MassGen's MCP security checks are not applied",
    "enable_tool_search": "all tools are offered at once (no tool search)",
    "tool_search_variant": "all tools are offered at once (no tool search)",
    "betas": "the provider beta headers are not sent",
}
_PREFIX_LOSSES = {
    "command_line_": "nothing (commands run in the bubblewrap sandbox, not Docker)",
    "debug_": "nothing (a MassGen debugging aid)"}
_GENERIC = "ignored (not implemented by massgen-mcp)"
# Keys we read (for `${cwd}`) without giving the team what MassGen does with them.
PARTLY = frozenset({"cwd"})
# The coding-agent CLI types and the keys their backends honour (backends/cli/_options.py).
CLI_TYPES = frozenset({"claude_code", "codex", "gemini_cli", "copilot"})
CLI_KEYS = frozenset({
    "command", "cwd", "system_prompt", "append_system_prompt", "disallowed_tools",
    "permission_mode", "max_turns", "sandbox_mode", "approval_policy", "env", "provider_type",
    "max_thinking_tokens"})
# MassGen's command-line tool keys, honoured on any backend (tools/shell.py; a CLI agent has
# its own shell and ignores them).
SHELL_KEYS = frozenset({
    "enable_mcp_command_line", "command_line_execution_mode", "command_line_allowed_commands",
    "command_line_blocked_commands", "command_line_docker_network_mode",
    "command_line_timeout"})
# Sections MassGen uses only for its own terminal display: dropped without a word.
COSMETIC = ("ui", "logging", "display")


def loss(key: str) -> str:
    if key in LOSSES:
        return LOSSES[key]
    for prefix, text in _PREFIX_LOSSES.items():
        if key.startswith(prefix):
            return text
    return _GENERIC


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside ``X``, ``X | None``, ``list[X]``, if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _walk(cls: type[BaseModel], data: Any, path: str) -> Iterator[tuple[type[BaseModel], str, Any]]:
    """Every (model class, path, raw mapping) in a raw team tree, following the schema."""
    if not isinstance(data, dict):
        return
    yield cls, path, data
    for name, field in cls.model_fields.items():
        child = _model_of(field.annotation)
        value = data.get(field.alias or name, data.get(name))
        if child is None or value is None:
            continue
        here = f"{path}.{field.alias or name}" if path else (field.alias or name)
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield from _walk(child, item, f"{here}[{i}]")
        elif isinstance(value, dict) and typing.get_origin(field.annotation) is not None and (
                list in _origins(field.annotation)):
            for key, item in value.items():  # mcp_servers keyed by name
                yield from _walk(child, item, f"{here}.{key}")
        else:
            yield from _walk(child, value, here)


def _origins(annotation: Any) -> set[Any]:
    out = {typing.get_origin(annotation)}
    for arg in typing.get_args(annotation):
        out |= _origins(arg)
    return out


def near_misses(data: Any) -> list[str]:
    """``path: unknown field 'x'; did you mean 'y'?`` for each likely typo in a raw team."""
    problems = []
    for cls, path, raw in _walk(TeamConfig, data, ""):
        known = cls.known_keys()  # type: ignore[attr-defined]
        for key in raw:
            key = str(key)
            if key in known or key in LOSSES or key in COSMETIC:
                continue
            close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
            if close:
                where = f"{path}.{key}" if path else key
                problems.append(f"{where}: unknown field '{key}'; did you mean '{close[0]}'?")
    return problems


def unhonoured(data: Any) -> dict[str, list[str]]:
    """What-is-lost -> the paths of the keys that lose it, for a raw (valid) team tree."""
    out: dict[str, list[str]] = {}
    for cls, path, raw in _walk(TeamConfig, data, ""):
        known = cls.known_keys()  # type: ignore[attr-defined]
        for key in raw:
            if (str(key) not in known or str(key) in PARTLY) and str(key) not in COSMETIC:
                where = f"{path}.{key}" if path else str(key)
                out.setdefault(loss(str(key)), []).append(where)
    orch = data.get("orchestrator") if isinstance(data.get("orchestrator"), dict) else {}
    level = orch.get("voting_sensitivity")
    if isinstance(level, str) and level.lower() not in ("lenient", "balanced", "strict"):
        mapped = VOTING_SENSITIVITY.get(level.lower(), level)
        out.setdefault(f"voting_sensitivity '{level}' runs as '{mapped}'", []).append(
            "orchestrator.voting_sensitivity")
    cli = _cli_backends(data)
    sent = _chat_backends(data)  # extra_body is sent by the OpenAI-compatible backend
    ag2 = _ag2_backends(data)  # an AG2 member's agent_config is read (config/ag2.py)
    for what in list(out):
        out[what] = [p for p in out[what]
                     if not (p.endswith(".extra_body") and p.rsplit(".", 1)[0] in sent)
                     and not (p.rsplit(".", 1)[0] in ag2
                              and p.rsplit(".", 1)[1] in AG2_BACKEND_KEYS)]
        # a coding-agent CLI backend honours its own keys; any backend the shell keys
        out[what] = [p for p in out[what] if (p.rsplit(".", 1)[0] not in cli
                     or p.rsplit(".", 1)[1] not in CLI_KEYS) and not (
                         p.rsplit(".", 1)[0].endswith(".backend")
                         and p.rsplit(".", 1)[1] in SHELL_KEYS)]
        if not out[what]:
            del out[what]
    for what, paths in ag2_losses(data).items():  # what an AG2 agent_config does not get
        out.setdefault(what, []).extend(paths)
    for i, entry in enumerate(orch.get("context_paths") or []):
        if cli or _shell_backends(data):
            break  # the winning coding agent's changes are written back (runs/workspace.py)
        if isinstance(entry, dict) and entry.get("permission") == "write":
            out.setdefault("write permission is served read-only: agents can read but not "
                           "change these paths", []).append(f"orchestrator.context_paths[{i}]")
    return out


def _chat_backends(data: Any) -> set[str]:
    """Paths of the backends that speak OpenAI Chat Completions (backends/openai_chat.py)."""
    from massgen_mcp.config.providers import PROVIDERS

    agents = data.get("agents") if isinstance(data.get("agents"), list) else []
    out = set()
    for i, a in enumerate(agents):
        kind = a.get("backend", {}).get("type") if isinstance(a, dict) and isinstance(
            a.get("backend"), dict) else None
        p = PROVIDERS.get(str(kind).lower()) if kind else None
        if p is not None and p.openai_compatible:
            out.add(f"agents[{i}].backend")
    return out


def _shell_backends(data: Any) -> set[str]:
    """Paths of the backends with MassGen's command-line tool on (tools/shell.py)."""
    agents = data.get("agents") if isinstance(data.get("agents"), list) else []
    return {f"agents[{i}].backend" for i, a in enumerate(agents)
            if isinstance(a, dict) and isinstance(a.get("backend"), dict)
            and a["backend"].get("enable_mcp_command_line") is True}


def _ag2_backends(data: Any) -> set[str]:
    """Paths of the AG2 members (``type: ag2``) in a raw team tree."""
    agents = data.get("agents") if isinstance(data.get("agents"), list) else []
    return {f"agents[{i}].backend" for i, a in enumerate(agents)
            if isinstance(a, dict) and is_ag2(a.get("backend"))}


def _cli_backends(data: Any) -> set[str]:
    """Paths (``agents[0].backend``) of the coding-agent CLI backends in a raw team tree."""
    agents = data.get("agents") if isinstance(data.get("agents"), list) else []
    return {f"agents[{i}].backend" for i, a in enumerate(agents)
            if isinstance(a, dict) and isinstance(a.get("backend"), dict)
            and str(a["backend"].get("type", "")).lower() in CLI_TYPES}


def team_warning(where: str, lost: dict[str, list[str]]) -> str | None:
    """The one warning line of a file, or None when nothing is lost."""
    if not lost:
        return None
    parts = []
    for what, paths in lost.items():
        shown = ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4 else "")
        parts.append(f"{shown}: {what}")
    return f"{where}: accepted but not honoured: " + "; ".join(parts)


# Which provider presets honour each native-tool key (see backends/native_tools.py).
NATIVE_TOOLS: dict[str, tuple[frozenset[str], str]] = {
    "enable_web_search": (frozenset({"openai", "grok", "claude", "gemini"}),
                          "agents will have no web search"),
    "enable_code_interpreter": (frozenset({"openai", "grok"}),
                                "agents will have no code interpreter"),
    "enable_code_execution": (frozenset({"claude", "gemini", "grok"}),
                              "agents will have no code execution"),
}
# Extra-body options only OpenAI-compatible servers take (Chat Completions, not OpenAI/Azure).
PASS_THROUGH = ("top_k", "chat_template_kwargs")


def native_losses(provider: Provider, backend: Any, path: str) -> dict[str, list[str]]:
    """Native-tool and pass-through keys set on a backend that cannot honour them."""
    out: dict[str, list[str]] = {}
    for key, (providers, lost) in NATIVE_TOOLS.items():
        if getattr(backend, key, False) and provider.name not in providers:
            out.setdefault(f"{lost} (not available on type {provider.name})", []).append(
                f"{path}.{key}")
    for key in PASS_THROUGH:
        if getattr(backend, key, None) is not None and (
                not provider.openai_compatible or provider.name == "azure_openai"):
            out.setdefault(f"{key} is not sent (only OpenAI-compatible servers take it)",
                           []).append(f"{path}.{key}")
    return out
