"""Provider presets: which wire format, base URL and key variable each backend `type` means.

A *provider* is where requests go (base URL, key); the *wire format* is how they are
spelled (``openai_responses``, ``openai_chat``, ``anthropic``, ``gemini``, ``sampling``,
``function``). As in MassGen, ``type: openai`` (and Grok, whose API has the same surface)
speaks the OpenAI Responses API; every other OpenAI-compatible service is a preset feeding the
Chat Completions backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Wire = Literal["openai_responses", "openai_chat", "anthropic", "gemini", "sampling", "function",
               "test", "demo", "claude_code", "codex", "gemini_cli", "copilot", "ag2"]
#: The wire formats of the coding-agent CLIs (backends/cli/).
CODING_CLI_WIRES: frozenset[str] = frozenset({"claude_code", "codex", "gemini_cli", "copilot"})


@dataclass(frozen=True, slots=True)
class Provider:
    name: str
    wire: Wire
    base_url: str | None = None  # None: the SDK's default endpoint
    key_env: tuple[str, ...] = ()  # the usual variables, first found wins
    local: bool = False  # a model server on this machine; needs no key
    default_model: str | None = None
    signup: str = ""  # where to get a key

    # What a provider can do, asked by name instead of by comparing wire formats.
    @property
    def coding_cli(self) -> bool:
        """A coding-agent CLI run headless (backends/cli/): its own workspace and tools."""
        return self.wire in CODING_CLI_WIRES

    @property
    def uses_client_model(self) -> bool:
        """The MCP client's own model through sampling: no key, no model name of ours."""
        return self.wire == "sampling"

    @property
    def openai_compatible(self) -> bool:
        """A preset feeding the OpenAI Chat Completions backend (base URL, key)."""
        return self.wire == "openai_chat"

    @property
    def bound_to_a_run(self) -> bool:
        """A backend made for one run and never shared between runs (sampling talks to the
        run's client; scripted ones hold the run's script)."""
        return self.wire in ("sampling", "function", "test", "demo")

    @property
    def needs_model(self) -> bool:
        return not self.uses_client_model

    @property
    def keys_from_its_config(self) -> bool:
        """An AG2 member: its keys come from its llm_config entries (config/ag2.py)."""
        return self.wire == "ag2"

    @property
    def endpoint_label(self) -> str | None:
        """How a result names where this provider's requests go, when not a URL or an SDK's
        default endpoint."""
        if self.wire in ("sampling", "function"):
            return self.wire
        return f"the {self.name} CLI's own" if self.coding_cli else None


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in [
        Provider("openai", "openai_responses", None, ("OPENAI_API_KEY",),
                 default_model="gpt-5", signup="https://platform.openai.com/api-keys"),
        Provider("claude", "anthropic", None, ("ANTHROPIC_API_KEY",),
                 default_model="claude-sonnet-4-5", signup="https://console.anthropic.com/"),
        Provider("gemini", "gemini", None, ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
                 default_model="gemini-2.5-pro", signup="https://aistudio.google.com/apikey"),
        Provider("grok", "openai_responses", "https://api.x.ai/v1", ("XAI_API_KEY",),
                 default_model="grok-4", signup="https://console.x.ai/"),
        Provider("openrouter", "openai_chat", "https://openrouter.ai/api/v1",
                 ("OPENROUTER_API_KEY",), signup="https://openrouter.ai/keys"),
        Provider("groq", "openai_chat", "https://api.groq.com/openai/v1", ("GROQ_API_KEY",),
                 signup="https://console.groq.com/keys"),
        Provider("together", "openai_chat", "https://api.together.xyz/v1",
                 ("TOGETHER_API_KEY",), signup="https://api.together.ai/"),
        Provider("cerebras", "openai_chat", "https://api.cerebras.ai/v1",
                 ("CEREBRAS_API_KEY",), signup="https://cloud.cerebras.ai/"),
        Provider("fireworks", "openai_chat", "https://api.fireworks.ai/inference/v1",
                 ("FIREWORKS_API_KEY",), signup="https://fireworks.ai/"),
        Provider("deepseek", "openai_chat", "https://api.deepseek.com/v1",
                 ("DEEPSEEK_API_KEY",), signup="https://platform.deepseek.com/"),
        Provider("mistral", "openai_chat", "https://api.mistral.ai/v1", ("MISTRAL_API_KEY",),
                 signup="https://console.mistral.ai/"),
        Provider("nebius", "openai_chat", "https://api.studio.nebius.ai/v1",
                 ("NEBIUS_API_KEY",), signup="https://studio.nebius.ai/"),
        Provider("moonshot", "openai_chat", "https://api.moonshot.ai/v1",
                 ("MOONSHOT_API_KEY", "KIMI_API_KEY"), signup="https://platform.moonshot.ai/"),
        Provider("zai", "openai_chat", "https://api.z.ai/api/paas/v4", ("ZAI_API_KEY",),
                 signup="https://z.ai/"),
        Provider("qwen", "openai_chat", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
                 ("QWEN_API_KEY", "DASHSCOPE_API_KEY"), signup="https://dashscope.console.aliyun.com/"),
        Provider("nvidia_nim", "openai_chat", "https://integrate.api.nvidia.com/v1",
                 ("NGC_API_KEY",), signup="https://build.nvidia.com/"),
        # POE's endpoint depends on the account's platform: base_url is required, as in MassGen.
        Provider("poe", "openai_chat", None, ("POE_API_KEY",), signup="https://poe.com/api_key"),
        Provider("azure_openai", "openai_chat", None,
                 ("AZURE_OPENAI_API_KEY",), signup="https://portal.azure.com/"),
        Provider("ollama", "openai_chat", "http://localhost:11434/v1", local=True),
        Provider("lmstudio", "openai_chat", "http://localhost:1234/v1", local=True),
        Provider("vllm", "openai_chat", "http://localhost:8000/v1", local=True),
        Provider("sglang", "openai_chat", "http://localhost:30000/v1", local=True),
        # Any OpenAI-compatible endpoint: base_url is required, the key comes from
        # backend.api_key, or from a preset whose base URL matches, or OPENAI_API_KEY.
        Provider("chatcompletion", "openai_chat", None, ("OPENAI_API_KEY",)),
        Provider("sampling", "sampling"),
        # A Python function registered in this process (massgen_mcp.backends.function).
        Provider("function", "function"),
        # A test agent that needs no script (massgen_mcp.backends.testing).
        Provider("test", "test", default_model="test"),
        # The demo team's scripted agents (massgen_mcp.backends.demo): no key, no network.
        Provider("demo", "demo", default_model="careful"),
        # Coding-agent CLIs run headless (backends/cli/); "default" lets the CLI choose.
        Provider("claude_code", "claude_code", default_model="default",
                 signup="https://docs.anthropic.com/en/docs/claude-code"),
        Provider("codex", "codex", default_model="default",
                 signup="https://github.com/openai/codex"),
        Provider("gemini_cli", "gemini_cli", default_model="default",
                 signup="https://github.com/google-gemini/gemini-cli"),
        Provider("copilot", "copilot", default_model="default",
                 signup="https://github.com/features/copilot/cli"),
        # An AG2 agent (optional extra massgen-mcp[ag2]); its model, endpoint and key come
        # from its agent_config's llm_config (config/ag2.py).
        Provider("ag2", "ag2", signup="https://docs.ag2.ai/"),
    ]
}

