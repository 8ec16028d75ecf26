"""What a program can do, judged by capability rather than by its name.

The rule files know many programs by name; a name they do not know must not be a way
around them. So, for every simple command:

- a program that runs a command it is given (a wrapper: `unshare`, `prlimit`, `fakeroot`,
  `uv run`, ...; an option: `ssh -o ProxyCommand=`, `tar --to-command`, `zip -TT`,
  `vim -c '!...'`, `git clone ext::...`, `trap '...' EXIT`, `watch`, `cmake -E`) has that
  command analysed like the line itself (`embedded`);
- a program the hook does not know (not in `KNOWN`) that is given code (`-e`, `-c`,
  `--eval`, `--command`, `-x`, `-ex`, ...), or code on stdin (a here-doc, a here-string,
  a pipe into a program with no file to read), is treated as running code the hook cannot
  see (`opaque`), and so is a package runner fetching a package (`npx pkg@latest`) or a
  makefile read from stdin;
- scheduling (`at`, `batch`, `systemd-run`, `launchctl load`, `schtasks`; see
  `schedule_rules.py`) is gated: the command runs later, outside any hook.

- after a `cd` the hook cannot follow, a relative path is unknown for reads as for writes
  (`unknown_dir_use`); a recursive reader over a directory holding home secrets reads them
  (`reads_recursively`, judged in `bash_rules.py`).

`KNOWN` lists programs whose options the hook understands or that run nothing they are
given; everything else is "not known to be inert". Standard library only.
"""

from __future__ import annotations

import re
from shlex import join, quote

from massgen_mcp.hook.command import SimpleCommand, wordset
from massgen_mcp.hook.editor_rules import VI, vi_commands, vi_opaque
from massgen_mcp.hook.inert_values import INERT_VALUE
from massgen_mcp.hook.options import option_values
from massgen_mcp.hook.programs import KNOWN, TREE_READERS
from massgen_mcp.hook.registry_rules import switches_source
from massgen_mcp.hook.schedule_rules import schedules
from massgen_mcp.hook.sources import hidden_sources
from massgen_mcp.regex import lazy

#: Programs that run the command they are given after their own options; value = options
#: that take a value (the rest of the arguments is the command).
_WRAPPERS: dict[str, frozenset[str]] = {
    "unshare": frozenset({"-S", "-G", "--setuid", "--setgid", "-R", "-w", "--root", "--wd"}),
    "prlimit": frozenset({"-p", "--pid", "-o", "--output"}),
    "fakeroot": frozenset({"-l", "--lib", "--faked", "-s", "-i"}),
    "firejail": frozenset(), "proot": frozenset({"-r", "-b", "-w", "-q"}),
    "eatmydata": frozenset(), "faketime": frozenset({"-f"}),
    "setpriv": frozenset(), "nsenter": frozenset({"-t", "--target"}),
    "dbus-run-session": frozenset({"--config-file", "--dbus-daemon"}),
    "catchsegv": frozenset(), "valgrind": frozenset(), "torsocks": frozenset(),
    "proxychains": frozenset({"-f"}), "proxychains4": frozenset({"-f"}),
    "xvfb-run": frozenset({"-n", "-s", "-f", "-e"}), "numactl": frozenset(),
    "cgexec": frozenset({"-g"}), "chpst": frozenset({"-u", "-U", "-e", "-n"}),
    "pkexec": frozenset({"--user"}), "bwrap": frozenset(), "sg": frozenset(),
    "runuser": frozenset({"-u", "-g", "-G", "--user", "--group", "-s", "--shell"}),
    "systemd-run": frozenset({"-u", "--unit", "-p", "--property", "-E", "--setenv",
                              "--description", "--slice", "-M", "--machine", "-H",
                              "--host", "--uid", "--gid", "--nice", "--working-directory",
                              "--on-active", "--on-calendar", "--on-boot", "--on-unit-active",
                              "--timer-property", "--path-property", "--socket-property"}),
    "direnv": frozenset(), "flatpak-spawn": frozenset(), "toolbox": frozenset(),
}
#: `tool sub CMD...`: the subcommand runs the rest as a command (in the project's env).
_SUB_WRAPPERS = {"uv": "run", "poetry": "run", "pipenv": "run", "pdm": "run", "hatch": "run",
                 "bundle": "exec", "yarn": "exec", "pnpm": "exec", "conda": "run",
                 "mamba": "run", "micromamba": "run", "pixi": "run", "rye": "run",
                 "devbox": "run", "nix": "develop"}
