"""Channels through which code reaches a shell or interpreter besides its arguments.

`shell.py` calls these while it walks a line, so the code each channel carries is analysed
like the line itself, or gated when it cannot be seen:

- environment variables that make a program run code: `BASH_ENV`/`ENV` (a file every
  shell runs first), `LD_PRELOAD`, `NODE_OPTIONS=--require`, `PERL5OPT=-M`, `RUBYOPT=-r`,
  `GIT_CONFIG_PARAMETERS` (gated), and variables whose value *is* a command line
  (`GIT_SSH_COMMAND`, `GIT_PAGER`, `GIT_EDITOR`, `GIT_EXTERNAL_DIFF`, `PROMPT_COMMAND`,
  ...: analysed). `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` and
  `git --config-env=key=VAR` are rewritten to the `-c key=value` they amount to;
- files written earlier in the same line (`echo ... > x.sh; sh x.sh`, a heredoc into
  `run.sh` then `./run.sh`): their text, when the line shows it, is analysed as the script
  that runs; a script whose text the line does not show (downloaded, copied) is gated;
- a shell reading its program from `/dev/stdin`, `/dev/fd/0` or `-`: the heredoc or
  here-string is analysed; any other stdin is gated.

Standard library only.
"""

from __future__ import annotations

import os
import re

from massgen_mcp.hook.git_alias import scripted_todo
from massgen_mcp.hook.lexer import UNKNOWN
from massgen_mcp.hook.options import option_values
from massgen_mcp.hook.scope import secret_kind
from massgen_mcp.regex import lazy


def interpreter(program: str) -> bool:
    """Python, node, perl, ruby, php...: their script file is code the line may have written."""
    return bool(re.match(r"^(python|pypy)[0-9.]*$|^(node|nodejs|perl|ruby|php|bun|deno|lua)$",
                         program))

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from massgen_mcp.hook.command import Analysis, SimpleCommand

_RUNS_FILE = frozenset({"BASH_ENV", "ENV", "LD_PRELOAD", "LD_AUDIT", "GIT_CONFIG_PARAMETERS",
                        "GIT_EXEC_PATH", "SHELLOPTS", "BASHOPTS", "PYTHONSTARTUP"})
_OPTION_CODE = {"NODE_OPTIONS": lazy(r"(^|\s)(-r|--require|--import|--loader"
                                           r"|--experimental-loader|-e|--eval)\b"),
                "PERL5OPT": lazy(r"-[a-zA-Z]*[MmedI]"),
                "RUBYOPT": lazy(r"-[a-zA-Z]*[reI]")}
_COMMAND_VALUED = frozenset({
    "GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR",
    "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "GIT_PROXY_COMMAND",
    "PROMPT_COMMAND", "PAGER", "MANPAGER", "EDITOR", "VISUAL", "LESSOPEN", "LESSCLOSE"})
_PIP = ("pip", "pip3", "uv", "pipx")
#: Files a build tool runs as code, and the tools that run them.
_BUILD_FILES = {"setup.py": _PIP, "pyproject.toml": _PIP, "setup.cfg": _PIP,
                "Makefile": ("make",), "makefile": ("make",), "GNUmakefile": ("make",),
                "package.json": ("npm", "yarn", "pnpm", "bun"), "CMakeLists.txt": ("cmake",),
                "build.rs": ("cargo",), "conftest.py": ("pytest", "py.test"),
                "noxfile.py": ("nox",), "tox.ini": ("tox",), "Rakefile": ("rake",),
                "build.gradle": ("gradle", "gradlew")}
_STDIN_PATHS = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "-"})
_SHELL_VALUE_OPTS = frozenset({"-o", "-O", "+o", "+O", "--rcfile", "--init-file"})


def env_assigned(name: str, value: str, out: Analysis,
                 run: Callable[[str], None]) -> None:
    """Judge one environment assignment (`NAME=value cmd`, `export NAME=value`)."""
    if name == "CDPATH":
        out.cdpath = True
    if name in _RUNS_FILE and value:
        out.gate(f"sets {name}, which makes programs load and run `{value[:60]}`; the hook "
                 "cannot see that code", rule="code-env")
    elif name in _OPTION_CODE and _OPTION_CODE[name].search(value):
        out.gate(f"sets {name}={value[:60]}, which makes the interpreter load code the hook "
                 "cannot see", rule="code-env")
    if name == "GIT_SEQUENCE_EDITOR" and scripted_todo(value):
        out.gate(f"sets GIT_SEQUENCE_EDITOR to `{value[:40]}`: a script edits the rebase's todo "
                 "list, which can drop or squash commits unseen", rule="git-rewrite")
    if name in _COMMAND_VALUED and value:
        if name.startswith("LESS"):  # `|cmd %s`: the file's name is less's to fill in
            value = value.lstrip("|-").replace("%s", "")
        if UNKNOWN in value:
            out.gate(f"sets {name} to a command computed at run time", rule="code-env")
        else:
            run(value)


