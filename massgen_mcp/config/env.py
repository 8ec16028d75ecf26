"""The environment a team is resolved in: process variables, a `.env` file, `${VAR}` expansion.

Only `config.py` (and the few places that pass an `Environment` on) read the environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from massgen_mcp.errors import ConfigError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def read_dotenv(path: Path) -> dict[str, str]:
    """Parse a .env file (KEY=VALUE lines, optional `export`, quotes, # comments)."""
    values: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return values
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        key, value = key.strip(), value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        if key:
            values[key] = value
    return values


class Environment(Mapping[str, str]):
    """The process environment, falling back to a `.env` file in the working directory.

    Real environment variables win over `.env` entries, as with every dotenv tool.
    """

    def __init__(
        self, environ: Mapping[str, str] | None = None, dotenv_dir: Path | None = None
    ) -> None:
        self._environ = dict(os.environ if environ is None else environ)
        self._dotenv = read_dotenv((dotenv_dir or Path.cwd()) / ".env")

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

    def first(self, names: tuple[str, ...]) -> str | None:
        for name in names:
            if name in self:
                return self[name]
        return None


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