_PACKAGE_RUNNERS = {"npx": "", "bunx": "", "uvx": "", "pnpx": "", "npm": "exec",
                    "pnpm": "dlx", "yarn": "dlx", "pipx": "run", "bun": "x"}
#: Tools a package runner may run without fetching anything new (they ship with the
#: project's dev dependencies in practice).
_DEV_TOOLS = wordset(
    "prettier tsc eslint jest vitest mocha playwright webpack vite next tsx ts-node nodemon "
    "ruff black mypy pytest pyright isort flake8 pre-commit tox nox stylelint rollup esbuild "
    "turbo nx lerna cypress storybook svelte-kit astro nuxt remix jasmine karma ava c8 nyc")
_CODE_OPTIONS = frozenset({"-c", "-e", "-E", "-x", "-ex", "--eval", "--command", "--exec",
                           "--execute", "--eval-command", "--script", "--run", "--cmd",
                           "-cmd", "--init-command", "--expr", "--code", "-code",
                           "--exec-command", "-eval", "-exec", "-command"})
#: Options that hand a program code to evaluate, on any program (known ones included).
_EVAL_OPTIONS = frozenset({"--eval", "-eval", "--execute", "--eval-command", "--lua-exec"})
#: Programs whose --eval/--exec value the rules read themselves.
_READS_ITS_CODE = frozenset({"make", "find", "watch", "git", "nix-shell", "sh", "bash", "zsh",
                             "docker", "podman", "kubectl", "mongosh", "socat", "nc", "ncat"})
_SSH = frozenset({"ssh", "scp", "sftp", "autossh", "mosh", "sshfs"})
_SSH_RUNS = ("proxycommand", "localcommand", "knownhostscommand")
_TAR_RUNS = ("--to-command", "--use-compress-program", "--info-script", "--new-volume-script",
             "--rsh-command")
_CMAKE_TOOLS = {"rm": "rm", "remove": "rm -f", "remove_directory": "rm -rf", "copy": "cp",
                "copy_directory": "cp -r", "copy_if_different": "cp", "rename": "mv",
                "create_symlink": "ln -s", "touch": "touch", "tar": "tar",
                "make_directory": "mkdir -p", "true": "true", "false": "false",
                "echo": "echo", "cat": "cat", "sha256sum": "sha256sum", "md5sum": "md5sum"}
_WATCH_VALUES = frozenset({"-n", "--interval", "-q", "--equexit"})


