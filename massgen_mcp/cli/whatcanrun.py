"""What can run here right now, as commands to paste: for `run` without a team and for
`doctor`'s verdict.

In this order: the demo (always: no key, no network), a local model server that answers,
the coding-agent CLIs the user is logged in to (`--team clis`), then which key to set. A
team whose keys are all missing is never suggested; every line is a command that works when
pasted (`own_command()`: the invoked path when `massgen-mcp` is not on PATH).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from massgen_mcp.config.choose import KEY_VARIABLES
from massgen_mcp.paths import own_command

EXAMPLE_TASK = "What is the capital of Australia?"


@dataclass(frozen=True)
class Option:
    command: str  # to paste
    why: str


def options(task: str, local: Mapping[str, list[str]], logged_in: list[str],
            me: str | None = None, verb: str = "run") -> list[Option]:
    """The commands that can run now, best first (the demo always)."""
    me = me or own_command()
    run = f"{me} {verb} {shlex.quote(task)}"
    found = [Option(f"{run} --team demo",
                    "a scripted demo of a whole run: no key, no network, no model asked")]
    for name in ("ollama", "lmstudio", "vllm", "sglang"):
        models = local.get(name) or []
        if models:
            picks = ",".join(f"{name}/{m}" for m in models[:3])
            found.append(Option(f"{run} --models {shlex.quote(picks)}",
                                f"the {name} server answering on this machine"))
            break
    if logged_in:
        found.append(Option(f"{run} --team clis", "the coding-agent CLIs you are logged in "
                                                  f"to ({', '.join(logged_in)}); each turn "
                                                  "uses your subscription"))
    return found


def render(found: list[Option], *, keys_missing: bool, indent: str = "  ") -> str:
    lines = [f"{indent}{o.command}\n{indent}    {o.why}" for o in found]
    if keys_missing:
        lines.append(f"{indent}For answers from hosted models, set a provider key in the "
                     f"environment or a .env file here: {KEY_VARIABLES}; then "
                     f"`{own_command()} run \"...\"` picks a team by itself.")
    return "\n".join(lines)


async def gather(env: Mapping[str, str]) -> tuple[dict[str, list[str]], list[str]]:
    """Local servers that answer (with their models), and the coding-agent CLIs that are
    installed and logged in (guessed from login files and keys: no CLI is started)."""
    import anyio

    from massgen_mcp.backends.cli.availability import cli_statuses
    from massgen_mcp.config.env import Environment
    from massgen_mcp.config.local import local_models

    local: dict[str, list[str]] = {}
    ready: list[str] = []

    async def servers() -> None:
        local.update(await local_models(env if isinstance(env, Environment)
                                        else Environment(dict(env))))

    async def clis() -> None:
        ready.extend(s.type for s in await cli_statuses(env) if s.usable and s.login_found)

    async with anyio.create_task_group() as tg:
        tg.start_soon(servers)
        tg.start_soon(clis)
    return local, ready


async def what_can_run(env: Mapping[str, str], task: str = EXAMPLE_TASK,
                       verb: str = "run") -> str:
    """The error `run` (`plan`) gives when no team was named and none can be built from
    keys."""
    local, ready = await gather(env)
    return ("no team was named and no provider key is set. What can run now:\n"
            + render(options(task, local, ready, verb=verb), keys_missing=True))
