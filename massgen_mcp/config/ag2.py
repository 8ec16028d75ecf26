"""MassGen's `type: ag2` members: reading `agent_config`, and what a file asks of AG2.

A MassGen ag2 member is one AG2 agent (``agent_config``: ``type: assistant`` or
``conversable``, ``name``, ``system_message``, ``llm_config`` as a dict or a list of
fallbacks, optionally ``code_execution_config``). The backend (`backends/ag2.py`) runs it
with AG2's own OpenAI client. This module is what loading needs, without importing AG2:

- `shape_team` folds the first ``llm_config`` entry's model, endpoint, key and output cap
  into the backend's own fields (so `${VAR}` expansion, key lookup, restricted-file checks
  and the output cap work as for every backend) and turns a code executor into the
  sandboxed command-line tool (`tools/shell.py`): code never runs unsandboxed;
- `losses` names what such a file asks for and does not get, for the file's one warning;
- `llm_entries` gives the backend the validated entries.

Anthropic and Google entries run on those providers' OpenAI-compatible endpoints: AG2's own
Anthropic client passes ``temperature`` to ``messages.create``, which anthropic>=1 removed
(ag2[anthropic] pins anthropic<1), and its Gemini client needs Vertex AI and
google-genai<3, while massgen-mcp needs anthropic 2 and google-genai 3.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: api_type -> (the OpenAI-compatible endpoint used when the entry names none, key variables)
API_TYPES: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "openai": (None, ("OPENAI_API_KEY",)),
    "anthropic": ("https://api.anthropic.com/v1/", ("ANTHROPIC_API_KEY",)),
    # MassGen copies GEMINI_API_KEY to AG2's GOOGLE_GEMINI_API_KEY; either is read here.
    "google": ("https://generativelanguage.googleapis.com/v1beta/openai/",
               ("GEMINI_API_KEY", "GOOGLE_GEMINI_API_KEY", "GOOGLE_API_KEY")),
}
_API_ALIASES = {"gemini": "google", "claude": "anthropic"}
#: llm_config entry keys that are honoured; the rest are named in the file's warning.
ENTRY_KEYS = frozenset({"api_type", "model", "api_key", "base_url", "temperature", "top_p",
                        "max_tokens"})
#: agent_config keys that are honoured (code_execution_config becomes the sandboxed tool).
AGENT_KEYS = frozenset({"type", "name", "system_message", "llm_config",
                        "code_execution_config", "description"})
AGENT_TYPES = ("assistant", "conversable")
#: The backend keys `shape_team` may set (not "accepted but not honoured" on an ag2 member).
AG2_BACKEND_KEYS = frozenset({"agent_config", "enable_mcp_command_line",
                              "command_line_timeout"})
DEFAULT_SYSTEM_MESSAGE = "You are a helpful AI assistant."  # MassGen's default, not AG2's
INSTALL = "pip install 'massgen-mcp[ag2]'"
_ENTRY_LOSSES = {
    "cache_seed": "AG2 replies are not cached on disk (cache_seed)",
    "price": "costs use massgen-mcp's price table, not the file's price",
}


@dataclass(frozen=True, slots=True)
class LLMEntry:
    """One llm_config entry, as the backend sends it through AG2's OpenAI client."""

    api_type: str
    model: str
    base_url: str | None
    api_key: str | None
    temperature: float | None
    top_p: float | None
    max_tokens: int | None

    @property
    def key_env(self) -> tuple[str, ...]:
        return API_TYPES[self.api_type][1]

    @property
    def endpoint(self) -> str | None:
        return self.base_url or API_TYPES[self.api_type][0]


def is_ag2(backend: Any) -> bool:
    return isinstance(backend, Mapping) and str(backend.get("type", "")).strip().lower() == "ag2"


