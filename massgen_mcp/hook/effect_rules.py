"""Rules about what a command does through its own little languages and modes.

- `sed`: its script can run commands (`e`, the `e` flag of `s///`) and write files (`w`,
  the `w` flag): the first is gated, the second judged as a write.
- environment dumps (`env`, `printenv`, `set`, `export -p`, `declare -x|-p`, `typeset`
  with nothing to run): they print every key into the transcript.
- `find`: `-fprint`/`-fprintf`/`-fls` write files; `-delete` and `-exec rm|chmod|chown`
  with no filter act on the whole tree, judged as the recursive form on each root; a
  name filter that matches `.git` is a delete of `.git`.
- devices: `wipefs`, `mkfs*`, `blkdiscard`, `sgdisk`, `fdisk`, `parted`, `shred`, `dd`
  on a block device.
- publishing: `npm|pnpm|yarn|bun publish` (npm's abbreviations too) unless a dry run is
  really requested (`--dry-run`, not `--dry-run=false`), `twine upload`, `cargo publish`,
  `gem push`, `poetry|uv|flit|hatch publish`; image pushes (`docker push`, `docker image
  push`, `buildx build --push`, `podman push`).
Standard library only.
"""

from __future__ import annotations

import re

from massgen_mcp.hook.command import SimpleCommand, wordset
from massgen_mcp.hook.policy import Finding
from massgen_mcp.hook.programs import FILTERS, GREPS, READERS
from massgen_mcp.hook.scope import Scope
from massgen_mcp.regex import lazy

_DUMPERS = frozenset({"env", "printenv", "set", "export", "declare", "typeset"})
_DEVICE_TOOLS = lazy(r"^(wipefs|mkfs(\..*)?|mke2fs|mkswap|blkdiscard|sgdisk|fdisk|sfdisk"
                           r"|parted|cfdisk|badblocks|hdparm|nvme|dd|shred|cryptsetup)$")
_BLOCK = lazy(r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|md|dm-|loop|disk|mapper/|sr|nbd)")
_PUBLISHERS = {"twine": "upload", "cargo": "publish", "gem": "push", "poetry": "publish",
               "uv": "publish", "flit": "publish", "hatch": "publish", "nuget": "push"}
# Any tool's `publish`/`upload` subcommand sends a package to a registry or a store (`pdm
# publish`, `vsce publish`, `cabal upload`, `lerna publish`): the next packaging tool uses the
# same words, so no list of tools. After a group word: `dart pub publish`, `dotnet nuget push`.
_PUBLISH_WORDS = frozenset({"publish", "upload", "hex.publish"})
_PUBLISH_GROUPS = {"pub": "publish", "nuget": "push", "package-registry": "publish"}
_BUILDS_LOCALLY = frozenset({"dotnet"})  # `dotnet publish` writes a folder to deploy from
_RELEASERS = frozenset({"semantic-release", "release-it"})  # tag, publish, announce
_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})
_FIND_FILTERS = wordset(
    "-name -iname -path -ipath -regex -iregex -type -newer -mtime -mmin -atime -amin -size "
    "-empty -user -group -perm -wholename -iwholename -links -samefile -inum")


def env_dump(cmd: SimpleCommand) -> Finding | None:
    """A command that prints the whole environment."""
    program, args = cmd.program, cmd.args
    if program not in _DUMPERS:
        return None
    found = Finding("secrets", "env-dump", f"`{' '.join([program, *args])[:40]}` prints the "
                    "environment, and every key in it, into the transcript")
    if program == "env":
        rest = [a for a in args if not a.startswith("-")]
        return found if not any("=" not in a for a in rest) else None
    if program == "printenv":
        return found if not [a for a in args if not a.startswith("-")] else None
    if program == "set":
        return found if not args else None
    if program == "export":
        return found if not args or args == ["-p"] else None
    # declare / typeset: with only print flags (-p, -x, -r, ...) and no names
    if all(a.startswith("-") and "f" not in a for a in args):
        return found
    return None


