"""Who a run belongs to, and who may see it.

A run belongs to whoever started it: its meta records the owner's name (`owner`). Every
reader that hands runs to a caller (get_run, list_runs, cancel_run, the run resources, MCP
Tasks, the viewer) asks `Principal.may_see`, and treats a run it may not see exactly as a
run that does not exist (`hidden`), so a run id never tells another user anything.

stdio, the command line, the server's own token (`--token` / `MASSGEN_MCP_TOKEN`, or the
token generated for loopback HTTP) and `--no-token` are one user: `LOCAL`, the operator,
who can read the state directory anyway and so sees every run. Users of an `--auth-file`
see their own runs; an admin line sees all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from massgen_mcp.errors import RunNotFoundError
from massgen_mcp.regex import lazy

LOCAL_NAME = "local"
#: What a user's name may be (it is written to run records and shown in lists).
NAME = lazy(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")


@dataclass(frozen=True)
class Principal:
    """A user of the server: a name, and whether it sees every user's runs."""

    name: str
    admin: bool = False

    def may_see(self, owner: str) -> bool:
        return self.admin or owner == self.name


#: stdio, the CLI, the server's own token and --no-token: the operator.
LOCAL = Principal(LOCAL_NAME, admin=True)


def owner_in(meta: dict[str, Any]) -> str:
    """The owner a run's meta records (runs from before owners were recorded: the operator's)."""
    owner = meta.get("owner")
    return owner if isinstance(owner, str) and owner else LOCAL_NAME


def hidden(run_id: str, location: str) -> RunNotFoundError:
    """The error for a run the caller may not see: word for word the one for an unknown id."""
    return RunNotFoundError(f"no run '{run_id}' in {location}; list_runs shows the recent ones")


#: Where the HTTP front door (server/front_door.py) puts the caller in an ASGI scope.
SCOPE_KEY = "massgen.principal"


def in_scope(scope: Any) -> Principal:
    """The caller of an HTTP request (its ASGI scope); none there (stdio, in memory, a
    server without authentication) is the operator."""
    found = scope.get(SCOPE_KEY) if isinstance(scope, dict) else None
    return found if isinstance(found, Principal) else LOCAL
