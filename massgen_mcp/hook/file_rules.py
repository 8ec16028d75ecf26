"""Commands that delete, move, overwrite or copy files. Standard library only.

- `rm -r` (and `find -delete`, in `bash_rules.py`): see `Scope.delete_finding`. A plain
  `rm` is gated only outside the workspace and temp dirs (`rm ~/.bashrc`); an `rm -r` fed
  by `xargs` has targets the hook cannot see, so it is gated.
- `mv` takes its sources away: a source is judged as a recursive delete (`mv ~ /tmp/x`),
  the destination as a write. `rsync --delete*` empties the destination of what the source
  lacks: judged as deleting the destination's contents. `shred` and `unlink` destroy
  their targets; `truncate` and `dd of=` overwrite theirs.
- Copying or packing a secret (`cp .env /tmp/x`, `tar -czf - ~/.ssh`) is gated: the copy
  escapes the protections of the original (and `tar ... | curl` sends it).
"""

from __future__ import annotations

import re

from massgen_mcp.hook.command import SimpleCommand, wordset
from massgen_mcp.hook.lexer import UNKNOWN
from massgen_mcp.hook.policy import Finding
from massgen_mcp.hook.scope import _TEMPLATE_ENV, Scope, is_under, secret_kind

_COPIERS = wordset("cp mv install ln rsync scp rclone ditto")
ARCHIVERS = wordset("tar zip 7z 7za gzip bzip2 xz zstd cpio gpg openssl age rar pax")
_VALUE_OPTIONS = {
    "truncate": frozenset({"-s", "--size", "-r", "--reference"}),
    "shred": frozenset({"-n", "--iterations", "-s", "--size", "--random-source"}),
    "tar": frozenset({"-f", "--file", "-C", "--directory", "-T", "--files-from", "-X",
                      "--exclude-from", "-b", "-H", "--format"}),
    "rsync": frozenset({"-e", "--rsh", "--exclude", "--include", "--filter", "-f",
                        "--exclude-from", "--include-from", "--files-from", "--backup-dir",
                        "--chmod", "--log-file", "--partial-dir", "-T", "--temp-dir"}),
    "cp": frozenset({"-t", "--target-directory", "-S", "--suffix"}),
    "mv": frozenset({"-t", "--target-directory", "-S", "--suffix"}),
    "zip": frozenset({"-x", "-i", "-P", "--password"}),
}


def inline_arg(cmd: SimpleCommand) -> str | None:
    """The code argument of `perl -pi -e CODE` (not a file it edits)."""
    for i, arg in enumerate(cmd.args[:-1]):
        if arg.startswith("-") and not arg.startswith("--") and arg.endswith(("e", "E")):
            return cmd.args[i + 1]
    return None


def operands(cmd: SimpleCommand) -> list[str]:
    """Non-option arguments, skipping the values of options that take one."""
    takes = _VALUE_OPTIONS.get(cmd.program, frozenset())
    out: list[str] = []
    skip = after_dashes = False
    for arg in cmd.args:
        if skip:
            skip = False
        elif after_dashes or not arg.startswith("-") or arg == "-":
            out.append(arg)
        elif arg == "--":
            after_dashes = True
        elif arg in takes:
            skip = True
    return out


def recursive(cmd: SimpleCommand) -> bool:
    return cmd.has_short_flag("r") or cmd.has_short_flag("R") or cmd.has_long("--recursive")


def secret_sources(cmd: SimpleCommand, scope: Scope | None = None) -> list[tuple[str, str]]:
    """(path, kind) of secrets a copying or packing command reads (`.` after `cd ~/.ssh`
    included, when the scope the line moved to is given)."""
    if cmd.program not in _COPIERS and cmd.program not in ARCHIVERS:
        return []
    if cmd.program == "openssl" and cmd.args[:1] in (["x509"], ["verify"], ["crl"], ["req"]):
        return []  # reads a certificate (public) and prints its fields
    pos = operands(cmd)
    sources = pos[:-1] if cmd.program in _COPIERS and len(pos) >= 2 else pos
    return [(p, kind) for p in sources
            if (kind := secret_kind(p) or (scope.secret(p) if scope else None))]


