"""Output caps that fit a local model server: its context window and its speed.

The default output cap is sized for the mode (coordination/limits.py: 4,096 tokens for an
answer, 16,384 for a plan). On a local server that is often wrong twice over (issue 31): a
plan on a 4,096-token context asked for 16,384 completion tokens and failed, and 4,096
tokens take about 200 s on a slow server, past the 133 s deadline of one call. So before a
run, each agent on a local server (a loopback base URL, or a local preset) without a
`max_tokens` of its own gets a cap that fits:

- **the context**: the server is asked what it holds, where it can tell: llama.cpp's
  `GET /props` (`default_generation_settings.n_ctx`), vLLM's `GET /v1/models`
  (`max_model_len`), Ollama's `POST /api/show` (`num_ctx` in its parameters, else the
  model's `context_length`, at most Ollama's default 4,096 it serves without `num_ctx`).
  A reply never gets more than half the context (`CONTEXT_SHARE`): the rest is the prompt
  (the task and the answers the agent reviews).
- **the deadline**: on a server that answered, or whose `/v1/models` lists the model
  (llama-cpp-python's server, LM Studio), one short timed completion (`PROBE_TOKENS`)
  measures its speed; a cap it cannot generate within `DEADLINE_SHARE` of the call deadline
  is lowered to what it can.

Every lowered cap is a note in the run's result. Probes are bounded (`PROBE_SECONDS`) and
cached per server and model for `CACHE_SECONDS`; a server that answers none of them keeps
the mode's cap. Remote providers are never probed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from massgen_mcp.config.team import AgentSpec, Team
from massgen_mcp.urls import is_loopback_url

CONTEXT_SHARE = 0.5
DEADLINE_SHARE = 0.8
MIN_CAP = 256
OLLAMA_DEFAULT_CTX = 4096
PROBE_SECONDS = 2.0
PROBE_TOKENS = 32
SPEED_PROBE_SECONDS = 20.0
CACHE_SECONDS = 600.0


@dataclass(frozen=True, slots=True)
class ServerLimits:
    context: int | None = None  # tokens the server holds per request
    source: str = ""  # which endpoint said so
    tokens_per_second: float | None = None


_cache: dict[tuple[str, str], tuple[float, ServerLimits]] = {}


def is_local(spec: AgentSpec) -> bool:
    url = spec.base_url or spec.provider.base_url or ""
    return spec.provider.openai_compatible and bool(url) and (
        spec.provider.local or is_loopback_url(url))


def _root(base_url: str) -> str:
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path[:-3] if parts.path.endswith("/v1") else parts.path
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


async def _context(client: Any, base_url: str, model: str) -> tuple[int | None, str]:
    """The context window the server reports, and where it said so (`listed`: it did not
    say, but its /v1/models lists the model: an OpenAI-compatible server of that model)."""
    root = _root(base_url)
    try:
        r = await client.get(f"{root}/props")
        if r.status_code == 200:
            body = r.json()
            n = _int((body.get("default_generation_settings") or {}).get("n_ctx")) \
                or _int(body.get("n_ctx"))
            if n:
                return n, "llama.cpp /props"
    except Exception:  # any reply that is not what a llama.cpp server sends: not one
        pass
    listed = False
    try:
        r = await client.get(f"{base_url.rstrip('/')}/models")
        if r.status_code == 200:
            for m in r.json().get("data") or []:
                if isinstance(m, dict) and m.get("id") == model:
                    if _int(m.get("max_model_len")):
                        return m["max_model_len"], "vLLM /v1/models max_model_len"
                    listed = True
    except Exception:
        pass
    try:
        r = await client.post(f"{root}/api/show", json={"model": model})
        if r.status_code == 200:
            body = r.json()
            for line in str(body.get("parameters") or "").splitlines():
                key, _, value = line.strip().partition(" ")
                if key == "num_ctx" and value.strip().isdigit():
                    return int(value.strip()), "Ollama /api/show num_ctx"
            lengths = [v for k, v in (body.get("model_info") or {}).items()
                       if k.endswith(".context_length") and _int(v)]
            if lengths:
                return min(lengths[0], OLLAMA_DEFAULT_CTX), "Ollama /api/show"
    except Exception:
        pass
    return None, "listed" if listed else ""


async def _speed(client: Any, spec: AgentSpec, base_url: str) -> float | None:
    """Tokens a second over one short completion (prompt processing included: a floor)."""
    headers = {"Authorization": f"Bearer {spec.api_key.get_secret_value()}"} \
        if spec.api_key else {}
    body = {"model": spec.model, "max_tokens": PROBE_TOKENS,
            "messages": [{"role": "user", "content": "Count from 1 to 100, one per line."}]}
    t0 = time.monotonic()
    try:
        r = await client.post(f"{base_url.rstrip('/')}/chat/completions", json=body,
                              headers=headers, timeout=SPEED_PROBE_SECONDS)
        if r.status_code != 200:
            return None
        tokens = _int((r.json().get("usage") or {}).get("completion_tokens")) or PROBE_TOKENS
    except Exception:
        return None
    return tokens / max(time.monotonic() - t0, 1e-3)


async def server_limits(spec: AgentSpec) -> ServerLimits:
    """What a local server can do for `spec`'s model (cached)."""
    import httpx

    base_url = spec.base_url or spec.provider.base_url or ""
    key = (base_url, spec.model)
    hit = _cache.get(key)
    if hit is not None and time.monotonic() - hit[0] < CACHE_SECONDS:
        return hit[1]
    async with httpx.AsyncClient(timeout=PROBE_SECONDS) as client:
        context, source = await _context(client, base_url, spec.model)
        # only a server that knows the model gets a (billed-nowhere, but slow) completion
        speed = await _speed(client, spec, base_url) if source else None
    limits = ServerLimits(context, source if context else "", speed)
    _cache[key] = (time.monotonic(), limits)
    return limits


