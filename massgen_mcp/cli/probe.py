"""Start a registered massgen-mcp command the way a client would and ask for `tools/list`.

Only massgen-mcp itself is started: a project's client files are the project's (a cloned
repository may be hostile), so `doctor` never runs an arbitrary program named there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from massgen_mcp.cli.launch import NAME, installed_executable, launch_command, same_program
from massgen_mcp.cli.registrations import Registration

START_TIMEOUT_S = 45.0


@dataclass
class Probe:
    ok: bool
    tools: int = 0
    problem: str = ""
    fix: str = ""


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def _refusal(reg: Registration, program: Path, project: Path) -> str:
    """Why doctor will not start this command ("" when it will)."""
    mine = installed_executable()
    if mine is not None and same_program(program, mine):
        return ""  # the program running doctor right now
    if _inside(program, project):
        return f"{program} lies inside the project; doctor starts only an installed massgen-mcp"
    name = program.name
    if name == NAME:
        return ""
    if name.startswith("python") and reg.args[:2] in (["-m", "massgen_mcp.cli"],
                                                       ["-m", "massgen_mcp"]):
        return ""
    return (f"{reg.command} is not massgen-mcp (doctor starts only massgen-mcp itself; "
            f"start it yourself to check it: {' '.join(reg.argv)})")


def fix_for(reg: Registration) -> str:
    from massgen_mcp.paths import own_command

    again = f"{own_command()} setup --client {reg.client}"
    exe = launch_command()
    return (f"run `{again}` again with the massgen-mcp you want clients to start (it writes "
            f"the command that works from any PATH; here that is {' '.join(exe)})")


async def probe(reg: Registration, project: Path) -> Probe:
    """Start `reg`'s command with the client's environment plus the entry's `env`."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    if reg.url:
        return Probe(ok=False, problem=f"an HTTP registration ({reg.url}); not started here",
                     fix="check it with the client itself")
    if not reg.command:
        return Probe(ok=False, problem="the entry has no command", fix=fix_for(reg))
    env = {**os.environ, **reg.env}
    found = shutil.which(reg.command, path=env.get("PATH"))
    if found is None:
        where = "" if os.path.isabs(reg.command) else " on PATH"
        return Probe(ok=False, problem=f"{reg.command} not found{where}: a client cannot "
                                       "start it", fix=fix_for(reg))
    refusal = _refusal(reg, Path(found), project)
    if refusal:
        return Probe(ok=False, problem=refusal, fix="")
    bare_in_venv = not os.path.isabs(reg.command) and (
        Path(found).parent.parent / "pyvenv.cfg").is_file()
    # `python -m` puts the working directory on sys.path: never the project's for doctor.
    cwd = str(project) if Path(found).name == NAME else tempfile.gettempdir()
    params = StdioServerParameters(command=found, args=reg.args, env=env, cwd=cwd)
    try:
        with anyio.fail_after(START_TIMEOUT_S):
            async with Client(params, mode="legacy") as client:
                tools = (await client.list_tools()).tools
    except TimeoutError:
        return Probe(ok=False, problem=f"started but did not answer tools/list within "
                                       f"{START_TIMEOUT_S:g} s", fix=fix_for(reg))
    except Exception as e:  # whatever the SDK raises for a process that died or spoke junk
        return Probe(ok=False, problem=f"did not start as an MCP server ({type(e).__name__}: "
                                       f"{e})"[:300], fix=fix_for(reg))
    if bare_in_venv:
        return Probe(ok=False, tools=len(tools),
                     problem=f"`{reg.command}` answers here only because {Path(found).parent} "
                             "(a virtual environment) is on this shell's PATH; a client "
                             "started elsewhere will not find it", fix=fix_for(reg))
    return Probe(ok=True, tools=len(tools))
