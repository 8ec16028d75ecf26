"""What provider calls cost, from genai-prices (the pydantic team's maintained price data).

A hand-kept table goes stale the week a provider changes its prices, and every cost figure
the project reports (results, budgets, eval) rests on it; genai-prices is kept current by its
maintainers and knows tiered prices (a long prompt costs more per token on some models), dated
snapshots and aliases. It is imported the first time a price is needed, never at start.

A model genai-prices does not know has an unknown cost (`None`): never a guess. Local servers
(ollama, lmstudio, vllm, sglang, and any chatcompletion endpoint on loopback) cost nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from massgen_mcp.config.team import AgentSpec

LOCAL_PROVIDERS = frozenset({"ollama", "lmstudio", "vllm", "sglang"})

# Our provider names -> genai-prices provider ids. Azure OpenAI deployments are billed at
# OpenAI's list prices, under the deployment's model name.
_SOURCE_PROVIDER = {
    "openai": "openai", "azure_openai": "openai", "claude": "anthropic", "gemini": "google",
    "grok": "x-ai", "deepseek": "deepseek", "openrouter": "openrouter", "groq": "groq",
    "together": "together", "cerebras": "cerebras", "fireworks": "fireworks",
    "mistral": "mistral", "moonshot": "moonshotai", "zai": "zai",
}


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million input and output tokens at the model's base tier, and the
    genai-prices reference that prices a call exactly (tiers included)."""

    input_per_mtok: float
    output_per_mtok: float
    provider_id: str | None = None
    model_ref: str | None = None

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        if self.provider_id is None or self.model_ref is None:
            return (input_tokens * self.input_per_mtok
                    + output_tokens * self.output_per_mtok) / 1e6
        return _calc(self.provider_id, self.model_ref, input_tokens, output_tokens)


FREE = Price(0.0, 0.0)


def price_for(provider: str, model: str, *, local: bool = False) -> Price | None:
    """The price of `model` at `provider`, or None when it is not known.

    `local`: the endpoint is a server on this machine (free). An `openai/` style vendor prefix
    is ignored except on OpenRouter, whose model ids carry it.
    """
    if local or provider in LOCAL_PROVIDERS:
        return FREE
    source = _SOURCE_PROVIDER.get(provider)
    if source is None:
        return None
    name = model if provider == "openrouter" else model.rsplit("/", 1)[-1]
    return _lookup(source, name.lower())


@cache
def _lookup(source: str, model: str) -> Price | None:
    try:
        # Per million at 1,000 tokens: the base tier, not a long-context one.
        per_k_in = _calc(source, model, 1000, 0)
        per_k_out = _calc(source, model, 0, 1000)
    except LookupError:
        return None
    return Price(per_k_in * 1000, per_k_out * 1000, source, model)


def _calc(source: str, model: str, input_tokens: int, output_tokens: int) -> float:
    from genai_prices import Usage, calc_price

    price = calc_price(Usage(input_tokens=input_tokens, output_tokens=output_tokens),
                       model_ref=model, provider_id=source)
    return float(price.total_price)


def prices_as_of() -> str:
    """Which price data is in use: the installed genai-prices release."""
    from importlib.metadata import version

    return f"genai-prices {version('genai-prices')}"


def price_table() -> dict[str, dict[str, dict[str, float]]]:
    """The price of each priced provider's default model, as plain data (`list_backends`)."""
    from massgen_mcp.config.providers import PROVIDERS

    table: dict[str, dict[str, dict[str, float]]] = {}
    for name, preset in PROVIDERS.items():
        price = price_for(name, preset.default_model) if preset.default_model else None
        if price is not None and name in _SOURCE_PROVIDER:
            table[name] = {preset.default_model or "": {
                "input_per_mtok": round(price.input_per_mtok, 6),
                "output_per_mtok": round(price.output_per_mtok, 6)}}
    return table


def agent_price(spec: AgentSpec) -> Price | None:
    """The price of one agent's calls: free on a local preset or an OpenAI-compatible server
    on this machine (`chatcompletion` at a loopback URL), else `price_for`."""
    from massgen_mcp.urls import is_loopback_url

    local = spec.provider.local or (spec.provider.name == "chatcompletion"
                                    and is_loopback_url(spec.base_url or ""))
    return price_for(spec.provider.name, spec.model, local=local)
