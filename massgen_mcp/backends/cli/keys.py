"""Provider keys and endpoints from the server's environment (and `.env`), handed to each CLI
the way that CLI reads them.

A CLI gets none of the server's variables except PATH, locale and proxies (`_process.py`);
these are the ones it needs for a key the user set instead of logging in. Observed with the
pinned versions (shared/reference/cli-agents.md):

- Claude Code reads ``ANTHROPIC_API_KEY`` (``x-api-key``) or ``ANTHROPIC_AUTH_TOKEN``
  (bearer), and ``ANTHROPIC_BASE_URL``; in ``-p`` mode a key wins over a login.
- Codex 0.171 ``exec`` reads ``CODEX_API_KEY``, not ``OPENAI_API_KEY`` (a request with only
  the latter goes out without auth): an ``OPENAI_API_KEY`` is passed as ``CODEX_API_KEY``.
- Gemini CLI reads ``GEMINI_API_KEY`` (or ``GOOGLE_API_KEY``) once its settings select
  ``gemini-api-key`` auth, and ``GOOGLE_GEMINI_BASE_URL``.
- GitHub Copilot CLI reads ``COPILOT_GITHUB_TOKEN``, ``GH_TOKEN`` or ``GITHUB_TOKEN``.
"""

from __future__ import annotations

from collections.abc import Mapping

# type -> variables that carry a key, in the order the CLI prefers them
KEY_VARS: dict[str, tuple[str, ...]] = {
    "claude_code": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"),
    "codex": ("CODEX_API_KEY", "OPENAI_API_KEY"),
    "gemini_cli": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "copilot": ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"),
}
# type -> other variables the CLI reads for where and how to reach its provider
ENDPOINT_VARS: dict[str, tuple[str, ...]] = {
    "claude_code": ("ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL"),
    "codex": (),
    "gemini_cli": ("GOOGLE_GEMINI_BASE_URL", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
                   "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_APPLICATION_CREDENTIALS"),
    "copilot": (),
}


def _get(env: Mapping[str, str], name: str) -> str | None:
    try:
        return env[name] or None  # an Environment also looks in .env
    except KeyError:
        return None


def env_key(kind: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(variable, value) of the first key variable set for CLI `kind`, or None."""
    for name in KEY_VARS.get(kind, ()):
        value = _get(env, name)
        if value:
            return name, value
    return None


def passed_env(kind: str, env: Mapping[str, str]) -> dict[str, str]:
    """The key and endpoint variables of `env` that CLI `kind` reads, under its own names."""
    out = {n: v for n in (*KEY_VARS.get(kind, ()), *ENDPOINT_VARS.get(kind, ()))
           if (v := _get(env, n))}
    if kind == "codex" and "OPENAI_API_KEY" in out:
        out.setdefault("CODEX_API_KEY", out["OPENAI_API_KEY"])
    return out