def _raw_entries(value: Any, path: str, problems: list[str]) -> list[dict[str, Any]]:
    items = value if isinstance(value, list) else [value]
    out = []
    for i, item in enumerate(items):
        where = f"{path}[{i}]" if isinstance(value, list) else path
        if not isinstance(item, Mapping):
            problems.append(f"{where}: an llm_config entry must be a mapping with api_type "
                            "and model")
            continue
        out.append(dict(item))
    if not out and not problems:
        problems.append(f"{path}: llm_config needs at least one entry (api_type, model)")
    return out


def _entry(raw: Mapping[str, Any], where: str, problems: list[str]) -> LLMEntry | None:
    api_type = str(raw.get("api_type") or "openai").strip().lower()
    api_type = _API_ALIASES.get(api_type, api_type)
    if api_type not in API_TYPES:
        problems.append(f"{where}.api_type: '{raw.get('api_type')}' is not supported in an ag2 "
                        f"member; use {', '.join(API_TYPES)} (or a massgen-mcp backend type)")
        return None
    model = raw.get("model")
    if not isinstance(model, str) or not model.strip():
        problems.append(f"{where}.model: required (the model this AG2 agent calls)")
        return None
    numbers: dict[str, Any] = {}
    for key, low, high in (("temperature", 0, 2), ("top_p", 0, 1), ("max_tokens", 1, 10**6)):
        v = raw.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)
                              or not low <= v <= high):
            problems.append(f"{where}.{key}: expected a number from {low} to {high}")
            return None
        numbers[key] = v
    texts = {k: raw.get(k) for k in ("base_url", "api_key")}
    for key, v in texts.items():
        if v is not None and not isinstance(v, str):
            problems.append(f"{where}.{key}: expected a string")
            return None
    return LLMEntry(api_type, model.strip(), texts["base_url"], texts["api_key"],
                    numbers["temperature"], numbers["top_p"],
                    int(numbers["max_tokens"]) if numbers["max_tokens"] is not None else None)


def llm_entries(agent_config: Any, path: str = "agent_config") -> list[LLMEntry]:
    """The validated entries of an agent_config's llm_config (ValueError naming the problem).
    An agent without agent_config (``--models ag2/gpt-4o``) has none: the backend then uses
    the member's own model, endpoint and key."""
    if agent_config is None:
        return []
    problems: list[str] = []
    cfg = agent_config if isinstance(agent_config, Mapping) else {}
    raws = _raw_entries(cfg.get("llm_config"), f"{path}.llm_config", problems)
    entries = [e for i, r in enumerate(raws)
               if (e := _entry(r, f"{path}.llm_config" + (f"[{i}]" if len(raws) > 1 else ""),
                               problems)) is not None]
    if problems:
        raise ValueError("; ".join(problems))
    return entries


# AG2's own keys, not honoured but not typos of ours (their warning says they are ignored).
_AG2_KEYS = frozenset({"cache_seed", "price", "tags", "api_version", "default_headers",
                       "extra_body", "extra_headers", "human_input_mode", "timeout",
                       "max_consecutive_auto_reply", "is_termination_msg", "function_map",
                       "default_auto_reply", "tool_choice", "stream", "max_retries"})


def _typos(keys: Any, known: frozenset[str], path: str, problems: list[str]) -> None:
    """A key one typo away from one that is honoured (``sytem_message``) is an error, as
    everywhere in a team file (massgen_keys.near_misses)."""
    import difflib

    for key in keys:
        key = str(key)
        if key in known or key in _AG2_KEYS:
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
        if close:
            problems.append(f"{path}.{key}: unknown field '{key}'; did you mean '{close[0]}'?")


