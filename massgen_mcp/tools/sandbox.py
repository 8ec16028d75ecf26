"""Running an API agent's shell command in an OS sandbox (bubblewrap), never outside one.

MassGen's ``enable_mcp_command_line`` gives an agent a shell in its workspace. Here every
command runs under ``bwrap`` (Debian's ``bubblewrap``):

- the file system is the system's programs and libraries read-only (``/usr``, ``/bin``,
  ``/lib*``, ``/sbin``, a few files of ``/etc``), a fresh size-limited ``/tmp``, and the
  workspace, the only place it may write; HOME is the workspace, so ``~/.ssh`` and the user's
  files are not there at all;
- no network (a namespace of its own) unless the operator allows it (see ``shell.py``);
- every namespace of its own (user, PID, IPC, UTS, cgroup), a new session, killed with the
  server (``--die-with-parent``);
- bubblewrap itself starts with an EMPTY environment: ``--clearenv`` only clears the
  command's, and bubblewrap's first process (PID 1 inside, whose ``/proc/1/environ`` the
  command can read) keeps whatever it was started with;
- the command runs as uid/gid 65534 ("nobody") inside, with no capabilities, and when the
  server is root bubblewrap itself is started as 65534 too: mapped to root outside, the
  kernel would exempt it from the process limit and the workspace's permissions would mean
  nothing;
- a seccomp filter (``seccomp.py``); ``/proc/sys`` and the other kernel interfaces of
  ``/proc`` are read-only (bubblewrap's ``--proc``), and without capabilities nothing can
  remount them;
- limits on memory, processes, file size, open files and ``/tmp`` (``prlimit`` inside the
  sandbox, so they are counted in its own user namespace), a time limit and an output limit.

Without ``bwrap`` (or libseccomp, or ``prlimit``) the tool is refused with how to get it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
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
NOBODY = 65534  # the uid and gid sandboxed code runs as
_MIB = 1024 * 1024
# What setpriv needs, as root, to become nobody and empty the bounding set; gone after it.
_SETPRIV_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")


@dataclass(frozen=True)
class Limits:
    """Resource limits inside the sandbox; they bind root too (the code is never root)."""

    memory_bytes: int = 4096 * _MIB  # address space of each process
    processes: int = 256  # processes and threads of the sandbox's user
    file_bytes: int = 1024 * _MIB  # the largest file a process may write
    open_files: int = 1024
    tmp_bytes: int = 512 * _MIB  # the size of the sandbox's /tmp (memory)

    def prlimit(self) -> list[str]:
        return [f"--as={self.memory_bytes}", f"--nproc={self.processes}",
                f"--fsize={self.file_bytes}", f"--nofile={self.open_files}", "--core=0"]


@dataclass(frozen=True)
class SandboxPolicy:
    """What one agent's commands may do (from its team file)."""

    network: bool = False
    timeout: float = 60.0
    max_output: int = 20_000  # characters of stdout+stderr kept (the rest is cut, and said)
    limits: Limits = field(default_factory=Limits)


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


def missing() -> str | None:
    """Why commands cannot run in the sandbox here (None: they can)."""
    if find_bwrap() is None:
        return INSTALL_HINT
    for tool in ("prlimit", "setpriv"):
        if shutil.which(tool) is None:
            return (f"the sandbox sets its limits and user with {tool}, which was not found: "
                    "install util-linux")
    from massgen_mcp.tools.seccomp import filter_program

    try:
        filter_program()
    except RuntimeError as e:
        return str(e)
    return None


def _prefixes() -> list[str]:
    """The interpreter massgen-mcp runs on when it is outside the system directories (a venv,
    pyenv's under /root): bound read-only so `python` works inside."""
    return [p for p in dict.fromkeys((sys.prefix, sys.base_prefix))
            if not p.startswith(_SYSTEM_DIRS) and os.path.isdir(p)]


def _reachable(path: str) -> list[str]:
    """`--dir`s that make the directories above a bound path walkable by nobody (bubblewrap
    copies a private parent's mode, 0700 for /root or pytest's tmp)."""
    out: list[str] = []
    for parent in reversed(Path(path).parents):
        if str(parent) not in ("/", "/tmp"):
            out += ["--perms", "0755", "--dir", str(parent)]
    return out


