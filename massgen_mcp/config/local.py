"""Local model servers (Ollama, LM Studio, vLLM, SGLang): which answer, and with what models.

Used at run time to build a team when no key is set, and by `doctor` to report them.
"""

from __future__ import annotations

from massgen_mcp.config.env import Environment
from massgen_mcp.config.providers import PROVIDERS, Provider

PROBE_TIMEOUT = 0.8


async def probe_local(provider: Provider, base_url: str | None = None) -> list[str] | None:
    """Model ids a local OpenAI-compatible server lists, or None when it does not answer."""
    import httpx

    url = (base_url or provider.base_url or "").rstrip("/") + "/models"
    try:
        async with httpx.AsyncClient(timeout=PROBE_TIMEOUT) as client:
            response = await client.get(url)
        if response.status_code != 200:
            return None
        data = response.json().get("data", [])
        return [str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id")]
    except (httpx.HTTPError, ValueError, AttributeError):
        return None


async def local_models(env: Environment) -> dict[str, list[str]]:
    """Local servers that answer, with their models (probed in parallel)."""
    import anyio

    found: dict[str, list[str]] = {}

    async def one(p: Provider) -> None:
        override = env.get(f"{p.name.upper()}_BASE_URL")
        models = await probe_local(p, override)
        if models is not None:
            found[p.name] = models

    async with anyio.create_task_group() as tg:
        for p in PROVIDERS.values():
            if p.local:
                tg.start_soon(one, p)
    return found


def local_team_models(found: dict[str, list[str]]) -> list[str]:
    """Up to three agents from the first local server that lists models."""
    for name in ("ollama", "lmstudio", "vllm", "sglang"):
        models = found.get(name) or []
        if models:
            picks = models[:3]
            return [f"{name}/{m}" for m in (picks * 3)[:3]]
    return []
