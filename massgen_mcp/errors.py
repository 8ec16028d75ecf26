"""The exception tree of massgen-mcp.

    MassgenError                 anything this package raises on purpose; str() is for users
    ├── ConfigError              a team file, model shorthand or option is wrong (before any call)
    │   └── MissingKeyError      a provider key is not set; names the variable to set
    ├── BackendError             a provider call failed; carries provider, model, status
    │   ├── PermanentBackendError  retrying cannot help (auth, unknown model, bad request)
    │   └── TransientBackendError  retries were used up (rate limit, 5xx, timeout, network)
    ├── RunNotFoundError         no run with that id
    └── InputError               a tool argument is wrong (bad path, unreadable file, ...)

Every message says what is wrong and how to fix it, and never contains an API key:
backends map their SDK's exceptions to this tree in one place each.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pydantic import ValidationError


class MassgenError(Exception):
    """Base class: the message is meant for the user."""


class ConfigError(MassgenError):
    """A team configuration is invalid. Raised before any model is called."""


class MissingKeyError(ConfigError):
    """A backend needs an API key that is not set."""

    def __init__(self, provider: str, env_vars: tuple[str, ...], where: str = "") -> None:
        self.provider = provider
        self.env_vars = env_vars
        names = " or ".join(env_vars)
        prefix = f"{where}: " if where else ""
        super().__init__(
            f"{prefix}no API key for {provider}: set {names} in the environment "
            "(or in a .env file in the working directory), or give backend.api_key in the "
            "team file"
        )


class BackendError(MassgenError):
    """A provider call failed."""

    def __init__(
        self, message: str, *, provider: str = "", model: str = "", status: int | None = None
    ) -> None:
        self.provider = provider
        self.model = model
        self.status = status
        super().__init__(message)


class PermanentBackendError(BackendError):
    """Retrying will not help: bad key, unknown model, rejected request."""


class TransientBackendError(BackendError):
    """The provider kept failing (rate limit, server error, timeout) after all retries."""


class RunNotFoundError(MassgenError):
    """No run with that id exists in the state directory."""


class InputError(MassgenError):
    """A tool or CLI argument is invalid."""


def format_validation_error(err: ValidationError, where: str) -> str:
    """`team.yaml: agents[1].backend.type: 'opnai' is not a known backend; did you mean ...`"""
    lines = []
    for e in err.errors(include_url=False):
        path = ""
        for part in e["loc"]:
            if isinstance(part, int):
                path += f"[{part}]"
            elif str(part).startswith(("function-", "union[", "list[", "dict[")):
                continue  # pydantic's internal union/validator markers mean nothing to users
            else:
                path += f".{part}" if path else str(part)
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "missing":
            msg = "this field is required"
        elif e["type"] == "extra_forbidden":
            msg = "unknown field"
        lines.append(f"{where}: {path}: {msg}" if path else f"{where}: {msg}")
    # A union reports the same failure once per member; show each line once.
    return "\n".join(dict.fromkeys(lines))
