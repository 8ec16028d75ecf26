"""Dangerous Bash commands: what the hook denies (or asks about) without a checkpoint plan.

Each rule names its policy group. Decisions and the false positives they avoid:

- `rm -r`/`-rf`/`-r -f`/`--recursive` (force or not) and `find ... -delete|-exec rm`: only
  when a target is `/`, home or above, the workspace root or above, `.git`, an unresolvable
  path (`$VAR/`, `$(...)`), or outside the workspace (see `scope.py`). `rm -rf ./build` in
  the workspace and `rm -rf /tmp/x` are fine. A `cd dir &&` earlier in the line is followed.
- git: see `git_rules.py`; infrastructure, cloud, containers, packages: `cli_rules.py`.
- SQL (`DROP TABLE|DATABASE|SCHEMA...`, `TRUNCATE`, `DELETE FROM t`/`UPDATE t SET` without
  `WHERE`, `ALTER TABLE ... DROP`) only when a database client runs in the same command line
  (`psql`, `mysql`, `sqlite3`, ...): `grep "DROP TABLE" schema.sql` is not gated.
- Reading secrets is gated only for commands that print files (`cat .env`, `base64
  id_rsa`); `cat .env.example` and `source .env` are not.
Standard library only.
"""

from __future__ import annotations

import os
import re

from massgen_mcp.hook import effect_rules, writers
from massgen_mcp.hook.capability import opaque, reads_recursively, unknown_dir_use
from massgen_mcp.hook.channels import download_targets
from massgen_mcp.hook.cli_rules import cli_findings
from massgen_mcp.hook.command import SimpleCommand, shell_script, wordset
from massgen_mcp.hook.deploy_rules import deploy_findings
from massgen_mcp.hook.expand import FRESH_TEMP
from massgen_mcp.hook.file_rules import file_findings, secret_sources
from massgen_mcp.hook.git_rules import git_findings
from massgen_mcp.hook.interp_rules import code_findings, interpreter, reads_code_from_stdin
from massgen_mcp.hook.lexer import UNKNOWN
from massgen_mcp.hook.policy import Finding
from massgen_mcp.hook.programs import FILTERS, GREPS, READERS
from massgen_mcp.hook.reach_rules import reach_findings
from massgen_mcp.hook.scope import UNKNOWN_CWD, Scope, holds_secrets, is_under, secret_kind
from massgen_mcp.hook.secret_search import pipeline_reach, read_operands
from massgen_mcp.hook.shell import SHELLS, analyse
from massgen_mcp.hook.sql_rules import BARE_LONG, sql_finding
from massgen_mcp.regex import lazy

_DB_CLIENTS = wordset(
    "psql mysql mariadb sqlite3 sqlite sqlcmd clickhouse clickhouse-client cockroach duckdb "
    "mongosh mongo cqlsh snowsql bq sqlplus usql pgcli mycli litecli turso dbshell"
)
#: Programs that may print a secret file they are given (or copy it to the clipboard).
_PRINTERS = READERS | GREPS | FILTERS | wordset("ag pbcopy xclip")
#: Programs that take a secret file without printing it (load it, check it, use it as a
#: key, delete it): the rest may print what they read.
_USES_SECRETS_QUIETLY = wordset(
    "source . ls stat test [ [[ touch chmod chown chgrp file du realpath readlink basename "
    "dirname mkdir rm shred unlink ln cp mv install rsync scp sftp ssh ssh-add ssh-keygen git "
    "docker docker-compose podman sops dotenv direnv chattr lsattr getfacl setfacl truncate "
    "echo printf vim vi nvim nano emacs code subl open sudoedit gpg age openssl tar zip 7z "
    "gzip bzip2 xz zstd cd pushd find fd wc cmp-quiet export unset kubectl helm terraform "
    "tofu ansible ansible-playbook ansible-vault gcloud aws az curl wget nc ncat netcat socat")
_NETWORK = wordset(
    "curl wget nc ncat netcat socat scp sftp rsync ftp telnet http https xh ssh"
)
_USES_CREDENTIAL = frozenset({"-i", "--cert", "-E", "--key", "--cacert", "--proxy-cert",
                              "--proxy-key", "--identity-file"})
