"""Running an API agent's shell command in an OS sandbox (bubblewrap), never outside one.

MassGen's ``enable_mcp_command_line`` gives an agent a shell in its workspace. Here every
command runs under ``bwrap`` (Debian's ``bubblewrap``):

- the file system is the system's programs and libraries read-only (``/usr``, ``/bin``,
  ``/lib*``, ``/sbin``, a few files of ``/etc``), a fresh ``/tmp``, and the workspace, the
  only place it may write; HOME is the workspace, so ``~/.ssh`` and the user's files are not
  there at all;
- no network (a namespace of its own) unless the team file allows it
  (``command_line_network: true``);
- its own PID namespace, a new session, no environment but PATH/HOME/LANG, killed with the
  server (``--die-with-parent``);
- a time limit and an output limit per command.

Found working here as root, in a container: plain ``bwrap`` (no ``--unshare-user``) with
``--unshare-all``; see the tests. Without ``bwrap`` the tool is refused with how to get it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio

INSTALL_HINT = ("command-line execution runs every command in an OS sandbox, and bubblewrap "
                "was not found: install it (Debian/Ubuntu: `apt-get install bubblewrap`, "
                "Fedora: `dnf install bubblewrap`), or remove enable_mcp_command_line; "
                "massgen-mcp never runs an agent's commands outside a sandbox")
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/opt")
# What programs need from /etc (names, certificates, the dynamic linker, Python's config);
# not the rest (shadow, ssh keys, the machine's secrets).
_ETC = ("/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
        "/etc/ssl", "/etc/ca-certificates", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
        "/etc/hosts", "/etc/resolv.conf", "/etc/localtime", "/etc/mime.types", "/etc/python3",
        "/etc/python3.11", "/etc/python3.12", "/etc/python3.13")
PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"


@dataclass(frozen=True)
class SandboxPolicy:
    """What one agent's commands may do (from its team file)."""

    network: bool = False
    timeout: float = 60.0
    max_output: int = 20_000  # characters of stdout+stderr kept (the rest is cut, and said)


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None  # None: stopped at the time limit
    output: str
    truncated: bool

    def text(self, policy: SandboxPolicy) -> str:
        head = (f"stopped after {policy.timeout:g}s (time limit)" if self.exit_code is None
                else f"exit code {self.exit_code}")
        cut = f"\n[output cut at {policy.max_output} characters]" if self.truncated else ""
        return f"{head}\n{self.output}{cut}"


def find_bwrap() -> str | None:
    return shutil.which("bwrap")


def bwrap_argv(bwrap: str, workspace: Path, command: str, policy: SandboxPolicy) -> list[str]:
    """The bwrap command line that runs `command` with `sh -c` inside `workspace`."""
    ws = str(workspace.resolve())
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    if policy.network:
        argv.append("--share-net")
    for d in _SYSTEM_DIRS:
        argv += ["--ro-bind-try", d, d]
    for f in _ETC:
        argv += ["--ro-bind-try", f, f]
    # The interpreter massgen-mcp runs on (a venv outside /usr), read-only, so `python` works.
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):
        if not prefix.startswith(_SYSTEM_DIRS):
            argv += ["--ro-bind-try", prefix, prefix]
    venv_bin = str(Path(sys.prefix) / "bin")
    argv += ["--bind", ws, ws, "--chdir", ws, "--clearenv",
             "--setenv", "PATH", f"{venv_bin}:{PATH}", "--setenv", "HOME", ws,
             "--setenv", "LANG", "C.UTF-8", "--setenv", "TMPDIR", "/tmp",
             "/bin/sh", "-c", command]
    return argv


async def run_sandboxed(command: str, workspace: Path, policy: SandboxPolicy) -> CommandResult:
    """Run `command` in the sandbox; raises RuntimeError(INSTALL_HINT) without bubblewrap."""
    bwrap = find_bwrap()
    if bwrap is None:
        raise RuntimeError(INSTALL_HINT)
    workspace.mkdir(parents=True, exist_ok=True)
    proc = await anyio.open_process(
        bwrap_argv(bwrap, workspace, command, policy), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    chunks: list[bytes] = []
    size = 0
    limit = policy.max_output * 4  # bytes; characters are counted after decoding
    code: int | None = None
    try:
        with anyio.move_on_after(policy.timeout):
            assert proc.stdout is not None
            async for chunk in proc.stdout:
                if size < limit:
                    chunks.append(chunk[:limit - size])
                size += len(chunk)
            code = await proc.wait()
    finally:
        with anyio.CancelScope(shield=True):
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
            await proc.aclose()
    text = b"".join(chunks).decode("utf-8", errors="replace")
    truncated = size > limit or len(text) > policy.max_output
    return CommandResult(code, text[:policy.max_output], truncated)
