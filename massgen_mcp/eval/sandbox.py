"""Run untrusted code (a model's completion, a checker) in an OS sandbox, never in-process.

Linux only, through bubblewrap (`bwrap`, Debian package `bubblewrap`): new namespaces with no
network, the system directories and the base Python read-only, no home directories or
project files, a private temporary working directory, and limits on time, memory, processes
and output. With no `bwrap` the run is refused with how to get it: there is no unsandboxed
fallback.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from massgen_mcp.errors import InputError

TIME_LIMIT_S = 10.0
MEMORY_LIMIT_BYTES = 1024 * 1024 * 1024
OUTPUT_LIMIT_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class SandboxRun:
    passed: bool  # exit status 0 within the limits
    returncode: int | None  # None: killed at the time limit
    output: str  # stdout + stderr, clipped


def bwrap_path() -> str:
    from massgen_mcp.tools.sandbox import find_bwrap

    found = find_bwrap()
    if found is None:
        raise InputError("running code needs an OS sandbox and bubblewrap is not installed: "
                         "apt-get install bubblewrap (Debian/Ubuntu)")
    return found


def _limits() -> None:  # runs in the child before exec: inherited by everything inside
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_NPROC, (256, 256))
    resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024 * 1024, 16 * 1024 * 1024))
    os.setsid()


def run_command(argv: list[str], *, stdin: str = "", files: dict[str, str] | None = None,
                time_limit_s: float = TIME_LIMIT_S) -> SandboxRun:
    """Run `argv` in the sandbox with `stdin`; `files` are written into its working dir.

    The mounts are the agents' shell sandbox's (tools/sandbox.py: one policy for what model
    code may see); this adds memory, process and file-size limits and a private workspace."""
    from massgen_mcp.tools.sandbox import SandboxPolicy, bwrap_argv

    with tempfile.TemporaryDirectory(prefix="massgen-sandbox-") as work:
        for name, text in (files or {}).items():
            Path(work, name).write_text(text, encoding="utf-8")
        cmd = bwrap_argv(bwrap_path(), Path(work), shlex.join(argv),
                         SandboxPolicy(network=False, timeout=time_limit_s))
        try:
            proc = subprocess.run(cmd, input=stdin.encode(), capture_output=True,
                                  timeout=time_limit_s, preexec_fn=_limits, check=False)
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"") + (e.stderr or b"")
            return SandboxRun(False, None, _clip(out))
    return SandboxRun(proc.returncode == 0, proc.returncode, _clip(proc.stdout + proc.stderr))


def run_python(program: str, *, time_limit_s: float = TIME_LIMIT_S) -> SandboxRun:
    """Run a Python program (the base interpreter, no site packages) in the sandbox."""
    python = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}"
    return run_command([str(python), "-I", "-S", "program.py"], files={"program.py": program},
                       time_limit_s=time_limit_s)


def _clip(data: bytes) -> str:
    return data[:OUTPUT_LIMIT_BYTES].decode("utf-8", "replace")