def _tail(args: list[str], values: frozenset[str] = frozenset()) -> str | None:
    """The command line that follows a wrapper's options (None: there is none)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        i += 2 if arg in values else 1
    return join(args[i:]) if i < len(args) else None


def _scan(args: list[str]) -> str | None:
    """The command an unknown program may run: its arguments from the first known program
    name on (`foo --opt 1 rm -rf ~` runs `rm -rf ~` if foo is a wrapper)."""
    for i, arg in enumerate(args):
        name = arg.rsplit("/", 1)[-1]
        if name in KNOWN and name not in ("[", ":", ".", "exec", "true", "false", "test", "echo"):
            return join(args[i:])
        if " " in arg.strip() and arg.split()[0].rsplit("/", 1)[-1] in KNOWN:
            return arg  # `tmux new -d 'rm -rf ~'`: one word holding a command line
    return None


def embedded(cmd: SimpleCommand) -> list[str]:
    """The command lines `cmd` runs (analysed by the caller like the line itself)."""
    program, args = cmd.program, cmd.args
    lines: list[str] = []
    if program in _WRAPPERS:
        tail = _tail(args, _WRAPPERS[program])
        lines += [t for t in (tail, _scan(args)) if t]
    elif program in _SUB_WRAPPERS and args[:1] == [_SUB_WRAPPERS[program]]:
        lines += [t for t in (_tail(args[1:]), _scan(args[1:])) if t]
    elif (module := cmd.python_module()) is not None:  # `python -m pip ...` runs pip
        lines.append(join([module.program, *module.args]))
    elif program in _PACKAGE_RUNNERS and (line := _runner_line(cmd)):
        lines.append(line)
    elif program == "trap" and len(args) >= 2 and args[0] not in ("-p", "-l", "-", ""):
        lines.append(args[0])
    elif program == "watch":
        rest = _tail(args, _WATCH_VALUES)
        if rest:  # `watch 'a b'` runs `sh -c 'a b'`; `watch -x a b` runs a with b
            lines.append(rest if "-x" in args or "--exec" in args else _joined(args))
    elif program == "cmake" and "-E" in args:
        tool = args[args.index("-E") + 1:]
        if tool and tool[0] in _CMAKE_TOOLS:
            lines.append(" ".join([_CMAKE_TOOLS[tool[0]], join(tool[1:])]))
        elif tool[:1] == ["env"]:
            lines += [t for t in [_scan(tool[1:])] if t]
        elif tool[:1] == ["chdir"] and len(tool) > 2:
            lines.append(f"cd {quote(tool[1])} && " + join(tool[2:]))
    elif program in _SSH:
        lines += _ssh_commands(args)
        if program in ("scp", "sftp"):
            lines += option_values(args, ("-S",))  # the program used in place of ssh
    elif program == "rsync":
        lines += option_values(args, ("-e", "--rsh"))
    elif program in ("tar", "bsdtar"):
        lines += option_values(args, (*_TAR_RUNS, "-I", "-F"))
        lines += [a.split("exec=", 1)[1] for a in args
                  if a.startswith("--checkpoint-action=") and "exec=" in a]
    elif program == "zip":
        lines += option_values(args, ("-TT", "--unzip-command"))
    elif program in ("less", "more", "most"):  # `less +'!cmd'`: an initial command
        lines += [a.split("!", 1)[1] for a in args if a.startswith("+") and "!" in a]
    elif program == "man":  # its pager and its HTML browser are command lines
        lines += option_values(args, ("-P", "--pager", "-H", "--html"))
    elif program in VI or program == "ed":
        lines += vi_commands(cmd)
    elif program == "git":
        lines += [a[5:].replace("% ", " ").replace("%%", "%") for a in args
                  if a.startswith("ext::")]
        lines += _git_pack_commands(args)
        for sub, word in (("bisect", "run"), ("submodule", "foreach")):
            if sub in args and word in args[args.index(sub):]:
                at = args.index(word, args.index(sub)) + 1
                after = [a for a in args[at:] if a != "--recursive"]
                lines.append(after[0] if len(after) == 1 else join(after))
        if "rebase" in args or "difftool" in args:
            lines += option_values(args, ("-x", "--extcmd"))
    elif program == "sg" and len(args) >= 2:
        lines.append(args[-1] if "-c" in args else join(args[1:]))
    elif program == "socat":  # `EXEC:cmd` / `SYSTEM:cmd` addresses run a command
        lines += [m.group(2).split(",", 1)[0] if m.group(1).upper() == "EXEC" else m.group(2)
                  for a in args if (m := re.match(r"(?i)(exec|system):(.*)", a))]
    elif program in ("nc", "ncat", "netcat"):
        lines += option_values(args, ("-e", "-c", "--exec", "--sh-exec"))
    elif program == "ip" and "exec" in args:  # `ip netns exec NAME cmd`
        lines += [t for t in [_scan(args[args.index("exec") + 2:])] if t]
    elif program in ("rg", "ripgrep"):
        lines += option_values(args, ("--pre",))  # run on every file searched
    elif program in ("nix-shell",):
        lines += option_values(args, ("--run", "--command"))
    elif program not in KNOWN:
        scanned = _scan(args)
        if scanned:
            lines.append(scanned)
    if program in ("psql", "mysql", "mariadb", "sqlite3", "sqlite"):
        # `\! cmd` (psql, mysql) and `.shell cmd` / `.system cmd` (sqlite3) run a shell
        texts = [*args, *(cmd.stdin_code or "").splitlines()]
        lines += [m.group(2) for t in texts for m in re.finditer(
            r"(\\!|^\s*\.(?:shell|system)\b|\bsystem\b)\s*([^;\n]+)", t)]
    if program == "gdb":
        lines += [v.split(None, 1)[1] for v in option_values(args, ("-ex", "--eval-command"))
                  if v.startswith(("shell ", "! "))]
        if "--args" in args:  # the program it debugs, with its arguments
            lines.append(join(args[args.index("--args") + 1:]))
    return lines


def _joined(args: list[str]) -> str:
    """The words after watch's options, joined by spaces (watch hands them to `sh -c`)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _WATCH_VALUES else 1
    return " ".join(args[i:])


def _git_pack_commands(args: list[str]) -> list[str]:
    """Commands git runs as its transport (`--upload-pack`, `--receive-pack`, clone's `-u`;
    `push -u` is --set-upstream, `fetch -u` --update-head-ok)."""
    sub = next((a for a in args if not a.startswith("-")), "")
    names = ("--upload-pack", "--receive-pack", "--exec") + (("-u",) if sub == "clone" else ())
    return option_values(args[args.index(sub):] if sub else args, names)