def bwrap_argv(bwrap: str, workspace: Path, command: str, policy: SandboxPolicy, *,
               seccomp_fd: int | None = None, as_root: bool | None = None) -> list[str]:
    """The bwrap command line that runs `command` with `sh -c` inside `workspace`.

    As root, bubblewrap builds the sandbox without a user namespace and `setpriv` turns the
    command into nobody (a real uid the kernel counts processes for; a user namespace would
    map nobody back to root outside, exempt from the process limit and the owner of every
    root file). Otherwise a user namespace gives nobody inside and no capabilities."""
    root = os.geteuid() == 0 if as_root is None else as_root
    ws = str(workspace.resolve())
    if root:
        argv = [bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                "--unshare-cgroup-try", "--cap-drop", "ALL",
                *(x for cap in _SETPRIV_CAPS for x in ("--cap-add", cap))]
    else:
        argv = [bwrap, "--unshare-all", "--unshare-user", "--uid", str(NOBODY),
                "--gid", str(NOBODY), "--cap-drop", "ALL"]
    argv += ["--die-with-parent", "--new-session", "--proc", "/proc", "--dev", "/dev",
             "--size", str(policy.limits.tmp_bytes), "--perms", "1777", "--tmpfs", "/tmp"]
    if policy.network:
        argv.append("--share-net")
    for d in _SYSTEM_DIRS:
        argv += ["--ro-bind-try", d, d]
    for f in _ETC:
        argv += ["--ro-bind-try", f, f]
    for prefix in _prefixes():
        argv += [*_reachable(prefix), "--ro-bind-try", prefix, prefix]
    venv_bin = str(Path(sys.prefix) / "bin")
    argv += [*_reachable(ws), "--bind", ws, ws]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    # As root the workspace is nobody's and bubblewrap has no CAP_DAC_OVERRIDE: the command
    # enters it once it is nobody (`env -C`).
    argv += [*(() if root else ("--chdir", ws)), "--clearenv",
             "--setenv", "PATH", f"{venv_bin}:{PATH}", "--setenv", "HOME", ws,
             "--setenv", "LANG", "C.UTF-8", "--setenv", "TMPDIR", "/tmp"]
    if root:
        argv += [shutil.which("setpriv") or "/usr/bin/setpriv", "--reuid", str(NOBODY),
                 "--regid", str(NOBODY), "--clear-groups", "--inh-caps=-all",
                 "--bounding-set=-all", "--no-new-privs", "/usr/bin/env", "-C", ws]
    argv += [shutil.which("prlimit") or "/usr/bin/prlimit", *policy.limits.prlimit(), "--",
             "/bin/sh", "-c", command]
    return argv


@dataclass(frozen=True)
class Launch:
    """How to start one sandboxed command: its argv and the process options it needs."""

    argv: list[str]
    pass_fds: tuple[int, ...]
    env: dict[str, str] = field(default_factory=dict)  # bubblewrap's own: empty


@contextlib.contextmanager
def launch(workspace: Path, command: str, policy: SandboxPolicy) -> Iterator[Launch]:
    """The launch of `command` in `workspace` (RuntimeError naming what is missing)."""
    why = missing()
    if why is not None:
        raise RuntimeError(why)
    from massgen_mcp.tools.seccomp import filter_fd

    bwrap = find_bwrap()
    assert bwrap is not None
    workspace.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        hand_over(workspace)
    sc_fd = filter_fd()
    try:
        yield Launch(bwrap_argv(bwrap, workspace, command, policy, seccomp_fd=sc_fd), (sc_fd,))
    finally:
        os.close(sc_fd)


def hand_over(workspace: Path) -> None:
    """Make the workspace nobody's (the server is root): the sandbox writes it as nobody.
    lchown: a link the code left there is changed itself, never what it points to."""
    os.lchown(workspace, NOBODY, NOBODY)
    for top, dirs, files in os.walk(workspace):
        for name in (*dirs, *files):
            with contextlib.suppress(FileNotFoundError):
                os.lchown(os.path.join(top, name), NOBODY, NOBODY)


async def run_sandboxed(command: str, workspace: Path, policy: SandboxPolicy) -> CommandResult:
    """Run `command` in the sandbox; raises RuntimeError naming what is missing (bubblewrap,
    libseccomp, prlimit)."""
    with launch(workspace, command, policy) as how:
        proc = await anyio.open_process(
            how.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True, env=how.env,
            pass_fds=how.pass_fds)
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