# Other spellings of the same provider (MassGen type names and --models prefixes).
ALIASES: dict[str, str] = {
    "anthropic": "claude",
    "google": "gemini",
    "xai": "grok",
    "chatcompletions": "chatcompletion",
    "chat_completion": "chatcompletion",
    "openai_compatible": "chatcompletion",
    "azure": "azure_openai",
    "lm_studio": "lmstudio",
    "kimi": "moonshot",
    "inference": "vllm",
    "nim": "nvidia_nim",
    "nvidia": "nvidia_nim",
    "response": "openai",  # MassGen's name of its Responses API backend
}

# MassGen backend types that this project does not implement (yet).
UNSUPPORTED: dict[str, str] = {
    "antigravity_cli": "it drives Google's Antigravity CLI (agy); use type: gemini with a "
                       "GEMINI_API_KEY",
}

# Types whose preset needs backend.base_url (no fixed endpoint).
NEEDS_BASE_URL: dict[str, str] = {
    "chatcompletion": "the OpenAI-compatible endpoint, e.g. http://localhost:8000/v1",
    "poe": "POE's OpenAI-compatible endpoint for your account, e.g. https://api.poe.com/v1",
}


def canonical_type(type_name: str) -> str:
    """The preset name for a backend type or alias (unchanged when unknown)."""
    name = type_name.strip().lower()
    return ALIASES.get(name, name)


def known_type_names() -> list[str]:
    return sorted({*PROVIDERS, *ALIASES})


def provider_for_base_url(base_url: str) -> Provider | None:
    """The hosted preset whose endpoint this URL points at, if any (for key lookup)."""
    for p in PROVIDERS.values():
        if p.base_url and not p.local and base_url.rstrip("/").startswith(p.base_url.rstrip("/")):
            return p
    return None


#: The file endings of model weights a local server may be given as its model's name.
_WEIGHT_FILES = (".gguf", ".safetensors", ".bin", ".ggml")


def is_weights_path(model: str) -> bool:
    """Is this model name a path to a weights file (as llama.cpp's server names models)?"""
    return model.startswith(("/", "~", "./", "../")) or model.lower().endswith(_WEIGHT_FILES)


def short_model(model: str, limit: int = 48) -> str:
    """A model's name as people read it: a local server's model given as a weights path
    (`/models/SmolLM2-135M-Instruct-Q8_0.gguf`, ~400 characters for some) becomes the
    file's name without its ending (`SmolLM2-135M-Instruct-Q8_0`); other names stay as
    they are (`Qwen/Qwen3-8B`), cut to `limit` characters in the middle."""
    name = model
    if is_weights_path(name):
        name = name.rstrip("/").rsplit("/", 1)[-1]
        for ending in _WEIGHT_FILES:
            if name.lower().endswith(ending):
                name = name[: -len(ending)]
                break
    if len(name) > limit:
        keep = (limit - 1) // 2
        name = f"{name[:keep]}…{name[-(limit - 1 - keep):]}"
    return name or model