_MAILERS = wordset("sendmail mail mailx mutt swaks msmtp")
_FIND_FILTERS = wordset(
    "-name -iname -path -ipath -regex -iregex -type -newer -mtime -mmin -atime -amin -size "
    "-empty -user -group -perm -wholename"
)
_REMOTE_PATH = lazy(r"^([\w.-]+@)?[\w.-]+:(?!//)")

#: Inline code that loads a database driver runs its SQL (`python3 -c "..sqlite3..DROP.."`).
_DB_DRIVER = lazy(r"\b(sqlite3|psycopg2?|pymysql|MySQLdb|sqlalchemy|asyncpg|duckdb"
                        r"|better-sqlite3|mysql2|ActiveRecord|Sequel|DBI)\b")
_REGEX_RULES: tuple[tuple[str, str, re.Pattern[str], str], ...] = (
    ("supply_chain", "run-download",
     lazy(r"\b((ba|z|k|da)?sh|source|\.)\s+<\(\s*(curl|wget)\b|\b(eval|(ba|z|k|da)?sh"
                r"\s+-c|python[0-9.]*\s+-c)\s+[\"']?(\$\(|`)\s*(curl|wget)\b", re.I),
     "runs a download through process or command substitution"),
    ("access_control", "hooks-path", lazy(r"core\.hooksPath|init\.templateDir", re.I),
     "points git's hooks (or the template new clones copy them from) elsewhere"),
    ("external_comms", "messaging-api",
     lazy(r"(hooks\.slack\.com|slack\.com/api/chat\.|discord(app)?\.com/api/webhooks"
                r"|api\.twilio\.com|api\.sendgrid\.com|api\.mailgun\.net|api\.postmarkapp\.com"
                r"|api\.telegram\.org/bot|webhook\.office\.com|api\.resend\.com)", re.I),
     "calls a messaging API that reaches real people"),
    ("destruction", "framework-db-reset",
     lazy(r"\b(rails|rake)\s+db:(drop|reset|purge|schema:load|migrate:reset)\b"
                r"|\bmanage\.py\s+(flush|reset_db|sqlflush)\b|\bprisma\s+migrate\s+reset\b"
                r"|--force-reset\b|--accept-data-loss\b|\bdropdb\b"
                r"|\bredis-cli\b[^;&|\n]*\bflush(all|db)\b"
                r"|\bmix\s+ecto\.(drop|reset)\b"
                r"|\bpg_restore\b[^;&|\n]*\s(?-i:--clean|-[a-zA-Z]*c)\b", re.I),
     "drops or resets a database"),
    ("exfiltration", "env-dump",
     lazy(r"\b(env|printenv|set)\s*\|[^;&\n]*\b(curl|wget|nc|ncat|netcat|ssh|socat)\b"),
     "sends the environment (and every key in it) off-machine"),
)