_LOOPBACK = lazy(r"^([\w.-]+@)?(localhost|127\.\d+\.\d+\.\d+|::1|0\.0\.0\.0)$")
_SSH_VALUES = frozenset({"-o", "-i", "-p", "-l", "-F", "-J", "-L", "-R", "-D", "-b", "-c",
                         "-e", "-m", "-O", "-Q", "-S", "-W", "-w", "-E", "-B", "-I"})


def _ssh_commands(args: list[str]) -> list[str]:
    """Local commands ssh runs: from its options (`-o ProxyCommand=...`, `LocalCommand`),
    and the remote command when the host is this machine (`ssh localhost 'rm -rf ~'`)."""
    out: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _SSH_VALUES else 1
    if i + 1 < len(args) and _LOOPBACK.match(args[i]):
        out.append(" ".join(args[i + 1:]))
    for value in option_values(args, ("-o",)):
        key, _, rest = value.replace("=", " ", 1).partition(" ")
        if key.lower() in _SSH_RUNS and rest.strip() and rest.strip().lower() != "none":
            out.append(rest.strip())
    return out


def opaque(cmd: SimpleCommand) -> list[str]:
    """Why `cmd` runs code the hook cannot see (empty: it does not, as far as it knows)."""
    program, args = cmd.program, cmd.args
    out: list[str] = schedules(cmd)
    if program in VI and any(v in ("-", "/dev/stdin") for v in option_values(args, ("-l",))):
        out.append(f"{program} -l runs a Lua program from stdin, which the hook cannot read")
    if program in VI or program in ("ed", "emacs"):
        out += vi_opaque(cmd)
    if program == "make" and (any(a in ("-", "/dev/stdin") for a in option_values(
            args, ("-f", "--file", "--makefile"))) or option_values(args, ("--eval", "-E"))):
        out.append("make runs a makefile from stdin or --eval, which the hook cannot see")
    if program == "git" and any(a.startswith("ext::") for a in args):
        out.append("git's ext:: transport runs a command")
    if program == "git" and _git_pack_commands(args):
        out.append("git is given a command to run in place of its own transport program")
    if program in ("socat", "nc", "ncat", "netcat") and (
            any(re.match(r"(?i)(exec|system):", a) for a in args)
            or option_values(args, ("-e", "-c", "--exec", "--sh-exec", "--lua-exec"))):
        out.append(f"{program} connects a program to the network (a remote shell)")
    if program in KNOWN and program not in _READS_ITS_CODE and not _interpreter(program) and (
            code := [a for a in args if a.split("=", 1)[0] in _EVAL_OPTIONS]):
        out.append(f"{program} is given code to evaluate ({code[0].split('=', 1)[0]}), "
                   "which the hook cannot read")
    out += hidden_sources(cmd) + switches_source(cmd)
    if program in _PACKAGE_RUNNERS:
        out += _package_runner(cmd)
    if (program not in KNOWN or _interpreter(program)) and any(
            w.subs and w.subs[0][0] == "in" for w in cmd.words[1:2]):
        out.append(f"{program} runs a process substitution the hook cannot see")
    if program not in KNOWN and program != "nix-shell" and not _interpreter(program):
        code = [a for i, a in enumerate(args) if _attached_code(a) or (
                re.split("[=:]", a, maxsplit=1)[0] in _CODE_OPTIONS and not _plain_value(
                    a.split("=", 1)[1] if "=" in a else args[i + 1] if i + 1 < len(args) else "",
                    program))]
        if code:
            out.append(f"{program} is given code ({code[0].split('=', 1)[0]}), and the hook "
                       "does not know what it runs")
        elif cmd.stdin_code is not None or (cmd.pipe_stage and all(  # told only where to
                i and args[i - 1] in _CONNECTION for i, a in enumerate(args)  # connect
                if not a.startswith("-"))):
            out.append(f"{program} reads its input on stdin, which may be code the hook "
                       "cannot see")
    return out


#: Options that say where a client connects (`redis-cli -h cache1`): their values are no
#: command, so a client given only these reads its commands from stdin.
_CONNECTION = frozenset({"-h", "--host", "-p", "--port", "-a", "--pass", "--password", "-u",
                         "--user", "--username", "-n", "--db", "--url", "--uri", "-s",
                         "--socket", "--server"})


def _attached_code(arg: str) -> bool:
    """`-c"curl x|sh"`: a short code option with its value attached (a value with spaces or
    shell operators, not a cluster of flags like `-cv`). No rule reads such a value as a
    command line, so it counts as code whatever program it names."""
    return arg[:2] in _CODE_OPTIONS and len(arg) > 2 and bool(re.search(r"[\s|;&$`<>]", arg))