def git_env_config(values: list[str], env: dict[str, str], out: Analysis) -> list[str]:
    """`git` argv with `GIT_CONFIG_*` and `--config-env` turned into `-c key=value`."""
    extra: list[str] = []
    count = env.get("GIT_CONFIG_COUNT")
    if count is not None:
        if not count.isdigit():
            out.gate("sets GIT_CONFIG_COUNT to a value computed at run time", rule="code-env")
        else:
            for n in range(min(int(count), 64)):
                key, value = env.get(f"GIT_CONFIG_KEY_{n}"), env.get(f"GIT_CONFIG_VALUE_{n}")
                if key is None or value is None or UNKNOWN in key + value:
                    out.gate("sets git configuration through GIT_CONFIG_* the hook cannot "
                             "read", rule="code-env")
                    continue
                extra += ["-c", f"{key}={value}"]
    rewritten: list[str] = []
    for arg in values[1:]:
        if arg.startswith("--config-env="):
            key, _, var = arg[len("--config-env="):].partition("=")
            value = env.get(var, os.environ.get(var))
            if value is None or UNKNOWN in value:
                out.gate(f"git --config-env sets {key} from ${var}, a value the hook cannot "
                         "see", rule="code-env")
                continue
            rewritten += ["-c", f"{key}={value}"]
        else:
            rewritten.append(arg)
    return [values[0], *extra, *rewritten]


def download_targets(cmd: SimpleCommand) -> list[str]:
    """Files `curl -o F` / `curl -sSLo F` / `--output=F` / `wget -O F` write."""
    if cmd.program not in ("curl", "wget"):
        return []
    short = "o" if cmd.program == "curl" else "O"
    out: list[str] = []
    for i, arg in enumerate(cmd.args):
        if arg.startswith(("--output=", "--output-document=")):
            out.append(arg.split("=", 1)[1])
        elif (arg in ("--output", "--output-document") or (
                re.fullmatch(r"-[A-Za-z]*", arg) and arg.endswith(short))) and i + 1 < len(
                cmd.args):
            out.append(cmd.args[i + 1])
    remote_name = cmd.program == "wget" or any(
        a in ("-O", "--remote-name", "--remote-name-all") or re.fullmatch(r"-[A-Za-z]*O", a)
        for a in cmd.args)
    if remote_name and not out:  # `wget URL`, `curl -O URL`: saved under the URL's name
        out += [u.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1] or "index.html"
                for u in cmd.args if re.match(r"^(https?|ftp)://|^[\w.-]+\.\w+/", u)]
    return out


def output_text(cmd: SimpleCommand) -> str | None:
    """What a command writes to its output, when the line shows it (else None)."""
    if cmd.program == "echo":
        return " ".join(a for a in cmd.args if a not in ("-n", "-e", "-E"))
    if cmd.program == "printf" and cmd.args:
        return cmd.args[0].replace("\\n", "\n").replace("%s", " ".join(cmd.args[1:]))
    if cmd.program in ("cat", "tee") and cmd.stdin_code is not None:
        return cmd.stdin_code
    return None


def record_writes(cmd: SimpleCommand, out: Analysis) -> None:
    """Remember the files this command writes, with their text when the line shows it."""
    targets = [t for op, t in cmd.redirects if ">" in op and not op.endswith("&")]
    if cmd.program == "tee":
        targets += [a for a in cmd.args if not a.startswith("-")]
    targets += download_targets(cmd)
    if cmd.program in ("cp", "mv", "install", "ln", "scp", "rsync", "rclone") and len(
            cmd.positionals()) >= 2:
        targets.append(cmd.positionals()[-1])
    targets += _clone_dir(cmd) + unpack_targets(cmd)
    text = output_text(cmd) if cmd.program in ("echo", "printf", "cat", "tee") else None
    for target in targets:
        if target and UNKNOWN not in target:
            out.written[os.path.normpath(target)] = text


_GUNZIP = {"gunzip": "", "gzip": "d", "unxz": "", "xz": "d", "bunzip2": "", "bzip2": "d",
           "unzstd": "", "zstd": "d", "unlz4": "", "lz4": "d", "uncompress": ""}


def unpack_targets(cmd: SimpleCommand) -> list[str]:
    """Where an unpacker writes files the hook cannot see: the directory it extracts into
    (`.` for the current one: any relative path there may now be the archive's), or the
    file a decompressor leaves (`gunzip x.sh.gz` -> `x.sh`)."""
    program, args, pos = cmd.program, cmd.args, cmd.positionals()
    extracts = False
    if program in ("tar", "bsdtar", "gtar"):
        first = args[0] if args else ""
        extracts = any(a in ("-x", "--extract", "--get") or (
            re.fullmatch(r"-[A-Za-z]*x[A-Za-z]*", a)) for a in args) or (
            bool(re.fullmatch(r"[A-Za-z]*x[A-Za-z]*", first)))
        dest = option_values(args, ("-C", "--directory"))
    elif program in ("unzip", "ditto", "jar", "unrar", "7z", "7za", "7zz", "ar", "cpio", "pax"):
        extracts = (program == "unzip" and not any(
            re.fullmatch(r"-[a-zA-Z]*[lptvZ][a-zA-Z]*", a) for a in args)) or (
            program in ("jar", "unrar", "7z", "7za", "7zz", "ar") and pos[:1] in (
                ["x"], ["e"], ["xf"], ["xvf"])) or (program == "cpio" and (
                    cmd.has_short_flag("i") or "--extract" in args)) or (
            program == "pax" and cmd.has_short_flag("r")) or program == "ditto"
        dest = option_values(args, ("-d",)) + [a[2:] for a in args if a.startswith("-o")
                                                and program.startswith("7z")]
    elif program in _GUNZIP and (not _GUNZIP[program] or cmd.has_short_flag("d")
                                 or "--decompress" in args) and not cmd.has_short_flag("c"):
        return [re.sub(r"\.(gz|xz|bz2|zst|lz4|Z|tgz)$", "", p) for p in pos]
    else:
        return []
    return (dest or ["."]) if extracts else []