def file_findings(cmd: SimpleCommand, scope: Scope) -> list[Finding | None] | None:
    """Findings of a file command, or None if `cmd` is not one this module judges."""
    program, pos = cmd.program, operands(cmd)
    out: list[Finding | None] = [
        Finding("secrets", "copy-secret", f"{program} copies {p}, {kind}: the copy escapes "
                "its protections") for p, kind in secret_sources(cmd, scope)]
    if program == "rm":
        if recursive(cmd):
            targets = [*pos, UNKNOWN] if cmd.from_xargs else pos
            out.extend(scope.delete_finding(p) for p in targets)
        else:
            out.extend(f for p in pos if UNKNOWN not in p
                       and (f := scope.delete_finding(p)) and f.rule in (
                           "rm-outside-workspace", "guardrail-file"))
    target_dir = _option_value(cmd, ("-t", "--target-directory"))
    if program in ("cp", "mv", "install", "ln") and target_dir is not None:
        out.append(scope.write_finding(target_dir, verb=f"{program} writes into"))
        if program == "mv":
            out.extend(scope.delete_finding(p) for p in pos)
    elif program == "mv":
        if len(pos) >= 2:
            out.extend(scope.delete_finding(p) for p in pos[:-1])
            out.append(scope.write_finding(pos[-1], verb="mv writes"))
    elif program in ("cp", "install", "ln") and len(pos) >= 2:
        written = scope.write_finding(pos[-1], verb=f"{program} writes")
        if not (written and written.rule == "secret-file" and program == "cp"
                and all(_TEMPLATE_ENV.match(p.rsplit("/", 1)[-1]) for p in pos[:-1])
                and (dest := scope.resolve(pos[-1])) and is_under(dest, scope.workspace)):
            out.append(written)  # `cp .env.example .env`: the setup step, no secret in it
        if program == "ln" and cmd.has_short_flag("s"):
            # a link to home or above: deleting through it later deletes that
            out.extend(f for p in pos[:-1] if (f := scope.delete_finding(p))
                       and f.rule in ("rm-root-or-home", "rm-workspace"))
    elif program in ("sed", "perl") and (cmd.has_short_flag("i") or cmd.has_long(
            "--in-place")):
        scripted = "-e" in cmd.args or "-f" in cmd.args or program == "perl"
        files = pos if scripted and program == "sed" else pos[1:] if program == "sed" else [
            p for p in pos if p != (inline_arg(cmd) or "")]
        out.extend(scope.write_finding(p, verb=f"{program} -i edits") for p in files)
    elif program == "rsync":
        local = [p for p in pos if ":" not in p.split("/", 1)[0]]
        if len(pos) >= 2 and pos[-1] in local and any(
                a.startswith("--delete") or a == "--remove-source-files" for a in cmd.args):
            out.append(scope.delete_finding(pos[-1].rstrip("/") + "/*"))
        elif len(pos) >= 2 and pos[-1] in local:
            out.append(scope.write_finding(pos[-1], verb="rsync writes"))
    elif program in ("shred", "unlink", "srm", "wipe"):
        out.extend(scope.delete_finding(p) for p in pos)
    elif program in ("truncate", "fallocate"):
        out.extend(scope.write_finding(p, verb=f"{program} overwrites") for p in pos)
    elif program == "dd":
        out.extend(scope.write_finding(a[3:], verb="dd overwrites") for a in cmd.args
                   if a.startswith("of=") and not a.startswith("of=/dev/"))
    elif program in ("tar", "bsdtar") and _extracts(cmd):
        where = _option_value(cmd, ("-C", "--directory"))
        out.append(scope.write_finding(where or ".", verb="tar extracts into"))
    elif program in ("tar", "bsdtar", "zip", "7z") and (archive := _archive(cmd)) is not None:
        out.append(scope.write_finding(archive, verb=f"{program} writes"))
    elif program == "unzip" and not any(a in ("-l", "-t", "-p", "-Z", "-v") for a in cmd.args):
        where = _option_value(cmd, ("-d",))  # none: into the current directory
        out.append(scope.write_finding(where or ".", verb="unzip extracts into"))
    elif program == "patch" and (cmd.has_short_flag("R") or cmd.has_long("--reverse")) and not (
            cmd.has_long("--dry-run")):  # `git diff | patch -R -p1`: `git apply -R` by another name
        out.append(Finding("destruction", "git-discard", "patch -R undoes a patch in the working "
                           "tree (fed `git diff`, it throws away uncommitted changes)"))
    elif not out:
        return None
    return out


def _option_value(cmd: SimpleCommand, names: tuple[str, ...]) -> str | None:
    """The value of an option (`-t dir`, `--target-directory=dir`, `-Cdir`), or None."""
    args = cmd.args
    for i, arg in enumerate(args):
        if arg == "--":
            return None
        if arg in names:
            return args[i + 1] if i + 1 < len(args) else None
        for name in names:
            if name.startswith("--") and arg.startswith(name + "="):
                return arg[len(name) + 1:]
            if not name.startswith("--") and arg.startswith(name) and len(arg) > 2 and \
                    cmd.program != "tar":
                return arg[2:]
        if cmd.program == "tar" and re.fullmatch(r"-[A-Za-z]*C", arg) and i + 1 < len(args):
            return args[i + 1]  # `-xzC dir`: C ends the cluster, its value follows
    return None


def _archive(cmd: SimpleCommand) -> str | None:
    """The archive a creating `tar -cf X` / `zip X ...` writes (not `-` for stdout)."""
    if cmd.program == "zip":
        pos = operands(cmd)
        return pos[0] if pos else None
    if cmd.program == "7z":
        pos = operands(cmd)
        return pos[1] if len(pos) > 1 and pos[0] in ("a", "u") else None
    first = cmd.args[0] if cmd.args else ""
    creating = (not first.startswith("-") and "c" in first) or any(
        a == "--create" or (re.fullmatch(r"-[A-Za-z]+", a) and "c" in a) for a in cmd.args)
    if not creating:
        return None
    for i, arg in enumerate(cmd.args):
        if arg.startswith("--file="):
            value = arg[7:]
        elif (arg == "--file" or (re.fullmatch(r"-?[A-Za-z]*f", arg) and (
                i == 0 or arg.startswith("-")))) and i + 1 < len(cmd.args):
            value = cmd.args[i + 1]
        else:
            continue
        return None if value == "-" else value
    return None


def _extracts(cmd: SimpleCommand) -> bool:
    first = cmd.args[0] if cmd.args else ""
    return (not first.startswith("-") and "x" in first) or any(
        a in ("--extract", "--get") or (re.fullmatch(r"-[A-Za-z]+", a) and "x" in a)
        for a in cmd.args)