def _plain_value(value: str, program: str) -> bool:
    """An option value that is a command line of a program the hook knows (`--exec 'python
    app.py'`, `-c pytest`): the reach rules analyse it like the line itself. A program whose
    code options speak a language of their own says what is inert in it (`INERT_VALUE`)."""
    if (inert := INERT_VALUE.get(program)) is not None:
        return inert(value)
    words = value.split()
    return bool(words) and words[0] in KNOWN


def _interpreter(program: str) -> bool:
    return bool(re.match(r"^(python|pypy)[0-9.]*$|^(node|nodejs|perl|ruby|php|bun|deno|lua"
                         r"|Rscript|julia)$", program))


def _runner_args(cmd: SimpleCommand) -> list[str] | None:
    """A package runner's arguments after its own subcommand (`npm exec`); None: it runs
    nothing."""
    sub = _PACKAGE_RUNNERS[cmd.program]
    if not sub:
        return cmd.args
    return cmd.args[1:] if cmd.args[:1] == [sub] else None


def _runner_line(cmd: SimpleCommand) -> str:
    """The command a package runner runs, as a line (`npx lerna publish` runs `lerna
    publish`); empty when it runs none."""
    args = _runner_args(cmd) or []
    spec = next((a for a in args if not a.startswith("-")), "")
    name = spec.lstrip("@").split("@", 1)[0].rsplit("/", 1)[-1]  # `@scope/pkg@2` -> pkg
    return join([name, *args[args.index(spec) + 1:]]) if name else ""


def _package_runner(cmd: SimpleCommand) -> list[str]:
    """`npx pkg` fetches and runs a package unless it is a dev tool the project has."""
    args = _runner_args(cmd)
    if args is None:
        return []
    spec = next((a for a in args if not a.startswith("-")), "")
    # Options after the package name are the tool's own (`npx tsc -p tsconfig.json`).
    own = args[:args.index(spec)] if spec else args
    if any(a in ("-p", "--package", "--spec") or a.startswith(("--package=", "--spec="))
           for a in own):
        return [f"{cmd.program} fetches a package to run (--package)"]
    name = spec[1:].split("@", 1)[0] if spec.startswith("@") else spec.split("@", 1)[0]
    if not spec or (name in _DEV_TOOLS and "@" not in spec[1:] and ":" not in spec):
        return []
    return [f"{cmd.program} fetches and runs the package `{spec[:60]}`, which the hook "
            "cannot see"]


#: Programs whose bare-word operands are files (`cat notes`); for the rest a bare word is
#: usually a subcommand or a name (`git status`, `make build`).
_FILE_PROGRAMS = wordset(
    "cat head tail less more cp mv rm ln install tar zip unzip gzip sed awk grep rg sort uniq "
    "tee dd base64 xxd od strings diff cmp nl paste comm split shred truncate chmod chown "
    "touch source . python python3 node perl ruby php bash sh zsh")
_NO_FILES = wordset("echo printf true false : pwd exit return export unset set shopt sleep "
                    "date whoami id uname hostname command type which hash wait")
_PATHLIKE = lazy(r"[./*?\[]|^[\w.-]+$")


def unknown_dir_use(cmd: SimpleCommand) -> str | None:
    """After a `cd` the hook cannot follow, a relative path names something unknown: what
    is read or written there is gated alike (the key dir may be where the line went)."""
    if cmd.program in _NO_FILES or not cmd.program:
        words = [t for _, t in cmd.redirects]
    else:
        words = [*cmd.positionals(), *(t for _, t in cmd.redirects)]
    rel = [w for w in words if w and not w.startswith(("/", "~", "&", "-")) and not w.isdigit()
           and "://" not in w and (re.search(r"[./*?\[]", w) or (
               cmd.program in _FILE_PROGRAMS and _PATHLIKE.search(w)))]
    if not rel:
        return None
    return (f"{cmd.program or 'a redirection'} uses {rel[0]!r} in a directory the hook cannot "
            "determine (after a `cd` it cannot follow)")


def reads_recursively(cmd: SimpleCommand) -> bool:
    """Does the command read whole directory trees (and print or pack what it finds)?"""
    if cmd.program in TREE_READERS or cmd.program == "zip":
        return cmd.program != "zip" or cmd.has_short_flag("r")
    if cmd.program in ("grep", "egrep", "fgrep", "cp", "scp"):
        return cmd.has_short_flag("r") or cmd.has_short_flag("R") or cmd.has_long(
            "--recursive", "--dereference-recursive") or (
                cmd.program == "cp" and cmd.has_short_flag("a"))
    return cmd.program == "find" and any(a in ("-exec", "-execdir", "-ok") for a in cmd.args)