#: Commands whose job is to print a credential (a token, a password, a session key).
_CREDENTIAL_PRINTERS = (
    "gcloud auth print-access-token", "gcloud auth print-identity-token",
    "gcloud auth application-default print-access-token", "az account get-access-token",
    "aws sts get-session-token", "aws configure get", "aws ecr get-login-password",
    "heroku auth:token", "op read", "op item get", "pass show", "gopass show", "bw get",
    "vault kv get", "vault read", "secret-tool lookup", "doctl auth token", "fly auth token",
    "flyctl auth token", "npm token list", "glab auth status", "kubectl create token",
    "gh auth token", "docker-credential-desktop get", "git credential-manager get",
    "keyring get", "lpass show")
_JQ_ENV = lazy(r"(?<![.\w$])env\b(?!\s*\.)|\$ENV\b(?!\s*\.)|\$__prog_env\b")
_REMOTE_URL = lazy(r"^remote\..*\.(url|pushurl)$|^url\.")


def secret_route(cmd: SimpleCommand) -> str | None:
    """Secrets printed by routes other than reading a secret file: awk over ENVIRON, jq's
    `env`, GitHub's token, git's stored credentials."""
    program, args = cmd.program, cmd.args
    if program in ("awk", "gawk", "mawk", "nawk") and any(
            re.search(r"\bin\s+ENVIRON\b|\bPROCINFO\b", a) for a in args):
        return f"{program} walks ENVIRON and prints the environment (every key in it)"
    if program in ("jq", "gojq", "jaq") and any(_JQ_ENV.search(a) for a in args
                                                if not a.startswith("-")):
        return f"{program} prints the environment (`env` / `$ENV`, every key in it)"
    pos = cmd.positionals()
    joined = " ".join([program, *pos[:3]])
    printer = next((p for p in _CREDENTIAL_PRINTERS if joined == p or joined.startswith(p + " ")),
                   None)
    if printer or (program == "security" and pos[:1] and "password" in pos[0]
                   and cmd.has_short_flag("w")):
        return f"`{printer or 'security ... -w'}` prints a stored credential or token"
    if program in ("gpg", "gpg2") and any(a.startswith(("--export-secret", "--export-ssh-key"))
                                          for a in args):
        return f"{program} exports a secret key"
    if program == "ps" and any(not a.startswith("-") and "e" in a and a.isalpha()
                               for a in args[:1]):
        return "ps with `e` prints every process's environment (and the keys in it)"
    if program in ("kubectl", "oc") and pos[:2] == ["config", "view"] and (
            flag := next((a for a in args if a.split("=")[0] in ("--raw", "--flatten")), None)):
        return f"{program} config view {flag} prints cluster credentials"
    if (program == "gh" and pos[:2] == ["auth", "token"]) or (
            program == "gh" and pos[:2] == ["auth", "status"] and (
                "-t" in args or "--show-token" in args)):
        return "gh prints the GitHub token into the transcript"
    if program in ("npm", "pnpm", "yarn") and pos[:2] in (["config", "get"], ["get"]) and any(
            _AUTH_SETTING.search(p) for p in pos[1:]):
        return f"{program} config get prints a registry credential"
    if program in _PRINTS_OPERANDS and (body := next(
            (b for w in cmd.words[1:] for kind, b in w.subs
             if kind == "cmd" and _LISTS_SECRETS.search(b)), None)):
        return f"{program} reads the files `$({body[:40]})` lists, which may name secrets"
    return None


_AUTH_SETTING = lazy(r"(?i)auth|token|password|_pass\b")
#: Readers whose file operands may come from a substitution (`cat $(ls -a | grep env)`).
_PRINTS_OPERANDS = READERS | GREPS | FILTERS | wordset("paste column tr diff ag ack")
#: A substitution that lists files and may name secret ones: by a secret-ish name, or by
#: listing hidden files (`ls -a`, `fd -H`, `find` with no name filter).
_LISTS_SECRETS = lazy(
    r"(?i)\.env|\benv\b|secret|cred|token|passw|\bkeys?\b|\.key\b|\.pem|netrc|npmrc|pypirc|"
    r"\.ssh|\.aws|\.kube|id_(?:rsa|ed25519|ecdsa)|\bls\s+-\w*[aA]|\bfd\b.*\s-(?:H|-hidden)|"
    r"\bfind\b(?!.*\s-i?(?:name|path|regex)\s)|\^\\?\.")


