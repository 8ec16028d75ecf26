"""How independent the majority was: model families among the winner's voters.

Agents from one model family tend to be wrong together: three gpt-5 agents agreeing is
closer to one opinion than to three. So a result says how many distinct families voted for
the winner (`winner.families`), and `agreement.independent_share`: the winner's share of the
votes when each family's votes count once.

A **family** is the vendor plus the model line, the model name up to its version details:

    openai/gpt-5-mini, openai/gpt-5, openrouter openai/gpt-5   -> openai/gpt-5
    openai/gpt-4o-mini                                          -> openai/gpt-4o
    anthropic/claude-sonnet-4-5, claude-sonnet-4-20250514       -> anthropic/claude-sonnet
    gemini-2.5-flash, gemini-2.5-pro                            -> google/gemini-2.5
    ollama llama3.2:3b, together meta-llama/Llama-3.3-70B       -> meta/llama3.2, meta/llama-3.3

The vendor comes from the model line when it is a known one (so the same model through a
router or a local server is the same family), else from a vendor prefix in the model name
(`meta-llama/...`), else the provider's name.

Each family that voted weighs 1, split over the answers its agents voted for: with three
gpt-5 votes for the winner and one claude vote against, the share is 3/4 but the
independent share is 1/2 (gpt-5 for, claude against).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from massgen_mcp.coordination.agent import AgentState

#: Model-line prefixes -> vendor (a router or a local server serves someone's model).
VENDORS = {"gpt": "openai", "o1": "openai", "o3": "openai", "o4": "openai",
           "chatgpt": "openai", "claude": "anthropic", "gemini": "google",
           "gemma": "google", "llama": "meta", "qwen": "qwen", "qwq": "qwen",
           "mistral": "mistral", "mixtral": "mistral", "codestral": "mistral",
           "magistral": "mistral", "devstral": "mistral", "deepseek": "deepseek",
           "grok": "xai", "kimi": "moonshot", "glm": "zai", "phi": "microsoft",
           "smollm": "huggingface", "command": "cohere", "nemotron": "nvidia"}
#: Provider presets whose name is not their vendor's.
PROVIDER_VENDORS = {"claude": "anthropic", "claude_code": "anthropic", "chatcompletion":
                    "openai", "azure_openai": "openai", "codex": "openai", "gemini": "google",
                    "gemini_cli": "google", "grok": "xai"}
#: Words that name a size or a variant inside a line, not a line of its own.
_VARIANTS = {"mini", "nano", "micro", "small", "medium", "large", "pro", "flash", "lite",
             "turbo", "instruct", "chat", "preview", "latest", "exp", "experimental",
             "thinking", "reasoner", "fast", "plus", "max", "base", "it", "hf", "online"}
_DATE = re.compile(r"^\d{4}(-?\d{2}){0,2}$|^\d{8}$")


def model_line(model: str) -> str:
    """The model's line: `gpt-5-mini` -> `gpt-5`, `claude-sonnet-4-5` -> `claude-sonnet`."""
    name = model.lower().rsplit("/", 1)[-1].split(":", 1)[0]
    tokens = [t for t in re.split(r"[-_\s]+", name) if t]
    if not tokens:
        return name or "unknown"
    line = [tokens[0]]
    if re.search(r"\d", tokens[0]):
        return tokens[0]  # the version is part of the name: qwen2.5, llama3.2, o3, smollm2
    rest = tokens[1:]
    if rest and re.match(r"^\d", rest[0]) and not _DATE.match(rest[0]):
        return f"{tokens[0]}-{rest[0]}"  # the generation follows the name: gpt-5, gemini-2.5
    for t in rest:  # the line's words up to the first version or variant: claude-sonnet
        if re.search(r"\d", t) or t in _VARIANTS:
            break
        line.append(t)
    return "-".join(line)


def family(provider: str, model: str) -> str:
    """`vendor/line` for an agent's provider preset and model (see the module's examples)."""
    line = model_line(model)
    head = re.match(r"[a-z]+", line)
    vendor = VENDORS.get(line.split("-", 1)[0]) or (VENDORS.get(head.group(0)) if head
                                                      else None)
    if vendor is None and "/" in model:
        vendor = model.lower().split("/", 1)[0].removesuffix("-ai")
    if vendor is None:
        vendor = PROVIDER_VENDORS.get(provider, provider)
    return f"{vendor}/{line}"


def agent_family(a: AgentState) -> str:
    return family(a.spec.provider.name, a.spec.model)


def independence(agents: list[AgentState], winner: AgentState | None) -> tuple[int, float]:
    """(distinct families that voted for `winner`, its independent share of the votes)."""
    if winner is None:
        return 0, 0.0
    by_family: dict[str, list[str]] = defaultdict(list)
    for a in agents:
        if a.vote is not None and a.vote.voted_for:
            by_family[agent_family(a)].append(a.vote.voted_for)
    if not by_family:
        return 0, 0.0
    weight = sum(votes.count(winner.anon) / len(votes) for votes in by_family.values())
    families = sum(1 for votes in by_family.values() if winner.anon in votes)
    return families, round(weight / len(by_family), 4)


def independence_shortfall(need: float | None, agents: list[AgentState],
                           winner: AgentState) -> str | None:
    """Why `winner` falls short of `min_independent_share`, or None."""
    if need is None:
        return None
    families, share = independence(agents, winner)
    if share >= need:
        return None
    return (f"no consensus: the leading answer ({winner.spec.id}) has an independent share of "
            f"{share:.0%} ({families} model famil{'y' if families == 1 else 'ies'} voted for "
            f"it, each family's votes counted once), below min_agreement independent_share "
            f"{need:g}")