def _check_agent(cfg: Any, path: str, problems: list[str]) -> list[LLMEntry]:
    if not isinstance(cfg, Mapping):
        problems.append(f"{path}: expected a mapping (type, name, system_message, llm_config)")
        return []
    _typos(cfg, AGENT_KEYS, path, problems)
    raw_llm = cfg.get("llm_config")
    for j, raw in enumerate(raw_llm if isinstance(raw_llm, list) else [raw_llm]):
        if isinstance(raw, Mapping):
            _typos(raw, ENTRY_KEYS, f"{path}.llm_config" + (
                f"[{j}]" if isinstance(raw_llm, list) else ""), problems)
    kind = str(cfg.get("type") or "conversable").strip().lower()
    if kind not in AGENT_TYPES:
        problems.append(f"{path}.type: '{cfg.get('type')}' is not an AG2 agent type here; use "
                        "assistant or conversable")
    for key in ("name", "system_message"):
        if cfg.get(key) is not None and not isinstance(cfg.get(key), str):
            problems.append(f"{path}.{key}: expected a string")
    if "llm_config" not in cfg:
        problems.append(f"{path}.llm_config: required (api_type and model of the AG2 agent)")
        return []
    try:
        entries = llm_entries(cfg, path)
    except ValueError as e:
        problems.append(str(e))
        return []
    raws = cfg["llm_config"] if isinstance(cfg["llm_config"], list) else [cfg["llm_config"]]
    for i, raw in enumerate(raws[1:], start=1):  # only the first entry's fields are expanded
        for key in ("api_key", "base_url"):
            if "${" in str(raw.get(key, "")):
                problems.append(
                    f"{path}.llm_config[{i}].{key}: ${{...}} is expanded only in the first "
                    "llm_config entry; set this entry's key in its provider's variable "
                    f"({' or '.join(API_TYPES[entries[i].api_type][1])})")
    return entries


def _executor(cfg: Mapping[str, Any]) -> Mapping[str, Any] | None:
    code = cfg.get("code_execution_config")
    if not isinstance(code, Mapping):
        return None
    executor = code.get("executor")
    return executor if isinstance(executor, Mapping) else (code if code else None)