def remote_url_source(cmd: SimpleCommand) -> bool:
    """Does the command print a git remote's URL (which may carry a token)?"""
    if cmd.program != "git":
        return False
    pos = cmd.positionals()
    return (pos[:2] in (["remote", "get-url"], ["remote", "show"]) or (
        pos[:1] == ["remote"] and "-v" in cmd.args) or (pos[:1] == ["config"] and any(
            _REMOTE_URL.match(p) for p in pos[1:])) or (pos[:1] == ["ls-remote"]
                                                       and "--get-url" in cmd.args))


def _sed_scripts(cmd: SimpleCommand) -> list[str]:
    args, scripts, explicit = cmd.args, [], False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-e", "--expression") and i + 1 < len(args):
            scripts.append(args[i + 1])
            explicit = True
            i += 2
            continue
        if arg.startswith("--expression="):
            scripts.append(arg.split("=", 1)[1])
            explicit = True
        elif arg in ("-f", "--file"):
            explicit = True
            i += 1
        elif arg.startswith("--file="):
            explicit = True
        elif not arg.startswith("-") and not explicit and not scripts:
            scripts.append(arg)
            explicit = True
        i += 1
    return scripts


def _sed_commands(script: str) -> list[str]:
    """The commands of a sed script, addresses stripped (roughly; `;` and newlines)."""
    out = []
    for part in re.split(r"[;\n]", script):
        part = part.strip()
        part = re.sub(r"^(\d+|\$|/(?:[^/\\]|\\.)*/)(,(\d+|\$|/(?:[^/\\]|\\.)*/|[+~]\d+))?!?\s*",
                      "", part)
        part = part.lstrip("{} ")
        if part:
            out.append(part)
    return out


