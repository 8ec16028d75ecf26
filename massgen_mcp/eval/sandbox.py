"""Run untrusted code (a model's completion, a checker) in an OS sandbox, never in-process.

Linux only, through bubblewrap (`bwrap`, Debian package `bubblewrap`): new namespaces with no
network, the system directories and the base Python read-only, no home directories or
project files, a private temporary working directory, and limits on time, memory, processes
and output. With no `bwrap` the run is refused with how to get it: there is no unsandboxed
fallback.
"""

from __future__ import annotations

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
PROCESS_LIMIT = 64
FILE_LIMIT_BYTES = 16 * 1024 * 1024


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


def run_command(argv: list[str], *, stdin: str = "", files: dict[str, str] | None = None,
                time_limit_s: float = TIME_LIMIT_S) -> SandboxRun:
    """Run `argv` in the sandbox with `stdin`; `files` are written into its working dir.

    The agents' shell sandbox (tools/sandbox.py: one policy for what model code may see and
    the limits it runs under), with tighter limits and a private workspace."""
    from massgen_mcp.tools.sandbox import Limits, SandboxPolicy, launch

    bwrap_path()
    policy = SandboxPolicy(network=False, timeout=time_limit_s, limits=Limits(
        memory_bytes=MEMORY_LIMIT_BYTES, processes=PROCESS_LIMIT, file_bytes=FILE_LIMIT_BYTES,
        tmp_bytes=FILE_LIMIT_BYTES, open_files=256))
    with tempfile.TemporaryDirectory(prefix="massgen-sandbox-") as work:
        for name, text in (files or {}).items():
            Path(work, name).write_text(text, encoding="utf-8")
        try:
            with launch(Path(work), shlex.join(argv), policy) as how:
                proc = subprocess.run(
                    how.argv, input=stdin.encode(), capture_output=True, timeout=time_limit_s,
                    env=how.env, pass_fds=how.pass_fds, start_new_session=True, check=False)
        except RuntimeError as e:
            raise InputError(f"running code needs an OS sandbox: {e}") from e
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