def shape_team(data: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    """The team with each ag2 member's first llm_config entry folded into its backend
    fields (fields the file sets itself win) and its code executor turned into the sandboxed
    command-line tool. Problems are added to `problems` (``agents[i].backend...: ...``)."""
    agents = data.get("agents")
    if not isinstance(agents, list) or not any(
            isinstance(a, Mapping) and is_ag2(a.get("backend")) for a in agents):
        return data
    out = []
    for i, agent in enumerate(agents):
        backend = agent.get("backend") if isinstance(agent, Mapping) else None
        if not is_ag2(backend):
            out.append(agent)
            continue
        assert isinstance(backend, Mapping)
        path = f"agents[{i}].backend"
        new = dict(backend)
        group = new.get("group_config")
        if group is not None:
            llm = group.get("llm_config") if isinstance(group, Mapping) else None
            if isinstance(llm, Mapping) and isinstance(llm.get("model"), str):
                new.setdefault("model", llm["model"])  # only this error, not "model required"
            problems.append(
                f"{path}.group_config: AG2 group chats are not supported; give each AG2 agent "
                "its own member (type: ag2 with an agent_config), which the team's voting "
                "then coordinates")
        cfg = new.get("agent_config")
        if cfg is None:
            if "group_config" not in new and not new.get("model"):
                problems.append(f"{path}.agent_config: required (the AG2 agent: type, name, "
                                "system_message, llm_config)")
            out.append({**agent, "backend": new})
            continue
        entries = _check_agent(cfg, f"{path}.agent_config", problems)
        if entries and isinstance(cfg, Mapping):
            first = cfg["llm_config"][0] if isinstance(cfg["llm_config"], list) \
                else cfg["llm_config"]
            for key in ("model", "base_url", "api_key", "max_tokens"):
                if new.get(key) is None and first.get(key) is not None:
                    new[key] = first[key]
            if new.get("base_url") is None and entries[0].endpoint:  # anthropic, google
                new["base_url"] = entries[0].endpoint  # what the run says it called
            executor = _executor(cfg)
            if executor is not None and "enable_mcp_command_line" not in new:
                new["enable_mcp_command_line"] = True  # sandboxed: tools/shell.py
                timeout = executor.get("timeout")
                if isinstance(timeout, int | float) and not isinstance(timeout, bool):
                    new.setdefault("command_line_timeout", timeout)
        out.append({**agent, "backend": new})
    return {**data, "agents": out}


def primary_key_env(backend: Any, base_url: str | None) -> tuple[str, ...]:
    """The key variables of a member's first llm_config entry (none for a loopback server:
    a local OpenAI-compatible server needs no key)."""
    from massgen_mcp.urls import is_loopback_url

    if base_url and is_loopback_url(base_url):
        return ()
    try:
        entries = llm_entries((getattr(backend, "model_extra", None) or {}).get("agent_config"))
    except ValueError:
        entries = []
    return entries[0].key_env if entries else API_TYPES["openai"][1]


def losses(data: Any) -> dict[str, list[str]]:
    """What each ag2 member's agent_config asks for and does not get -> the key paths."""
    out: dict[str, list[str]] = {}
    agents = data.get("agents") if isinstance(data, Mapping) else None
    for i, agent in enumerate(agents if isinstance(agents, list) else []):
        backend = agent.get("backend") if isinstance(agent, Mapping) else None
        cfg = backend.get("agent_config") if is_ag2(backend) and isinstance(
            backend, Mapping) else None
        if not isinstance(cfg, Mapping):
            continue
        path = f"agents[{i}].backend.agent_config"
        for key in cfg:
            if str(key) not in AGENT_KEYS:
                out.setdefault("ignored (not implemented for AG2 members)", []).append(
                    f"{path}.{key}")
        if _executor(cfg) is not None:
            out.setdefault(
                "AG2's code executor is replaced by the execute_command tool, sandboxed in the "
                "agent's workspace (work_dir is not used; code blocks in a reply are not run "
                "by themselves)", []).append(f"{path}.code_execution_config")
        raws = cfg.get("llm_config")
        items = raws if isinstance(raws, list) else [raws]
        for j, raw in enumerate(items):
            if not isinstance(raw, Mapping):
                continue
            where = f"{path}.llm_config" + (f"[{j}]" if isinstance(raws, list) else "")
            for key in raw:
                if str(key) not in ENTRY_KEYS:
                    out.setdefault(_ENTRY_LOSSES.get(str(key), "ignored (not implemented for "
                                   "AG2 members)"), []).append(f"{where}.{key}")
            api = _API_ALIASES.get(str(raw.get("api_type", "")).lower(),
                                   str(raw.get("api_type", "")).lower())
            if api in ("anthropic", "google"):
                out.setdefault(
                    "runs on the provider's OpenAI-compatible endpoint through AG2's OpenAI "
                    "client (AG2's own Anthropic and Gemini clients need anthropic<1 and "
                    "google-genai<3)", []).append(f"{where}.api_type")
    return out


def restricted_paths(backend: Any, path: str) -> list[str]:
    """An ag2 member's nested fields that a restricted team file (named by a tool call) may
    not set: endpoints, keys and variables in llm_config, and code execution."""
    if not is_ag2(backend) or not isinstance(backend, Mapping):
        return []
    found = []
    for section in ("agent_config", "group_config"):
        cfg = backend.get(section)
        if not isinstance(cfg, Mapping):
            continue
        if cfg.get("code_execution_config"):
            found.append(f"{path}.{section}.code_execution_config")
        raws = cfg.get("llm_config")
        for j, raw in enumerate(raws if isinstance(raws, list) else [raws]):
            if isinstance(raw, Mapping):
                found += [f"{path}.{section}.llm_config[{j}].{k}" for k, v in raw.items()
                          if k in ("base_url", "api_key", "default_headers", "extra_headers")
                          or "${" in str(v)]
    return found
