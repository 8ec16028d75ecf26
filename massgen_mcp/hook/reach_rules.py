"""What a command reaches that no rule names it for: shapes, not program lists.

The rule files judge the programs and options they know. A program they do not know, or
an option they do not read, must not be a way around them, so for every simple command:

- a command line handed to a program the hook does not know as one argument (`watchexec
  -w . 'rm -rf ~'`, `tool --exec='git push -f origin main'`) is analysed like the line
  itself: a program not known to be inert that is given a command is treated as running it;
- a destructive verb given to a program the hook does not know, or to a project task
  (`mysqladmin drop`, `flyway clean`, `supabase db reset`, `php artisan migrate:fresh`,
  `python manage.py flush`, `npm run db:drop`, `make drop-db`) deletes data it cannot see;
- a place where code persists or a system tree (`~/.bashrc`, `~/.ssh/`, `~/.local/bin`,
  `/etc`, the home directory itself as a target) given to a program that is not known to
  only read it (`wget -P ~`, `7z x a.7z -o$HOME`, `dos2unix -n a ~/.bashrc`, `git clone
  URL ~/.config/autostart`, `gpg -o ~/.profile`) may be written: it is judged like a write;
- HTTP requests that delete or leak (`http_rules`);
- the files a database shell is told to run (`psql -f drop.sql`, `sqlite3 db < x.sql`) are
  read and judged as SQL; one the hook cannot read is gated when its name says it deletes.

Standard library only.
"""

from __future__ import annotations

import os
import re
from shlex import join

from massgen_mcp.hook.command import SimpleCommand, wordset
from massgen_mcp.hook.http_rules import http_findings
from massgen_mcp.hook.interp_rules import interpreter
from massgen_mcp.hook.options import option_values
from massgen_mcp.hook.policy import Finding
from massgen_mcp.hook.programs import KNOWN
from massgen_mcp.hook.scope import Scope, is_under
from massgen_mcp.hook.secret_search import finds_secrets, searches_secrets, secret_store_read
from massgen_mcp.hook.statefile import StateFileError, read_bytes
from massgen_mcp.regex import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

#: Verbs that delete data whatever they are given to.
_DESTROYS = wordset("drop dropall dropdb destroy purge wipe truncate flush flushall flushdb "
                    "nuke erase delete deleteall del obliterate prune")
#: Verbs that delete data when the command is about a database or its migrations.
_DB_DESTROYS = wordset("reset clean rollback downgrade fresh zero remove rm unlink")
_DB_HINTS = wordset("db ecto database databases pg postgres postgresql mysql mariadb redis mongo "
                    "mongodb sql sqlite migrate migration migrations schema schemas table "
                    "tables keyspace bucket buckets index indices collection collections kv "
                    "data dataset datasets cache alembic flyway liquibase dbmate knex sequelize "
                    "prisma diesel goose typeorm sqlx atlas supabase neon turso")
#: Project task runners: the task name says what it does (its body is not on the line).
TASK_RUNNERS: dict[str, str] = {"make": "", "just": "", "task": "", "invoke": "", "npm": "run",
                 "pnpm": "run", "yarn": "", "bun": "run", "rake": "", "mage": "",
                 "gradle": "", "gradlew": "", "mvn": ""}
#: Options naming where a task runner reads its recipes (a directory or the recipe file).
_RECIPE_PLACES = {"make": ("-C", "--directory", "-f", "--file", "--makefile"),
                  "just": ("-f", "--justfile", "-d", "--working-directory"),
                  "rake": ("-f", "--rakefile", "-C", "--directory"),
                  "task": ("-d", "--dir", "-t", "--taskfile")}
#: Cloud and storage CLIs the hook knows, whose subcommands still say what they delete
#: (`az storage blob delete-batch`, `gsutil rm`): judged by verb like unknown programs.
_CLOUD_CLIS = wordset("aws gcloud az gsutil doctl kubectl helm terraform tofu pulumi")
_DESTROYER = lazy(r"^(drop|destroy|purge|wipe|nuke)|^(lv|vg|pv)remove$|^(user|group)del$"
                        r"|^(wipefs|blkdiscard)$")