_CLONE_VALUES = frozenset({"-b", "--branch", "--depth", "-o", "--origin", "-c", "--config",
                           "--reference", "--template", "-j", "--jobs", "--filter", "-u",
                           "--upload-pack", "--separate-git-dir", "--shallow-since"})


def _clone_dir(cmd: SimpleCommand) -> list[str]:
    """The directory `git clone URL [DIR]` fills with another repository's files."""
    if cmd.program != "git" or "clone" not in cmd.args:
        return []
    args = cmd.args[cmd.args.index("clone") + 1:]
    pos = [a for i, a in enumerate(args) if not a.startswith("-")
           and (i == 0 or args[i - 1] not in _CLONE_VALUES)]
    if len(pos) >= 2:
        return [pos[1]]
    name = pos[0].rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1] if pos else ""
    return [name.removesuffix(".git")] if name else []


def _script_arg(cmd: SimpleCommand) -> str | None:
    """The script file a shell or `source` runs (None: it runs `-c` or stdin)."""
    args = cmd.args
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return args[i + 1] if i + 1 < len(args) else None
        if arg in _SHELL_VALUE_OPTS:
            i += 2
            continue
        if arg.startswith(("-", "+")) and arg != "-":
            if "c" in arg and not arg.startswith("--"):
                return None
            i += 1
            continue
        return arg
    return None


def script_runs(cmd: SimpleCommand, out: Analysis, shells: frozenset[str],
                run: Callable[[str], None]) -> None:
    """A script this command runs that the line itself wrote, or reads from stdin."""
    program = cmd.program
    script: str | None = None
    if "/" in cmd.raw_program:
        script = cmd.raw_program
    elif interpreter(program) and not cmd.stdin_code:
        script = next((a for a in cmd.args if not a.startswith("-")), None)
    elif program in shells or program in ("source", "."):
        script = _script_arg(cmd)
        if script in _STDIN_PATHS or (script is None and program in shells and not any(
                a.startswith("-") and not a.startswith("--") and "c" in a for a in cmd.args)):
            if cmd.stdin_code is not None:
                return  # the heredoc / here-string is analysed by the caller
            source = next((t for op, t in cmd.redirects if op == "<"), None)
            if source is not None and os.path.normpath(source) in out.written:
                script = source
            elif script in _STDIN_PATHS:
                where = f"stdin redirected from {source}" if source else script
                out.gate(f"{program} runs code from {where}, which the hook cannot see",
                         rule="run-stdin")
                return
            else:
                return  # `sh < build.sh` runs the project's script, like `sh build.sh`
    if program in ("source", ".") and script and secret_kind(script):
        out.sourced = script  # its keys are now shell variables (exported under `set -a`)
    if out.sourced and ((program in ("echo", "printf") and any("$" in a for a in cmd.args))
                        or (program in ("printenv", "env", "export", "set", "declare")
                            and not cmd.positionals())):
        out.gate(f"{program} prints variables the line loaded from {out.sourced}, a secret "
                 "file", rule="print-secret", group="secrets")
    built = [w for w in out.written if os.path.basename(w) in _BUILD_FILES
             and program in _BUILD_FILES[os.path.basename(w)]]
    if built and (program not in ("pip", "pip3", "uv") or "install" in cmd.args):
        out.gate(f"{program} runs {built[0]}, a build file this line writes",
                 rule="run-written-script")
    if script is None:
        return
    key = os.path.normpath(script)
    if (fetched := next((d for d in out.written if key.startswith(d + "/") or (
            d == "." and not key.startswith(("/", "..")))), None)) is not None:
        out.gate(f"runs {script} from {fetched}, which this line fetched or unpacked (code "
                 "the hook cannot see)", rule="run-written-script")
        return
    if key not in out.written:
        return
    text = out.written[key]
    if text is None:
        out.gate(f"runs {script}, a script this line writes with content the hook cannot "
                 "see", rule="run-written-script")
        return
    cmd.script_code = text
    is_shell = program in shells or program in ("source", ".") or "/" in cmd.raw_program
    if is_shell and (not text.startswith("#!") or re.match(r"#!\s*\S*(sh|bash|zsh|dash)\b",
                                                           text)):
        run(text)
