"""The environment a team is resolved in: process variables, a `.env` file, `${VAR}` expansion.

Only `config.py` (and the few places that pass an `Environment` on) read the environment.

The `.env` in the working directory belongs to the project, and a project may be a cloned
repository: it may set keys, but it may not choose where requests (and the user's files with
them) go. So its entries that name an endpoint, a proxy or a CA bundle (`OLLAMA_BASE_URL`,
`OPENAI_BASE_URL`, `AZURE_OPENAI_ENDPOINT`, `OLLAMA_HOST`, `HTTPS_PROXY`, `SSL_CERT_FILE`, ...)
are ignored with a warning naming them, and `${VAR}` in a field that chooses an endpoint or a
process (`base_url`, `api_version`, a tool server's command, args or url) expands from the
real environment only. The operator can allow both with `MASSGEN_MCP_DOTENV_ENDPOINTS=1` in
the real environment.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from massgen_mcp.errors import ConfigError
from massgen_mcp.regex import lazy

log = logging.getLogger(__name__)

_VAR = lazy(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
#: Set to 1 in the real environment: a project's .env may also set endpoints.
DOTENV_ENDPOINTS_VAR = "MASSGEN_MCP_DOTENV_ENDPOINTS"
# Not every *_URL or *_HOST: a project's DATABASE_URL or REDIS_HOST is none of our business
# (and `${VAR}` in an endpoint field never reads the .env anyway).
_REDIRECTING = lazy(
    r"(_BASE_URL|_API_BASE|_API_URL|_ENDPOINT|_PROXY|_CA_BUNDLE|_CA_CERTS)$"
    r"|^(OLLAMA_HOST|ALL_PROXY|NO_PROXY|SSL_CERT_FILE|SSL_CERT_DIR)$", re.I)
_warned: set[tuple[str, str]] = set()


def redirects(name: str) -> bool:
    """Does this variable choose where requests go (an endpoint, a proxy, a CA bundle)?"""
    return bool(_REDIRECTING.search(name))


def read_dotenv(path: Path) -> dict[str, str]:
    """The entries of a .env file, read by python-dotenv as every dotenv tool reads them:
    `export`, single and double quotes, a `# comment` after a value, escapes in double
    quotes (`\\n`), values over several lines in quotes. No `${VAR}` interpolation: a value
    is what the file says (expansion is the team file's, with its own rules). A line that
    does not parse is skipped (python-dotenv logs it)."""
    if not path.is_file():
        return {}
    from dotenv import dotenv_values

    try:
        values = dotenv_values(path, interpolate=False, encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    return {k: v for k, v in values.items() if k and v is not None}


class Environment(Mapping[str, str]):
    """The process environment, falling back to a `.env` file in the working directory.

    Real environment variables win over `.env` entries, as with every dotenv tool. The
    `.env` entries that would redirect requests are left out (see the module docstring):
    `ignored` names them.
    """

    def __init__(
        self, environ: Mapping[str, str] | None = None, dotenv_dir: Path | None = None
    ) -> None:
        self._environ = dict(os.environ if environ is None else environ)
        path = (dotenv_dir or Path.cwd()) / ".env"
        self.dotenv_path = path
        dotenv = read_dotenv(path)
        self.dotenv_endpoints = self._environ.get(DOTENV_ENDPOINTS_VAR, "").strip().lower() \
            in ("1", "true", "yes", "on")
        self._dotenv = {k: v for k, v in dotenv.items()
                        if self.dotenv_endpoints or not redirects(k)}
        #: Names the .env sets only for endpoint fields' sake and that are kept from them.
        self._dotenv_only = frozenset(k for k in dotenv if not self._environ.get(k))
        #: .env entries left out because they would redirect requests.
        self.ignored = tuple(sorted(k for k in dotenv if k not in self._dotenv
                                    and not self._environ.get(k)))
        for name in self.ignored:
            if (str(path), name) not in _warned:  # once per process, not per Environment
                _warned.add((str(path), name))
                log.warning("%s: %s ignored: a project's .env may set keys but not where "
                            "requests go; set it in the real environment, or start the server "
                            "with %s=1 to allow it", path, name, DOTENV_ENDPOINTS_VAR)

    def __getitem__(self, key: str) -> str:
        value = self._environ.get(key)
        if value is None or value == "":
            value = self._dotenv.get(key)
        if value is None or value == "":
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter({**self._dotenv, **self._environ})

    def __len__(self) -> int:
        return len({**self._dotenv, **self._environ})

    def source_of(self, name: str) -> str:
        """Where `name`'s value comes from, to show: the variable, or the variable and the
        project's .env when only that file sets it (a key a repository adds silently)."""
        if not self._environ.get(name) and self._dotenv.get(name):
            return f"{name} from {self.dotenv_path}"
        return name

    def first(self, names: tuple[str, ...]) -> str | None:
        for name in names:
            if name in self:
                return self[name]
        return None

    def endpoints(self) -> Mapping[str, str]:
        """What `${VAR}` in a field choosing an endpoint or a process may read: the real
        environment only (and the .env too when the operator allowed it)."""
        if self.dotenv_endpoints:
            return self
        return _RealOnly(self._environ, self._dotenv_only)


class _RealOnly(Mapping[str, str]):
    """The real environment; `dotenv_only` says which names the .env alone sets (for the
    error message of an unset variable)."""

    def __init__(self, environ: dict[str, str], dotenv_only: frozenset[str]) -> None:
        self._environ = {k: v for k, v in environ.items() if v}
        self.dotenv_only = dotenv_only

    def __getitem__(self, key: str) -> str:
        return self._environ[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)


def expand_vars(
    value: Any, env: Mapping[str, str], where: str = "", *,
    placeholders: Mapping[str, str] | None = None, errors: list[str] | None = None,
) -> Any:
    """Expand `${VAR}` and `${VAR:-default}` in every string of a YAML tree.

    `placeholders` are names that are not environment variables (MassGen's `${cwd}`, the
    agent's working directory) and win over the environment. An unset variable without a
    default is a ConfigError naming the variable and field; with `errors` given, each such
    problem is appended there instead (the text is left as it was), so all are reported.
    """
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            if placeholders and name in placeholders:
                return placeholders[name]
            if name in env:
                return env[name]
            if default is not None:
                return default
            if name in getattr(env, "dotenv_only", ()):
                problem = (f"{where}: {name} is set only in the project's .env, which may not "
                           "choose endpoints or commands; set it in the real environment, or "
                           f"start the server with {DOTENV_ENDPOINTS_VAR}=1")
            else:
                problem = (f"{where}: environment variable {name} is not set; set it or "
                           f"write ${{{name}:-default}}")
            if errors is None:
                raise ConfigError(problem)
            errors.append(problem)
            return m.group(0)

        return _VAR.sub(sub, value)
    kw: dict[str, Any] = {"placeholders": placeholders, "errors": errors}
    if isinstance(value, list):
        return [expand_vars(v, env, f"{where}[{i}]", **kw) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: expand_vars(v, env, f"{where}.{k}" if where else str(k), **kw)
                for k, v in value.items()}
    return value