_WORD_PARTS = lazy(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_DB_SHELLS = wordset("psql mysql mariadb sqlite3 sqlite duckdb clickhouse-client cqlsh "
                     "mongosh mongo usql pgcli mycli litecli sqlcmd snowsql")
_SQL_FILE_OPTIONS = ("-f", "--file", "-i", "--init", "--queries-file", "--execute-file")
_DELETING_NAME = lazy(r"drop|delete|truncate|reset|wipe|purge|destroy|clean|teardown"
                            r"|nuke|down", re.I)


def reach_findings(cmd: SimpleCommand, scope: Scope,
                   nested: Callable[[str, Scope], list[Finding]],
                   sql: Callable[[str], Finding | None]) -> list[Finding]:
    """Findings for what `cmd` reaches beyond the rules that know its program (`nested`
    judges a command line, `sql` a SQL text: the callers' rules, passed in)."""
    out: list[Finding] = []
    if cmd.program not in KNOWN and not interpreter(cmd.program) and not cmd.computed:
        for line in _command_strings(cmd):
            out.extend(nested(line, scope))
    if verb := destructive_verb(cmd):
        out.append(Finding("destruction", "destructive-verb",
                           f"{cmd.program} is told to {verb}, which deletes data the hook "
                           "cannot see"))
    for arg in cmd.args:  # `make SHELL='sh -c "..."'`: a variable whose value is a command
        name, eq, value = arg.partition("=")
        if eq and re.fullmatch(r"[A-Z_.][A-Z0-9_]*", name) and _command_strings(
                SimpleCommand("", [value])):
            out.extend(nested(value, scope))
    out.extend(_persistent_targets(cmd, scope))
    if cmd.program in _PERMISSIONS and _loosens(cmd):
        out.extend(Finding("access_control", "perm-home",
                           f"{cmd.program} changes who may use {w} ({what})")
                   for w in cmd.positionals() if (path := scope.resolve(w))
                   and (what := persistent_place(path, scope)))
    if (cmd.program in ("dpkg", "rpm") and any(a in ("-i", "--install", "-U", "--upgrade", "-ivh",
                                                     "-Uvh") for a in cmd.args)) or (
            cmd.program in ("apt", "apt-get", "dnf", "yum", "zypper") and any(
                p.endswith((".deb", ".rpm")) for p in cmd.positionals())):
        out.append(Finding("supply_chain", "package-file",
                           f"{cmd.program} installs a package file as root; its scripts run "
                           "unseen"))
    out.extend(http_findings(cmd, sql))
    if cmd.program in _DB_SHELLS:
        out.extend(_sql_files(cmd, scope, sql))
    out.extend(_other_channels(cmd, scope, nested))
    if cmd.program == "find" and any(a in ("-exec", "-execdir", "-ok", "-okdir") for a in
                                       cmd.args) and (hit := finds_secrets(cmd)):
        out.append(Finding("secrets", "print-secret",
                           f"find runs a program on the files named {hit!r}, which are secrets"))
    pos = cmd.positionals()
    if "eval" in pos[:3] and pos[-1] != "eval" and cmd.program not in _SHELLS_AND_BUILDS and not (
            interpreter(cmd.program)):  # `dotnet script eval '...'`, `redis-cli eval "..."`
        out.append(Finding("supply_chain", "runs-code",
                           f"{cmd.program} is given code to evaluate, which the hook cannot "
                           "read"))
    if why := secret_store_read(cmd):
        out.append(Finding("secrets", "print-secret", why))
    if cmd.program in ("ngrok", "cloudflared", "lt", "bore", "localtunnel") or (
            cmd.program in ("ssh", "autossh") and any(a.startswith("-R") for a in cmd.args)):
        out.append(Finding("exfiltration", "tunnel",
                           f"{cmd.program} opens this machine to the internet (a tunnel)"))
    if why := searches_secrets(cmd, scope):
        out.append(Finding("secrets", "print-secret", why))
    return out


_SHELLS_AND_BUILDS = wordset("sh bash zsh dash ksh fish eval git make")


def _other_channels(cmd: SimpleCommand, scope: Scope,
                    nested: Callable[[str, Scope], list[Finding]]) -> list[Finding]:
    """Code from a file descriptor, container copies and execs, the CLI's own settings."""
    from massgen_mcp.hook.interp_rules import reads_code_from_stdin
    from massgen_mcp.hook.shell import SHELLS

    program, pos, out = cmd.program, cmd.positionals(), []
    from_fd = [t for op, t in cmd.redirects if op.startswith("<&") and t not in ("0", "-")]
    if from_fd and ((program in SHELLS and not any(a.startswith("-") and "c" in a[1:2]
                                                  for a in cmd.args[:1]) and not pos)
                    or reads_code_from_stdin(cmd) or program not in KNOWN):
        out.append(Finding("supply_chain", "runs-code",
                           f"{program} reads its code from file descriptor {from_fd[0]}, "
                           "which the hook cannot see"))
    if program == "cmake" and ("-P" in cmd.args and (cmd.stdin_code is not None or any(
            cmd.args[i + 1] in ("-", "/dev/stdin") for i, a in enumerate(cmd.args[:-1])
            if a == "-P"))):
        out.append(Finding("supply_chain", "runs-code",
                           "cmake -P runs a script from stdin, which the hook cannot see"))
    for place in option_values(cmd.args, _RECIPE_PLACES.get(program, ())):
        where = scope.resolve(place)  # `make -C ~`: the recipes there are code the hook never read
        if where is None or not (is_under(where, scope.workspace) or scope.in_temp(where)):
            out.append(Finding("supply_chain", "runs-code", f"{program} runs the recipes of "
                               f"{place}, outside the workspace (code the hook cannot read)"))
    if program in ("docker", "podman", "nerdctl") and pos[:1] == ["cp"] and len(pos) >= 3:
        out.extend(f for f in [scope.write_finding(pos[-1], verb=f"{program} cp writes")] if f)
    if program in ("fd", "fdfind") and (flag := next((a for a in cmd.args if a in (
            "-x", "--exec", "-X", "--exec-batch")), None)):
        tail = cmd.args[cmd.args.index(flag) + 1:]
        found = [a for a in cmd.args[:cmd.args.index(flag)] if not a.startswith("-")]
        name = re.sub(r"^\^|\$$|\\", "", found[0]) if found else ""  # `fd .env -x cat`: .env
        for root in found[1:] or ["."]:  # it runs the command on what it finds under root
            out.extend(nested(join([*tail, root.rstrip("/") + "/" + (name if re.fullmatch(
                r"[\w.-]*[A-Za-z][\w.-]*", name) else "x")]), scope))
    if program in ("kubectl", "oc") and pos[:1] == ["exec"] and "--" in cmd.args:
        out.extend(nested(join(cmd.args[cmd.args.index("--") + 1:]), scope))
    if program in ("docker", "podman", "nerdctl") and pos[:1] == ["exec"]:
        i = cmd.args.index("exec") + 1  # options, the container, then the command it runs
        while i < len(cmd.args) and cmd.args[i].startswith("-"):
            i += 2 if cmd.args[i] in ("-e", "-u", "-w", "--env", "--user", "--workdir",
                                      "--env-file") else 1
        if i + 1 < len(cmd.args):
            out.extend(nested(join(cmd.args[i + 1:]), scope))
    if program == "claude" and (pos[:2] in (["config", "set"], ["config", "remove"],
                                            ["config", "add"]) or pos[:2] in (
            ["mcp", "remove"], ["mcp", "add"], ["mcp", "add-json"])):
        out.append(Finding("access_control", "guardrail-file",
                           f"claude {' '.join(pos[:2])} changes Claude Code's settings (its "
                           "hooks and tool servers)"))
    return out


def _command_strings(cmd: SimpleCommand) -> list[str]:
    """Arguments that read as a command line (a space and a first word that is a program
    the hook knows): an unknown program given one runs it, in all likelihood."""
    out: list[str] = []
    for arg in cmd.args:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        value = re.sub(r"^\s*((platform\s+)?shell\s+|!|system\s+)", "", value)  # debuggers
        first = value.strip().split(None, 1)[0] if value.strip() else ""
        if " " in value.strip() and (first in KNOWN or first.startswith(("/", "./"))):
            out.append(value)
    return out


def _parts(word: str) -> list[str]:
    return [w.lower() for w in _WORD_PARTS.findall(word)]


def project_tasks(cmd: SimpleCommand) -> list[str] | None:
    """The tasks a project task runner is asked to run (`make a b`, `npm run-script x`), or
    None when it runs none. `VAR=value` is a setting, not a task."""
    sub = TASK_RUNNERS.get(cmd.program)
    pos = [p for p in cmd.positionals() if "=" not in p]
    if sub is None or (sub and pos[:1] not in ([sub], [f"{sub}-script"])):
        return None
    return pos[1:] if sub else pos


def destructive_verb(cmd: SimpleCommand) -> str | None:
    """The destructive verb a command is given as its subcommand or task, or None."""
    program, pos = cmd.program, cmd.positionals()
    if program in TASK_RUNNERS:
        if (tasks := project_tasks(cmd)) is None:
            return None
        pos = tasks
        words = pos[:1]
    elif interpreter(program) and pos and pos[0].endswith((".py", "artisan", "console", ".php",
                                                          ".rb", ".js", ".ts")):
        words = pos[1:4]  # `python manage.py flush`, `php artisan db:wipe`
    elif (program in KNOWN and program not in _CLOUD_CLIS) or interpreter(program) or (
            cmd.computed):
        return None
    else:
        if _DESTROYER.match(program):
            return program
        words = [w for w in pos[:4] if "/" not in w and "." not in w]
    parts = [p for w in pos[:6] for p in _parts(w)]
    hint = bool(_DB_HINTS.intersection(parts + _parts(program)))
    # a step back (`alembic downgrade -1`) is the everyday undo; to the start it drops all
    to_start = bool({"base", "zero", "0", "--all", "-a"} & set(cmd.args))
    for word in words:
        for part in _parts(word):
            if part in _DESTROYS or (hint and part in _DB_DESTROYS and (
                    to_start or part not in ("rollback", "downgrade"))):
                return word
    return None


#: Directories under home that hold caches and tool installs, not code that runs at login.
_HOME_CACHES = (".cache", ".venv", ".venvs", ".virtualenvs", ".npm", ".pnpm-store", ".yarn",
                ".m2", ".gradle", ".ivy2", ".sbt", ".nuget", ".conda", ".pyenv", ".nvm",
                ".rustup", ".cargo/registry", ".cargo/git", ".deno", ".gem", ".julia",
                ".local/share/virtualenvs", ".local/state", ".ccache", ".keras", ".expo")
#: Programs that only read what they are given (or whose writes the rules already judge).
_READS_ONLY = wordset(
    "cat less more head tail grep egrep fgrep rg ag ack ls stat file wc du df tree realpath "
    "readlink basename dirname diff cmp sdiff colordiff md5sum sha1sum sha256sum sha512sum "
    "cksum b2sum strings xxd od hexdump bat jq yq source . test [ [[ echo printf which type "
    "command nl sort uniq awk gawk mawk sed find fd locate cd pushd popd ssh scp sftp "
    "ssh-add cp mv ln install rsync tar zip tee touch mkdir rm rmdir shred unlink "
    "truncate dd cut tr paste column fold fmt tac rev comm join iconv export "
    "env printenv declare local readonly set unset alias eval exec time nice nohup timeout "
    "sudo doas xargs parallel watch code open xdg-open view vim vi nvim nano emacs ex ed "
    "chmod chown chgrp docker podman kubectl helm sops age openssl ldd nm objdump readelf gdb "
    "strace ltrace certutil")
_CREDENTIAL_OPTIONS = frozenset({"-i", "-F", "--cert", "--key", "--cacert", "--identity-file",
                                 "--kubeconfig", "--config", "-c", "--env-file", "-C"})
#: System trees programs are pointed at to change the machine (not /usr: interpreters and
#: headers there are read all day, `-p /usr/bin/python3`, `-I/usr/include`).
_SYSTEM = ("/etc", "/boot", "/root", "/var/spool", "/Library/LaunchAgents",
           "/Library/LaunchDaemons")


def persistent_place(path: str, scope: Scope) -> str | None:
    """What a path is, if writing it plants code or changes the system: home itself, a
    dot-file or dot-directory of home that is not a cache, ~/bin, or a system tree."""
    if path == scope.home:
        return "your home directory"
    if is_under(path, scope.workspace) or scope.in_temp(path):
        return None
    if is_under(path, scope.home):
        rel = path[len(scope.home):].lstrip("/")
        if any(is_under(rel, c) for c in _HOME_CACHES):
            return None
        if rel.startswith(".") or rel == "bin" or rel.startswith(("bin/", "Library/")):
            return f"~/{rel}, where code runs from or settings persist"
        return None
    if any(is_under(path, s) for s in _SYSTEM):
        return f"{path}, a system location"
    return None


_PERMISSIONS = wordset("chmod chown chgrp chattr setfacl")


def _loosens(cmd: SimpleCommand) -> bool:
    """Does a permission change open files up (chmod 777, g+w, o+r) or change their owner,
    attributes or ACLs? Tightening (`chmod 600 ~/.ssh/id_rsa`) is everyday repair."""
    if cmd.program != "chmod":
        return True
    mode = next((a for a in cmd.args if not a.startswith("-") or re.fullmatch(r"-[rwxXst]+", a)),
                "")
    if mode.isdigit():
        return any(d in "2367" for d in mode[-2:])
    return bool(re.search(r"[goa]*[+=][^,]*[wxst]|^\+", mode)) and not re.fullmatch(
        r"u[+=-][rwx]+|[go]*-[rwx]+", mode)


def _operands(cmd: SimpleCommand) -> list[str]:
    """Every word that may name a file: positionals, `--opt=value` and `--opt value`
    values, and values attached to a short option (`-o$HOME`, `-P~/x`)."""
    out: list[str] = []
    args = cmd.args
    for i, arg in enumerate(args):
        if i and args[i - 1] in _CREDENTIAL_OPTIONS:
            continue
        if not arg.startswith("-") or arg == "-":
            out.append(arg)
        elif arg.startswith("--") and "=" in arg:
            if arg.split("=", 1)[0] not in _CREDENTIAL_OPTIONS:
                out.append(arg.split("=", 1)[1])
        elif not arg.startswith("--") and len(arg) > 2 and arg[2] in "~$":
            out.append(arg[2:])
    return out


def _persistent_targets(cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    if cmd.program in _READS_ONLY or not cmd.program or (cmd.program == "ssh-keygen" and any(
            a.startswith("-") and set(a[1:]) & set("lyBeFL") for a in cmd.args)):
        return []
    out: list[Finding] = []
    operands = _operands(cmd)
    if interpreter(cmd.program) and operands and operands[0] in cmd.args:
        operands = operands[1:]  # the script an interpreter runs is read, not written
    for word in operands:
        if not word.startswith(("/", "~", "$")) or "://" in word:
            continue
        path = scope.resolve(word)
        what = persistent_place(path, scope) if path else None
        if what:
            out.append(Finding("exfiltration", "write-outside-workspace",
                               f"{cmd.program} is given {word} ({what}); the hook does not "
                               "know that it only reads it"))
            break
    return out


def _sql_files(cmd: SimpleCommand, scope: Scope,
               sql_finding: Callable[[str], Finding | None]) -> list[Finding]:
    """SQL files a database shell runs: read and judged; unreadable ones by their name."""
    names = [cmd.args[i + 1] for i, a in enumerate(cmd.args[:-1]) if a in _SQL_FILE_OPTIONS]
    names += [t for op, t in cmd.redirects if op == "<"]
    names += [w.split(None, 1)[1] for w in cmd.args if w.startswith((".read ", "\\i ", "source "))
              and len(w.split(None, 1)) == 2]
    out: list[Finding] = []
    for line in [*cmd.args, *(cmd.stdin_code or "").splitlines()]:  # sqlite3 `.output F`
        m = re.match(r"\s*\.(output|once|save|backup|excel)\s+(?:--?\w+\s+)*['\"]?([^'\"\s;]+)",
                     line)
        if m and (f := scope.write_finding(m.group(2), verb=f"{cmd.program} .{m.group(1)} writes")):
            out.append(f)
    for name in names:
        path = scope.resolve(name)
        text = None
        if path:
            try:  # bounded, never blocks on a FIFO; not a regular file: unreadable
                data = read_bytes(path, 262144)
                text = data.decode("utf-8", "replace") if data is not None else None
            except StateFileError:
                text = None
        finding = sql_finding(text) if text is not None else (
            Finding("destruction", "sql-file", f"{cmd.program} runs {name}, a file the hook "
                    "cannot read whose name says it deletes data")
            if _DELETING_NAME.search(os.path.basename(name)) else None)
        if finding:
            out.append(finding)
    return out