def fitted_cap(cap: int, limits: ServerLimits, deadline: float) -> tuple[int, list[str]]:
    """`cap` lowered to what the server's context and speed allow, with why."""
    notes = []
    if limits.context:
        room = max(MIN_CAP, int(limits.context * CONTEXT_SHARE))
        if cap > room:
            notes.append(f"output cap lowered from {cap} to {room} tokens: the server's "
                         f"context is {limits.context} tokens ({limits.source}) and the "
                         "prompt needs the rest")
            cap = room
    if limits.tokens_per_second:
        doable = max(MIN_CAP, int(limits.tokens_per_second * deadline * DEADLINE_SHARE))
        if cap > doable:
            notes.append(f"output cap lowered from {cap} to {doable} tokens: the server "
                         f"generates about {limits.tokens_per_second:.0f} tokens/s, so "
                         f"{cap} would not fit the {deadline:g}s deadline of one call "
                         "(call_timeout_seconds)")
            cap = doable
    return cap, notes


async def fit_to_servers(team: Team, cap: int, deadline: float) -> tuple[Team, list[str]]:
    """The team with each local agent's cap fitted (agents with their own max_tokens keep
    it), and one note per lowered cap."""
    import anyio

    local = [a for a in team.agents if a.backend.max_tokens is None and is_local(a)]
    if not local:
        return team, []
    found: dict[tuple[str, str], ServerLimits] = {}

    def key(a: AgentSpec) -> tuple[str, str]:
        return (a.base_url or a.provider.base_url or "", a.model)

    async def probe(a: AgentSpec) -> None:
        found[key(a)] = await server_limits(a)

    async with anyio.create_task_group() as tg:  # each server and model once
        for a in {key(a): a for a in local}.values():
            tg.start_soon(probe, a)
    agents, notes = [], []
    for a in team.agents:
        if a not in local:
            agents.append(a)
            continue
        fitted, why = fitted_cap(cap, found[key(a)], deadline)
        notes += [f"{a.id}: {w}" for w in why]
        agents.append(replace(a, backend=a.backend.model_copy(update={"max_tokens": fitted}))
                      if why else a)
    return replace(team, agents=tuple(agents)), notes