def sed_findings(cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    if cmd.program not in ("sed", "gsed") or "--sandbox" in cmd.args:
        return []
    out: list[Finding] = []
    for script in _sed_scripts(cmd):
        for command in _sed_commands(script):
            head = command[0]
            if head == "e":
                out.append(Finding("supply_chain", "sed-exec",
                                   f"sed runs a shell command (`{command[:40]}`)"))
            elif head in "wW" and len(command) > 1:
                finding = scope.write_finding(command[1:].strip(), verb="sed writes")
                if finding:
                    out.append(finding)
            elif head == "s" and len(command) > 1:
                delim = re.escape(command[1])
                m = re.match(rf"s{delim}(?:[^\\]|\\.)*?{delim}(?:[^\\]|\\.)*?{delim}(.*)$",
                             command, re.S)
                flags = m.group(1) if m else ""
                if "e" in flags.split("w", 1)[0]:
                    out.append(Finding("supply_chain", "sed-exec",
                                       "sed's `e` flag runs each substitution as a command"))
                if "w" in flags:
                    target = flags.split("w", 1)[1].strip()
                    finding = scope.write_finding(target, verb="sed writes") if target else None
                    if finding:
                        out.append(finding)
    return out


def find_findings(cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    if cmd.program != "find":
        return []
    args = cmd.args
    start = next((i for i, a in enumerate(args) if a.startswith(("-", "(", "!"))), len(args))
    roots = args[:start] or ["."]
    out: list[Finding] = []
    for i, arg in enumerate(args[:-1]):
        if arg in _FIND_WRITES:
            finding = scope.write_finding(args[i + 1], verb=f"find {arg} writes")
            if finding:
                out.append(finding)
    expr = args[start:]
    filters = [expr[i + 1] for i, a in enumerate(expr[:-1]) if a in _FIND_FILTERS]
    names = [expr[i + 1] for i, a in enumerate(expr[:-1]) if a in (
        "-name", "-iname", "-path", "-ipath", "-wholename")]
    acts = [expr[i + 1].rsplit("/", 1)[-1] for i, a in enumerate(expr[:-1])
            if a in ("-exec", "-execdir", "-ok", "-okdir")]
    # emptying or overwriting every file found loses them like a delete does
    deletes = "-delete" in expr or bool({"rm", "unlink", "shred", "truncate", "srm"} & set(acts))
    if deletes and any(re.fullmatch(_glob_to_re(n), ".git") or n.endswith("/.git")
                       for n in names):
        out.append(Finding("source_control", "rm-git-dir",
                           "find deletes what matches .git: the repository's .git directory"))
    trivial = all(f in ("*", "f", "d", "*/*") for f in filters)
    if trivial and (set(acts) & {"chmod", "chown", "chgrp", "setfacl"}):
        for act in set(acts) & {"chmod", "chown", "chgrp", "setfacl"}:
            i = expr.index(next(a for a in expr if a.rsplit("/", 1)[-1] == act))
            end = next((j for j in range(i, len(expr)) if expr[j] in (";", "+")), len(expr))
            mode = [a for a in expr[i + 1:end] if a != "{}" and not a.startswith("-")]
            inner = SimpleCommand(act, ["-R", *mode[:1], *roots])
            from massgen_mcp.hook.cli_rules import cli_findings

            out.extend(cli_findings(inner, scope))
    if trivial and deletes:
        for root in roots:
            finding = scope.delete_finding(root)
            if finding:
                out.append(finding)
    return out


def _glob_to_re(pattern: str) -> str:
    import fnmatch

    return fnmatch.translate(pattern)


def device_findings(cmd: SimpleCommand) -> list[Finding]:
    if not _DEVICE_TOOLS.match(cmd.program):
        return []
    targets = [a.split("=", 1)[1] if a.startswith(("of=", "if=")) and cmd.program == "dd"
               else a for a in cmd.args]
    targets = [t for t in targets if _BLOCK.match(t)]
    if cmd.program == "dd":
        targets = [a[3:] for a in cmd.args if a.startswith("of=") and _BLOCK.match(a[3:])]
    if not targets:
        return []
    return [Finding("destruction", "disk-overwrite",
                    f"{cmd.program} writes the block device {targets[0]}")]


def _npm_publishes(cmd: SimpleCommand) -> bool:
    args = cmd.args
    pos: list[str] = []
    dry = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("--dry-run"):
            value = arg.split("=", 1)[1] if "=" in arg else None
            if value is None and i + 1 < len(args) and args[i + 1] in ("true", "false"):
                value = args[i + 1]
                i += 1
            dry = value in (None, "true", "")
        elif not arg.startswith("-"):
            pos.append(arg)
        i += 1
    if cmd.program == "yarn" and pos[:1] == ["npm"]:
        pos = pos[1:]
    sub = pos[0] if pos else ""
    # unpublish, deprecate, dist-tag add/rm, owner: they change what the registry serves
    changes = sub in ("unpublish", "deprecate", "undeprecate", "owner") or (
        sub in ("dist-tag", "dist-tags") and pos[1:2] in (["add"], ["rm"]))
    return ((len(sub) >= 2 and "publish".startswith(sub)) or changes) and not dry


def publish_findings(cmd: SimpleCommand) -> list[Finding]:
    program, pos = cmd.program, cmd.positionals()  # `python -m twine`: judged as twine
    if program in ("npm", "pnpm", "yarn", "bun") and _npm_publishes(cmd):
        return [Finding("external_comms", "publish",
                        f"{program} publishes a package to a public registry")]
    if program in _PUBLISHERS and pos[:1] == [_PUBLISHERS[program]] and "--dry-run" not in (
            cmd.args):
        return [Finding("external_comms", "publish",
                        f"{program} {pos[0]} publishes a package to a public registry")]
    dry = any(a.split("=", 1)[0] == "--dry-run" and not a.endswith("=false") for a in cmd.args)
    if pos and pos[0] in _PUBLISH_GROUPS:
        words, publishes = pos[:2], pos[1:2] == [_PUBLISH_GROUPS[pos[0]]]
    else:
        words = pos[:1]
        publishes = bool(pos) and pos[0] in _PUBLISH_WORDS and program not in _BUILDS_LOCALLY
    if publishes and not dry:
        return [Finding("external_comms", "publish",
                        f"{program} {' '.join(words)} publishes or uploads to a registry or "
                        "store")]
    if not dry and (program in _RELEASERS or (program == "goreleaser" and pos[:1] == [
            "release"] and "--snapshot" not in cmd.args)):
        return [Finding("external_comms", "publish",
                        f"{program} tags and publishes a release")]
    if program in ("docker", "podman", "nerdctl", "buildah"):
        head = pos[:2]
        if head[:1] == ["push"] or head in (["image", "push"], ["manifest", "push"],
                                            ["compose", "push"]) or (
                head[:1] in (["buildx"], ["build"], ["builder"]) and (
                    "--push" in cmd.args or any(a.startswith("--output=type=registry")
                                                or a == "type=registry" for a in cmd.args))):
            return [Finding("external_comms", "publish", "pushes an image to a registry")]
    return []
