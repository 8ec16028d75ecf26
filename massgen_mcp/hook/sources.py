"""Code from a source the hook cannot read, by the shape of the command (issue 29, round 5).

Each function gives the reasons a simple command runs code the hook never sees, or
reaches a place it guards by a side door:

- a build file, init script or makefile given as a process substitution or `/dev/stdin`
  (`make -f <(curl ..)`, `gradle -I <(..)`, `ninja -f <(printf ..)`): the build runs
  whatever arrives;
- a script read from a descriptor other than stdin or a socket (`bash /dev/fd/5` after
  `exec 5< <(curl ..)`, `source /proc/self/fd/4`, `sh <&3`);
- a URL given to a runner as the program (`deno run URL`, `uv run URL`, `python URL`);
- a command held by an option or variable the program runs: a pager (`git grep -O'cmd'`),
  the trace prompt (`PS4='$(..)' bash -x`), Maven's exec plugin (`-Dexec.executable=sh`),
  `ed`'s `!` commands fed on stdin;
- plain-text protocol commands piped to a cache or database port (`printf flush_all | nc
  localhost 11211`);
- a secret env file loaded into a container that prints its environment (`docker run
  --env-file .env img env`);
- the docker engine of another host (`DOCKER_HOST=ssh://prod docker compose up`).

Standard library only.
"""

from __future__ import annotations

import re

from massgen_mcp.hook.command import SimpleCommand, wordset
from massgen_mcp.hook.scope import secret_kind
from massgen_mcp.regex import lazy

#: Programs that read a build description (a file of commands) they then run.
_BUILD_TOOLS = wordset("make gmake bmake ninja samu gradle gradlew cmake mvn mvnw rake just "
                       "task meson scons ant sbt bazel bazelisk xmake premake5 invoke bb")
_STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
#: `runner sub URL`: the subcommand runs its first operand as a program.
_URL_RUNNERS = {"deno": "run", "bun": "run", "uv": "run", "pipx": "run", "uvx": "",
                "npx": "", "bunx": "", "pnpm": "dlx", "ts-node": "", "tsx": ""}
_INTERPRETER = lazy(r"^(python|pypy)[0-9.]*$|^(node|nodejs|perl|ruby|php|lua|Rscript"
                          r"|julia|bash|sh|zsh|dash|ksh|mksh|ash|fish|bun|deno|tsx|ts-node)$")
#: A descriptor other than stdin, or a socket: what it holds was opened elsewhere in the line
#: (`exec 5< <(curl ..)`, `exec 3<>/dev/tcp/h/80`), out of the hook's sight.
_DESCRIPTOR = lazy(r"^/dev/(fd/(?![012]$)|tcp/|udp/)|^/proc/[^/]+/fd/(?![012]$)")
_URL = lazy(r"(?i)^(https?|ftp)://")
_PAGER_OPTIONS = ("--open-files-in-pager", "-O")
#: Ports of caches and databases that take plain-text commands (memcached, redis, ...).
_DATA_PORTS = frozenset({"11211", "6379", "6380", "26379", "7000", "9200", "9300", "5984",
                         "8086", "2181", "8529"})
_NETCAT = wordset("nc ncat netcat telnet socat")
_LOCAL_ENGINE = lazy(r"^(unix://|npipe://|tcp://(localhost|127\.0\.0\.1|\[::1\])[:/])")


def hidden_sources(cmd: SimpleCommand) -> list[str]:
    """Why `cmd` runs code from a source the hook cannot read (empty: none found)."""
    program, args = cmd.program, cmd.args
    out: list[str] = []
    if program in _BUILD_TOOLS and (any(a in _STDIN_FILES for a in args) or any(
            kind == "in" for w in cmd.words[1:] for kind, _ in w.subs)):
        out.append(f"{program} reads its build file from a process substitution or stdin "
                   "(code from a source the hook cannot read)")
    runner = bool(_INTERPRETER.match(program)) or program in ("source", ".")
    if runner and (any(_DESCRIPTOR.match(a) for a in args) or any(
            op in ("<&", "<") and ((t.isdigit() and int(t) > 2) or _DESCRIPTOR.match(t))
            for op, t in cmd.redirects)):
        out.append(f"{program} runs code read from a file descriptor or socket (a process "
                   "substitution or a download opened elsewhere in the line)")
    if (url := _runs_url(cmd)) is not None:
        out.append(f"{program} runs the program at {url[:80]}, which the hook cannot see")
    if program == "git" and (held := [a for a in args if a.split("=", 1)[0] in _PAGER_OPTIONS
                                      or (a.startswith("-O") and len(a) > 2)]):
        out.append(f"git is given a command to open its results with ({held[0][:60]})")
    if re.search(r"\$\(|`", cmd.env.get("PS4", "")):
        out.append("PS4 holds a command substitution the shell runs on every traced line")
    if program in ("mvn", "mvnw") and any(re.match(r"-Dexec\.(executable|args|mainClass)=", a)
                                          or "exec-maven-plugin" in a for a in args):
        out.append("mvn's exec plugin runs a program given on its command line")
    if program in ("ed", "ex") and (cmd.pipe_stage > 0 or re.search(
            r"(?m)^\s*!", cmd.stdin_code or "")):
        out.append(f"{program} reads commands on stdin, and `!` in them runs a shell command")
    if program in _NETCAT and (cmd.pipe_stage > 0 or cmd.stdin_code is not None) and any(
            a.rsplit(":", 1)[-1] in _DATA_PORTS for a in args):
        out.append(f"{program} sends commands to a cache or database port (they may flush "
                   "or overwrite its data)")
    env_files = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--env-file"] + [
        a[11:] for a in args if a.startswith("--env-file=")]
    if program in ("docker", "podman") and (loaded := [f for f in env_files if secret_kind(f)]) \
            and any(a in ("env", "printenv", "export", "set") for a in cmd.positionals()):
        out.append(f"{program} loads {loaded[0]} into a container that prints its environment")
    host = cmd.env.get("DOCKER_HOST", "")
    if program in ("docker", "docker-compose", "podman") and host and not _LOCAL_ENGINE.match(
            host):
        out.append(f"{program} runs on the docker engine at {host[:60]}, another host")
    return out


def _runs_url(cmd: SimpleCommand) -> str | None:
    """The URL a runner or interpreter is given as the program to run, if any."""
    if _URL.match(cmd.program) or _URL.match(cmd.raw_program):
        return cmd.raw_program
    pos = cmd.positionals()
    if cmd.program in _URL_RUNNERS:
        sub = _URL_RUNNERS[cmd.program]
        if sub:
            if pos[:1] != [sub]:
                return None
            pos = pos[1:]
    elif not _INTERPRETER.match(cmd.program):
        return None
    return pos[0] if pos and _URL.match(pos[0]) else None