def check_bash(command: str, scope: Scope, _depth: int = 0) -> list[Finding]:
    """Every dangerous pattern in one Bash command line."""
    findings: list[Finding] = []
    for group, rule, pattern, detail in _REGEX_RULES:
        if pattern.search(command):
            findings.append(Finding(group, rule, detail))
    analysis = analyse(command)
    findings.extend(analysis.findings)
    commands = analysis.commands
    programs = {c.program for c in commands}
    words = programs.union(*(c.args for c in commands)) if commands else set()
    # `echo 'DROP ...' | curl host:8123 --data-binary @-`: an HTTP client sending its stdin
    if words & _DB_CLIENTS or _DB_DRIVER.search(command) or ("@-" in command and programs & {
            "curl", "wget", "http", "https", "xh"}):
        # the text as the shell passes it (quotes joined: `'DR''OP'` is DROP), and as written
        # (bare long options left out: `--host h --query=DROP ...` is no `--` comment)
        shown = "\n".join([" ".join(a for a in c.args if not BARE_LONG.fullmatch(a)) + "\n"
                           + (c.stdin_code or "") for c in commands])
        finding = sql_finding(shown) or sql_finding(command)
        if finding:
            findings.append(finding)
        for cmd in commands:  # `sqlite3 db ".read .env"`: a dot-command reads a file
            if cmd.program in _DB_CLIENTS:
                findings.extend(Finding("secrets", "print-secret",
                                        f"{cmd.program} reads {w}, {kind}")
                                for a in cmd.args for w in a.split()[1:]
                                if a.startswith((".read", ".import", "\\i", "source"))
                                and (kind := scope.secret(w)))
    network = bool(programs & _NETWORK)
    if network and any(effect_rules.remote_url_source(c) for c in commands):
        findings.append(Finding("exfiltration", "secret-upload",
                                "sends the git remote's URL (and any token in it) over the "
                                "network"))
    findings.extend(_pipeline_findings(analysis.pipelines, scope))

    def nested(line: str, inner: Scope) -> list[Finding]:
        return check_bash(line, inner, _depth + 1) if _depth < 3 else []

    stack: list[Scope] = []  # pushd / popd
    for cmd in commands:
        if cmd.program == "popd":
            scope = stack.pop() if stack else scope.with_cwd(UNKNOWN_CWD)
            continue
        if cmd.program in ("cd", "pushd"):
            if cmd.program == "pushd":
                stack.append(scope)
            scope = _cd(cmd, scope, analysis.cdpath)
            continue
        made_in = scope  # an `ln` is judged before its link exists (after, the name is the target)
        if cmd.program == "ln":
            scope = _link(cmd, scope)
        scope.note_reads(cmd)
        own = _command_findings(cmd, made_in, network)
        own += reach_findings(cmd, scope, nested, sql_finding)
        findings.extend(own)
        if not own and scope.cwd == UNKNOWN_CWD and (why := unknown_dir_use(cmd)):
            findings.append(Finding("exfiltration", "unknown-directory", why))
        if interpreter(cmd.program):
            findings.extend(code_findings(cmd, scope, nested))
    return _dedup(findings)


def _cd(cmd: SimpleCommand, scope: Scope, cdpath: bool) -> Scope:
    """Where a `cd` leaves the line; a directory the hook cannot determine is unknown."""
    pos = cmd.positionals()
    target = pos[0] if pos else "~"
    relative = not target.startswith(("/", "~", "./", "../")) and target not in (".", "..")
    if target == "-" or (relative and (
            cdpath or os.environ.get("CDPATH"))):
        return scope.with_cwd(UNKNOWN_CWD)
    path = scope.resolve(target) if target != UNKNOWN else _known_dir(cmd, scope)
    if path and any(c in target for c in "*?["):
        # `cd mass*p`: where the shell lands is what the glob matches (one match), else
        # not known; a directory named through a glob is still that directory
        from massgen_mcp.hook.expand import glob_matches

        found = [p for p in glob_matches(target, scope.cwd, scope.home) if os.path.isdir(p)]
        return scope.with_cwd(found[0] if len(found) == 1 else UNKNOWN_CWD)
    if path and (os.path.isdir(path) or is_under(path, FRESH_TEMP)):
        return scope.with_cwd(path)
    # a directory that does not exist yet (`mkdir -p b && cd b`) is still where it points
    return scope.with_cwd(UNKNOWN_CWD) if path is None else scope.with_cwd(path)


def _known_dir(cmd: SimpleCommand, scope: Scope) -> str | None:
    """`cd "$(git rev-parse --show-toplevel)"` / `cd "$(pwd)"`: known without running git."""
    word = cmd.words[1] if len(cmd.words) > 1 else None
    if word is None or len(word.subs) != 1 or scope.cwd == UNKNOWN_CWD:
        return None
    text = " ".join(word.subs[0][1].split())
    if text == "pwd":
        return scope.cwd
    if text == "git rev-parse --show-toplevel":
        path = scope.cwd
        while not os.path.exists(os.path.join(path, ".git")):
            if os.path.dirname(path) == path:
                return None
            path = os.path.dirname(path)
        return path
    return None


