"""What provider calls cost: a maintained USD price table for the bundled providers' models.

Prices are list prices in US dollars per million tokens (input, output) for standard,
non-batch, non-cached requests at short prompt lengths, as the providers published them on
`PRICES_AS_OF`. A model that is not in the table has an unknown cost (`None`): never a guess.
Local servers (ollama, lmstudio, vllm, sglang, and any chatcompletion endpoint on loopback)
cost nothing in money. Update the table when prices change; `list_backends` shows it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from massgen_mcp.config.team import AgentSpec

PRICES_AS_OF = "2025-10"


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million input (prompt) and output (completion, incl. thinking) tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


FREE = Price(0.0, 0.0)

# provider name -> model -> price. Model names without date suffixes (see `price_for`).
PRICES: dict[str, dict[str, Price]] = {
    "openai": {
        "gpt-5": Price(1.25, 10.0),
        "gpt-5-mini": Price(0.25, 2.0),
        "gpt-5-nano": Price(0.05, 0.40),
        "gpt-4.1": Price(2.0, 8.0),
        "gpt-4.1-mini": Price(0.40, 1.60),
        "gpt-4.1-nano": Price(0.10, 0.40),
        "gpt-4o": Price(2.50, 10.0),
        "gpt-4o-mini": Price(0.15, 0.60),
        "o3": Price(2.0, 8.0),
        "o4-mini": Price(1.10, 4.40),
        "o3-mini": Price(1.10, 4.40),
    },
    "claude": {
        "claude-opus-4-1": Price(15.0, 75.0),
        "claude-opus-4": Price(15.0, 75.0),
        "claude-sonnet-4-5": Price(3.0, 15.0),
        "claude-sonnet-4": Price(3.0, 15.0),
        "claude-3-7-sonnet": Price(3.0, 15.0),
        "claude-haiku-4-5": Price(1.0, 5.0),
        "claude-3-5-haiku": Price(0.80, 4.0),
    },
    "gemini": {
        "gemini-2.5-pro": Price(1.25, 10.0),
        "gemini-2.5-flash": Price(0.30, 2.50),
        "gemini-2.5-flash-lite": Price(0.10, 0.40),
        "gemini-2.0-flash": Price(0.10, 0.40),
        "gemini-2.0-flash-lite": Price(0.075, 0.30),
    },
    "grok": {
        "grok-4": Price(3.0, 15.0),
        "grok-3": Price(3.0, 15.0),
        "grok-3-mini": Price(0.30, 0.50),
    },
    "deepseek": {
        "deepseek-chat": Price(0.28, 0.42),
        "deepseek-reasoner": Price(0.28, 0.42),
    },
}
# Azure OpenAI deployments of the same models are billed at OpenAI's list prices.
PRICES["azure_openai"] = PRICES["openai"]

LOCAL_PROVIDERS = frozenset({"ollama", "lmstudio", "vllm", "sglang"})
_DATED = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}|-latest|-preview(-\d{2}-\d{4})?)$")


def price_for(provider: str, model: str, *, local: bool = False) -> Price | None:
    """The price of `model` at `provider`, or None when it is not known.

    `local`: the endpoint is a server on this machine (free). Dated snapshots
    (`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`) and `-latest` aliases are priced as
    their model; an `openai/` style vendor prefix is ignored.
    """
    if local or provider in LOCAL_PROVIDERS:
        return FREE
    table = PRICES.get(provider)
    if table is None:
        return None
    name = model.rsplit("/", 1)[-1].lower()
    while name not in table:
        shorter = _DATED.sub("", name)
        if shorter == name:
            return None
        name = shorter
    return table[name]


def price_table() -> dict[str, dict[str, dict[str, float]]]:
    """The table as plain data (for `list_backends`)."""
    return {provider: {model: {"input_per_mtok": p.input_per_mtok,
                               "output_per_mtok": p.output_per_mtok}
                       for model, p in models.items()}
            for provider, models in PRICES.items()}


def agent_price(spec: AgentSpec) -> Price | None:
    """The price of one agent's calls: free on a local preset or an OpenAI-compatible server
    on this machine (`chatcompletion` at a loopback URL), else `price_for`."""
    from massgen_mcp.urls import is_loopback_url

    local = spec.provider.local or (spec.provider.name == "chatcompletion"
                                    and is_loopback_url(spec.base_url or ""))
    return price_for(spec.provider.name, spec.model, local=local)
