"""Which protection holds in a project, in words a user understands (`doctor` prints it).

Two layers guard a Claude Code session. The OS sandbox (Claude Code's own: bubblewrap and
socat on Linux, Seatbelt on macOS) is the boundary: what a Bash call can touch at all, by
any program or route, including the guard's key. The PreToolUse hook is the policy inside
it: it reads each call and holds the risky ones to an approved checkpoint plan; alone it is
advisory, because a parser can always be surprised by a form it does not know.

`protection(project)` says which of the two are in force: "boundary: OS sandbox + hook",
"advisory: hook only, because ..." with the command that fixes it, and so on.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Protection:
    level: str  # "boundary" | "advisory" | "none"
    summary: str  # one line: "boundary: OS sandbox + hook"
    fix: str | None = None  # the command that makes it a boundary, when it is not one

    @property
    def ok(self) -> bool:
        return self.level == "boundary"


def _settings(project: Path) -> list[dict[str, Any]]:
    """Claude Code's settings files that apply in `project`, most specific first."""
    out = []
    for path in (project / ".claude" / "settings.local.json",
                 project / ".claude" / "settings.json", Path.home() / ".claude" / "settings.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out.append(data)
    return out


def _sandbox_on(settings: list[dict[str, Any]]) -> bool:
    for data in settings:  # the most specific file that says anything decides
        block = data.get("sandbox")
        if isinstance(block, dict) and "enabled" in block:
            return block.get("enabled") is True
    return False


def _hook_on(settings: list[dict[str, Any]]) -> bool:
    for data in settings:
        entries = (data.get("hooks") or {}).get("PreToolUse") if isinstance(
            data.get("hooks"), dict) else None
        for entry in entries if isinstance(entries, list) else []:
            hooks = entry.get("hooks") if isinstance(entry, dict) else None
            if any(isinstance(h, dict) and "hook pre-tool-use" in str(h.get("command", ""))
                   for h in hooks or []):
                return True
    return False


def _denied(settings: list[dict[str, Any]], key: str) -> list[str]:
    """Which of read/write the sandbox settings leave open on the guard's key directory."""
    def covers(entry: Any) -> bool:
        if not isinstance(entry, str):
            return False
        root = Path(entry).expanduser().resolve()
        return Path(key) == root or Path(key).is_relative_to(root)

    open_ = []
    for kind in ("denyRead", "denyWrite"):
        entries = [e for data in settings if isinstance(data.get("sandbox"), dict)
                   for e in ((data["sandbox"].get("filesystem") or {}).get(kind) or [])]
        if not any(covers(e) for e in entries):
            open_.append(kind[4:].lower())
    return open_


def _key_dirs(project: Path) -> list[str]:
    """The guard's key directory as this shell and the registered server see it."""
    from massgen_mcp.hook.active import KEY_FILE_ENV, key_path

    found = [key_path()]
    try:
        server = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))
        explicit = server["mcpServers"]["massgen"]["env"][KEY_FILE_ENV]
        if isinstance(explicit, str) and explicit:
            found.append(explicit)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return list(dict.fromkeys(str(Path(k).expanduser().resolve().parent) for k in found))


def os_sandbox_problem() -> tuple[str, str] | None:
    """(why Claude Code's sandbox cannot run here, the fix), or None when it can."""
    if sys.platform == "darwin":
        return None if shutil.which("sandbox-exec") else (
            "sandbox-exec is missing", "reinstall macOS's command line tools")
    if not sys.platform.startswith("linux"):
        return f"Claude Code has no OS sandbox on {sys.platform}", "use Linux or macOS (or WSL2)"
    missing = [name for name, exe in (("bubblewrap", "bwrap"), ("socat", "socat"))
               if not shutil.which(exe)]
    if missing:
        return (f"{'/'.join(missing)} {'is' if len(missing) == 1 else 'are'} missing",
                f"sudo apt-get install {' '.join(missing)} (or your distribution's packages)")
    bwrap = shutil.which("bwrap") or "bwrap"
    try:  # installed is not enough: some kernels and containers forbid user namespaces
        proc = subprocess.run([bwrap, "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev",
                               "true"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap does not start ({e})", "check that bwrap runs: bwrap --help"
    if proc.returncode != 0:
        why = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no reason given"]
        return (f"bubblewrap cannot create namespaces here ({why[0]})",
                "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1"
                " or the AppArmor bwrap profile), or run outside this container")
    return None


def protection(project: Path) -> Protection:
    settings = _settings(project)
    hook, sandbox = _hook_on(settings), _sandbox_on(settings)
    setup = "massgen-mcp setup --hooks"
    if not sandbox:
        if hook:
            return Protection("advisory", "advisory: hook only, because .claude/settings.json "
                              "does not turn on Claude Code's OS sandbox (Bash is unconfined)",
                              setup)
        return Protection("none", "none: no hook and no OS sandbox", setup)
    problem = os_sandbox_problem()
    if problem:
        why, fix = problem
        # failIfUnavailable (what setup writes) then stops Bash outright: safe, but stuck.
        return Protection("advisory", f"advisory: {'hook' if hook else 'nothing'} only, "
                          f"because {why}; the settings require the sandbox, so Claude Code "
                          "refuses to run Bash until it can start", fix)
    for key_dir in _key_dirs(project):
        if gaps := _denied(settings, key_dir):
            return Protection("advisory", f"advisory: the sandbox is on but does not deny "
                              f"{' or '.join(gaps)} of the guard's key directory {key_dir}, "
                              "so a Bash call could forge an approval", setup)
    if not hook:
        return Protection("boundary", "boundary: OS sandbox only (no hook: risky calls are "
                          "not held to a checkpoint plan)", setup)
    return Protection("boundary", "boundary: OS sandbox + hook")
