"""Commands that hand a command to something that runs it later or elsewhere.

What a scheduler runs is out of reach of every later hook: `at` and `batch`, `systemd-run`,
`launchctl load/submit/kickstart`, Windows' `schtasks /create`, `anacron` running an
anacrontab, `systemctl`/`loginctl` installing or starting a service. They are gated whatever
they are given. (`crontab` is judged in `cli_rules.py`.) Standard library only.
"""

from __future__ import annotations

from massgen_mcp.hook.command import SimpleCommand

_AT = frozenset({"at", "batch"})
_AT_INERT = frozenset({"-l", "-c", "-r", "-d"})  # list, print, remove: nothing is queued
_LAUNCHCTL_RUNS = frozenset({"load", "bootstrap", "submit", "enable", "kickstart", "asuser"})
_SERVICE_STARTS = frozenset({"link", "enable", "enable-linger", "preset", "edit", "reenable",
                             "add-wants", "add-requires", "start", "restart", "try-restart",
                             "reload-or-restart"})
_SCHTASKS_RUNS = frozenset({"/create", "-create", "/change", "-change", "/run", "-run"})


def schedules(cmd: SimpleCommand) -> list[str]:
    """Why `cmd` has a command run later or as a service (empty: it does not)."""
    program, args = cmd.program, cmd.args
    if program in _AT and not any(a in _AT_INERT for a in args):
        return [f"{program} schedules a command to run later, outside this hook"]
    if program == "systemd-run":
        return ["systemd-run starts a command as a service, outside this hook"]
    if program == "launchctl" and args[:1] and args[0] in _LAUNCHCTL_RUNS:
        return [f"launchctl {args[0]} schedules a job, outside this hook"]
    if program.removesuffix(".exe").lower() == "schtasks" and any(
            a.lower() in _SCHTASKS_RUNS for a in args):
        return ["schtasks registers or starts a scheduled task, outside this hook"]
    if program in ("systemctl", "loginctl") and any(a in _SERVICE_STARTS for a in args):
        return [f"{program} installs or starts a service, which runs outside this hook"]
    if program == "anacron" and not any(a in ("-T", "-V", "-h") for a in args):
        return ["anacron runs the jobs of an anacrontab, outside this hook"]
    return []