def _link(cmd: SimpleCommand, scope: Scope) -> Scope:
    """`ln [-s] target link`: later paths through `link` reach `target`."""
    pos = [a for a in cmd.positionals()]
    if len(pos) < 2:
        return scope
    target, link = pos[0], pos[-1]
    dest = scope.resolve(link)
    if cmd.has_short_flag("s") or cmd.has_long("--symbolic"):
        base = os.path.dirname(dest) if dest and not os.path.isdir(dest) else dest
        source = (scope.resolve(os.path.join(base, target)) if base and not target.startswith(
            ("/", "~")) else scope.resolve(target))
    else:
        source = scope.resolve(target)
    if dest and os.path.isdir(dest):
        dest = os.path.join(dest, os.path.basename(target.rstrip("/")))
    return scope.with_link(dest, source) if dest and source else scope


def _pipeline_findings(pipelines: list[list[SimpleCommand]], scope: Scope) -> list[Finding]:
    """Code piped into an interpreter; secrets piped to the network."""
    out: list[Finding] = []
    for pipeline in pipelines:
        out.extend(pipeline_reach(pipeline, scope))
        download = False
        secrets: list[str] = []
        for cmd in pipeline:
            if cmd.pipe_stage and (_shell_reads_stdin(cmd) or reads_code_from_stdin(cmd)):
                detail = ("pipes a download straight into an interpreter" if download else
                          f"pipes code into {cmd.program}; the hook cannot see what it runs")
                out.append(Finding("supply_chain", "pipe-to-shell", detail))
            if cmd.program in _NETWORK:
                download = True
                if secrets:
                    out.append(Finding("exfiltration", "secret-upload",
                                       f"sends {secrets[0]} over the network with "
                                       f"{cmd.program}"))
            secrets.extend(p for p, _ in secret_sources(cmd, scope))
            if cmd.program in _PRINTERS:
                secrets.extend(p for p in cmd.positionals() if scope.secret(p))
            if effect_rules.env_dump(cmd) or effect_rules.secret_route(cmd):
                secrets.append("the environment")
    return out


def _shell_reads_stdin(cmd: SimpleCommand) -> bool:
    if cmd.program not in SHELLS:
        return False
    if shell_script(cmd) is not None:
        return False
    return cmd.has_short_flag("s") or not cmd.positionals()


def _dedup(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[str, str]] = set()
    out: list[Finding] = []
    for f in findings:
        if (f.rule, f.detail) not in seen:
            seen.add((f.rule, f.detail))
            out.append(f)
    return out


