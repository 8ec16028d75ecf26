"""Running a coding-agent CLI as a child process that never outlives the run.

Each CLI runs in its own process group (its MCP servers and shell tools are its children),
with stdin on /dev/null (every CLI here waits on an open stdin) and, on Linux, a parent-death
signal, so a killed server takes its CLIs with it. Stopping kills the whole group.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

KILL_GRACE_SECONDS = 2.0
# Variables a CLI needs from the server's environment to run at all; everything else
# (and every key) is given explicitly by the backend.
PASS_THROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "TZ", "USER", "LOGNAME",
                "SHELL", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "HTTPS_PROXY",
                "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy")


def _die_with_parent() -> None:
    """In the child, before exec: get SIGKILL when the server process dies (Linux only)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def base_env(env: Mapping[str, str]) -> dict[str, str]:
    """The few server variables a CLI needs (PATH, locale, proxies, CA files)."""
    return {k: env[k] for k in PASS_THROUGH if k in env}


def find_command(command: str | None, default: str, env: Mapping[str, str]) -> str | None:
    """The CLI's executable: an explicit `command` (path or name on PATH), else `default`."""
    name = command or default
    if os.sep in name:
        path = Path(name).expanduser()
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(name, path=env.get("PATH") or os.defpath)


class CliProcess:
    """One CLI invocation: stdout read as JSON lines, stderr to a file, killed as a group."""

    def __init__(self, proc: asyncio.subprocess.Process, stderr_path: Path) -> None:
        self._proc = proc
        self.stderr_path = stderr_path

    @classmethod
    async def start(cls, argv: list[str], *, cwd: Path, env: dict[str, str],
                    stderr_path: Path, stdin_path: Path | None = None,
                    stdin_pipe: bool = False) -> CliProcess:
        """Start it; stdin is `stdin_path` (a long prompt) or /dev/null, or a pipe for a CLI
        that reads its turns as JSON lines (`stdin_pipe`; see `send`)."""
        stderr_path.parent.mkdir(parents=True, exist_ok=True)
        with open(stderr_path, "ab") as err, open(stdin_path or os.devnull, "rb") as stdin:
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=str(cwd), env=env,
                stdin=asyncio.subprocess.PIPE if stdin_pipe else stdin,
                stdout=asyncio.subprocess.PIPE, stderr=err, start_new_session=True,
                preexec_fn=_die_with_parent, limit=16 * 1024 * 1024)
        return cls(proc, stderr_path)

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """The JSON objects the CLI prints, one per line (other lines are skipped)."""
        assert self._proc.stdout is not None
        async for raw in self._proc.stdout:
            line = raw.decode("utf-8", errors="replace").strip()
            if not line.startswith("{"):
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                yield obj

    async def wait(self) -> int:
        return await self._proc.wait()

    async def send(self, obj: dict[str, Any]) -> None:
        """Write one JSON line to the CLI's stdin (started with `stdin_pipe`); OSError when it
        is gone."""
        if self._proc.stdin is None:
            raise OSError("stdin is not a pipe")
        self._proc.stdin.write((json.dumps(obj) + "\n").encode("utf-8"))
        try:
            await self._proc.stdin.drain()
        except (ConnectionError, RuntimeError) as e:
            raise OSError(str(e)) from None

    def stderr_tail(self, limit: int = 600) -> str:
        try:
            data = self.stderr_path.read_bytes()[-limit:]
        except OSError:
            return ""
        return data.decode("utf-8", errors="replace").strip()

    async def kill(self) -> None:
        """Stop the CLI and everything it started; safe to call twice. Callers shield it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGTERM)
        if self._proc.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._proc.wait(), KILL_GRACE_SECONDS)
        # The group may outlive its leader (a shell tool still running): kill it regardless.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        if self._proc.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._proc.wait(), KILL_GRACE_SECONDS)


    def kill_now(self) -> None:
        """SIGKILL the whole group without waiting (the server is exiting)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)


async def run_cli(argv: list[str], env: Mapping[str, str],
                  timeout: float = 15.0) -> tuple[int, str]:
    """Run a short CLI command (``--version``, ``auth status``): exit code and output
    (stdout and stderr together); raises OSError / TimeoutError. Its group is killed on
    timeout or cancellation."""
    proc = await asyncio.create_subprocess_exec(
        *argv, env=dict(env), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        raise
    return proc.returncode or 0, out.decode("utf-8", errors="replace").strip()


async def cli_version(executable: str, env: Mapping[str, str], timeout: float = 15.0) -> str:
    """What `CLI --version` prints (first line), or raises OSError / TimeoutError."""
    _, text = await run_cli([executable, "--version"],
                            base_env(env) | {"HOME": env.get("HOME", "/tmp")}, timeout)
    return text.splitlines()[0] if text else ""