def _command_findings(cmd: SimpleCommand, scope: Scope, network: bool) -> list[Finding]:
    out: list[Finding | None] = []
    for op, target in cmd.redirects:
        if ">" in op:
            out.append(scope.write_finding(target, verb="redirects output to"))
        elif network and op == "<" and scope.secret(target):
            out.append(Finding("exfiltration", "secret-upload",
                               f"sends {target}, {scope.secret(target)}, over the network"))
        elif op == "<" and cmd.program not in SHELLS and cmd.program not in ("source", ".") \
                and (kind := scope.secret(target)):
            out.append(Finding("secrets", "print-secret",
                               f"feeds {target}, {kind}, to {cmd.program or 'the shell'}"))
    program, pos = cmd.program, cmd.positionals()
    # Every family judges every command: no rule can be shadowed by an earlier one.
    out.extend(file_findings(cmd, scope) or [])
    if program == "tee":
        out.extend(scope.write_finding(p) for p in pos)
    out.extend(scope.write_finding(t, verb=f"{program} writes") for t in writers.targets(cmd))
    if program == "find" and ("-delete" in cmd.args or _find_runs_rm(cmd)):
        start = _first_expr(cmd.args)
        filtered = any(a in _FIND_FILTERS for a in cmd.args[start:])
        for root in cmd.args[:start] or ["."]:
            finding = scope.delete_finding(root)
            # `find . -name '*.pyc' -delete` deletes matches, not the tree it searches.
            if finding and not (filtered and finding.rule in ("rm-workspace", "rm-git-dir")):
                out.append(finding)
    if program == "git":
        out.extend(git_findings(cmd, scope))
    if program not in _USES_SECRETS_QUIETLY:  # any reader may print what it reads
        out.extend(Finding("secrets", "print-secret",
                           f"{program} reads {p}, {kind}, and may print it into the transcript "
                           "(it goes to the model provider)") for p in read_operands(cmd)
                   if not p.startswith("-") and not _env_file_option(cmd, p)
                   and (kind := scope.secret(p)))
    if reads_recursively(cmd):
        out.extend(Finding("secrets", "print-secret", f"{program} reads {p} recursively, "
                           f"a directory holding {held}") for p in pos if not p.startswith("-")
                   and (where := scope.resolve(p)) and (held := holds_secrets(where, scope.home)))
    if (why := effect_rules.secret_route(cmd)) is not None:
        out.append(Finding("secrets", "print-secret", why))
    if program in ("echo", "printf", "printenv"):
        secret = next((a for a in cmd.args if re.search(
            r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", a)
            and (program == "printenv" or "$" in a)), None)
        if secret:
            out.append(Finding("secrets", "print-secret",
                               f"prints {secret} into the transcript"))
    if program in _MAILERS:
        out.append(Finding("external_comms", "mail", f"sends mail with {program}"))
    out.extend(cli_findings(cmd, scope))
    out.extend(deploy_findings(cmd))
    if "/" not in cmd.raw_program or scope.write_finding(cmd.raw_program) is not None:
        out.extend(Finding("supply_chain", "runs-code", why) for why in opaque(cmd))
    out.append(effect_rules.env_dump(cmd))
    out.extend(effect_rules.sed_findings(cmd, scope))
    out.extend(effect_rules.find_findings(cmd, scope))
    out.extend(effect_rules.device_findings(cmd))
    out.extend(effect_rules.publish_findings(cmd))
    if program in _NETWORK:
        out.extend(_network(cmd, scope))
    return [f for f in out if f is not None]


def _env_file_option(cmd: SimpleCommand, word: str) -> bool:
    """`--env-file .env`: the program loads the file into an environment, it does not
    print it (printers are judged whatever precedes the file)."""
    if cmd.program in _PRINTERS or word not in cmd.args:
        return False
    i = cmd.args.index(word)
    return i > 0 and bool(re.fullmatch(r"--?[\w-]*env[\w-]*", cmd.args[i - 1]))


def _first_expr(args: list[str]) -> int:
    for i, a in enumerate(args):
        if a.startswith(("-", "(", "!")):
            return i
    return len(args)


def _find_runs_rm(cmd: SimpleCommand) -> bool:
    for i, a in enumerate(cmd.args[:-1]):
        if a in ("-exec", "-execdir", "-ok") and cmd.args[i + 1].rsplit("/", 1)[-1] == "rm":
            return True
    return False


def _network(cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    out: list[Finding] = []
    for i, arg in enumerate(cmd.args):
        if (i and cmd.args[i - 1] in _USES_CREDENTIAL) or arg.split("=", 1)[0] in _USES_CREDENTIAL:
            continue  # `ssh -i key`, `curl --cert c.pem`: the key is used here, not sent
        candidate = arg.rsplit("@", 1)[-1].rsplit("=", 1)[-1] if "@" in arg else (
            arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg)
        kind = secret_kind(candidate) or (scope.secret(candidate) if candidate.startswith(
            ("/", ".", "~")) else None)
        if kind and not candidate.startswith(("http://", "https://")):
            out.append(Finding("exfiltration", "secret-upload",
                               f"sends {candidate}, {kind}, over the network with {cmd.program}"))
    for target in download_targets(cmd):  # `curl -o ~/.bashrc URL`: a download is a write
        out.extend(f for f in [scope.write_finding(target, verb=f"{cmd.program} writes")] if f)
    pos = cmd.positionals()
    if cmd.program in ("scp", "rsync") and len(pos) >= 2 and _REMOTE_PATH.match(pos[-1]):
        out.append(Finding("prod_infra", "remote-copy",
                           f"copies files to the remote host {pos[-1].split(':', 1)[0]}"))
    return out


