"""The hardline policy: what no checkpoint plan can approve. Standard library only.

    delete-system  deleting /, a home directory or what holds one, a system tree (/etc,
                   /usr, /bin, ...) or anything in one, or the repository's `.git`
    device-write   writing to a disk or other device (`/dev/sda`; `/dev/null` is fine)
    guard          touching the guard itself: reading or writing the signing key and the
                   signed active plans (the key directory), writing the checkpoint state,
                   the Claude Code settings that register the hook or the hook's own
                   program, and running massgen-mcp's code (which holds the key) from a call
    secret         reading or sending a secret: the Read tool on a secret file, printing,
                   copying or uploading one, sending the environment over the network
    operator       what the operator added in `<key dir>/hardline.txt`

The plan validator rejects a plan that lists such an action (`schema.hardline_problems`,
the same `call_findings` run on each approved call), and the
hook denies such a call even when the active plan approves it (`call_findings`). Both
judge the call with the hook's own shell analysis (`shell.py`, `patterns.py`): a
`RecordingScope` passed to `check_call` records every path the rules resolve, and this
module classifies those paths; it parses nothing itself.

The operator's additions (`path`, `command`, `tool` rules) are read by `hardline_operator.py`.
"""

from __future__ import annotations

import os
import re

from massgen_mcp.hook.active import is_under, key_path
from massgen_mcp.hook.command import subcommand, wordset
from massgen_mcp.hook.git_rules import GIT_GLOBAL_VALUES
from massgen_mcp.hook.hardline_paths import (
    _DOTGLOB,
    _absolute,
    _globbed,
    _words,
    commands_of,
    file_tool_target,
    guarded,
    link_sources,
    names_ancestor,
    names_inside,
    program_paths,
)
from massgen_mcp.hook.lexer import UNKNOWN
from massgen_mcp.hook.policy import Finding
from massgen_mcp.hook.programs import GREPS, READERS, TREE_READERS
from massgen_mcp.hook.scope import Scope, secret_kind

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the hook ~8 ms of start-up
    from typing import Any

    from massgen_mcp.hook.shell import SimpleCommand

PREFIX = "hardline:"
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
                "/proc", "/root", "/sbin", "/sys", "/usr", "/var", "/System", "/Library",
                "/Applications", "/private/etc", "/private/var", "/opt/homebrew", "/nix")
_SCRATCH = ("/var/tmp", "/private/var/tmp", "/private/var/folders")
_HARMLESS_DEVICES = ("/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/stdin",
                     "/dev/tty", "/dev/random", "/dev/urandom", "/dev/fd/", "/dev/shm/")
_SECRET_RULES = frozenset({"print-secret", "copy-secret", "secret-upload", "env-dump"})
_DELETE_RULES = frozenset({"rm-root-or-home", "rm-git-dir"})
#: Glob and LS list the names (which plans exist, their ids)
_READ_TOOLS = {"Read": "file_path", "NotebookRead": "notebook_path", "Grep": "path",
               "Glob": "path", "LS": "path"}
_DEVICE_TOOLS = frozenset({"mkfs", "wipefs", "fdisk", "sfdisk", "parted", "mkswap", "blkdiscard",
                           "hdparm", "badblocks"})
#: Reach into a directory's files whatever their flags: a copy or an archive of the key's
#: parent holds the key.
_RECURSIVE_READERS = TREE_READERS | wordset("zip rsync scp")
#: Look at the paths they name and change nothing: they may touch the guard's state,
#: settings and program (the key directory is judged apart).
_LOOK_ONLY = READERS | GREPS | wordset(
    "ls stat wc diff file tree du test [ realpath readlink sha256sum md5sum git echo")
#: git subcommands that delete or overwrite the paths they name (`git rm`, `git checkout --`):
#: git reads the guard's files otherwise, these write them.
_GIT_WRITES = frozenset({"rm", "mv", "checkout", "restore", "apply", "am", "clean", "stash"})
_OUR_SAFE_SUBCOMMANDS = frozenset({"run", "plan", "view", "report", "doctor", "hook",
                                   "--help", "-h", "--version"})


_GROUPS = {"delete-system": "destruction", "device-write": "destruction", "guard":
           "access_control", "secret": "secrets", "operator": "destruction"}


def _finding(rule: str, detail: str, group: str | None = None) -> Finding:
    """A hardline finding: its rule starts with `hardline:`; its group is the policy group
    it belongs to, so the reason names it like any other."""
    kind = rule.split(":", 1)[0]
    return Finding(group or _GROUPS[kind], PREFIX + rule,
                   f"{detail} (hardline: no checkpoint plan can approve this)")


def is_hardline(finding: Finding) -> bool:
    return str(finding.rule).startswith(PREFIX)


# ------------------------------------------------------------------ what the guard is


def key_dir() -> str:
    """The directory of the signing key and the signed active plans."""
    return os.path.realpath(os.path.dirname(key_path()))


def _settings_files(workspace: str, home: str) -> list[str]:
    files = [os.path.join(base, ".claude", name) for base in (workspace, home)
             for name in ("settings.json", "settings.local.json")]
    return [*files, "/etc/claude-code", "/Library/Application Support/ClaudeCode"]


def guard_paths(scope: Scope, state_roots: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """(key dir, paths that may not be written or deleted): the key dir, the checkpoint
    state, the Claude Code settings and the hook's program."""
    keys = key_dir()
    roots = [os.path.join(scope.workspace, ".massgen", "checkpoints"), *state_roots]
    home_state = os.environ.get("MASSGEN_MCP_HOME")
    if home_state:
        roots.append(os.path.join(os.path.realpath(home_state), "checkpoints"))
    return keys, [keys, *roots, *_settings_files(scope.workspace, scope.home),
                  *program_paths(scope.workspace)]


# ------------------------------------------------------------------ path matching


def _is_device(path: str) -> bool:
    return is_under(path, "/dev") and not any(
        path == d or (d.endswith("/") and path.startswith(d)) for d in _HARMLESS_DEVICES)


def _in_system_tree(path: str, scope: Scope) -> bool:
    # Home (root's is /root) and the workspace are the user's, whatever tree holds them.
    if (is_under(path, scope.home) or is_under(path, scope.workspace) or scope.in_temp(path)
            or any(names_inside(path, s) for s in _SCRATCH)):
        return False
    return any(names_inside(path, tree) or names_ancestor(path, tree) for tree in SYSTEM_TREES)


# ------------------------------------------------------------------ recording the rules


class RecordingScope(Scope):
    """A `Scope` that remembers every path the rules judge as deleted or written.

    `check_call` resolves each target through `delete_finding` / `write_finding`; recording
    them lets this module classify exactly what the shell analysis saw, without parsing the
    command a second time.
    """

    events: list[tuple[str, str]]

    def __new__(cls, *fields: Any) -> RecordingScope:
        self = super().__new__(cls, *fields)
        self.events = []
        return self

    @classmethod
    def record(cls, cwd: str, workspace: str | None = None) -> RecordingScope:
        """`Scope.create`, recording."""
        base = Scope.create(cwd, workspace)
        return cls(base.cwd, base.workspace, base.home, base.temp_roots)

    def _replace(self, **changes: Any) -> RecordingScope:  # a copy records into the same list
        moved = RecordingScope(*(changes.get(f, getattr(self, f)) for f in self._fields))
        moved.events = self.events
        return moved

    def _record(self, kind: str, word: str) -> None:
        path = _absolute(self, word.rstrip("/") or "/")
        if path is not None:
            self.events.append((kind, path))

    def note_reads(self, cmd: object) -> None:
        """Every path word of a command, where the line has moved to (`cd ~/.config && cd
        mass*p && cat plan.k?y` reads the key: the hard line judges it like a literal)."""
        from massgen_mcp.hook.command import SimpleCommand

        if isinstance(cmd, SimpleCommand):
            kind = "read-r" if _recursive(cmd) else "read"
            for word in _words(cmd):
                path = _absolute(self, word)
                if path is not None and path != "/":
                    self.events.append((kind, path))

    def delete_finding(self, word: str) -> Finding | None:
        self._record("delete", word)
        return super().delete_finding(word)

    def write_finding(self, word: str, *, verb: str = "writes") -> Finding | None:
        self._record("write", word)
        return super().write_finding(word, verb=verb)


# ------------------------------------------------------------------ the policy


def call_findings(tool: str, tool_input: dict[str, Any], scope: RecordingScope,
                  findings: list[Finding], state_roots: tuple[str, ...] = ()) -> list[Finding]:
    """The hardline findings of one call, given what `check_call(tool, tool_input, scope)`
    found and recorded. Empty: the call is not on the hard line."""
    keys, protected = guard_paths(scope, state_roots)
    out: list[Finding] = []
    for f in findings:
        if f.rule in _DELETE_RULES:
            out.append(_finding(f"delete-system:{f.rule}", f.detail, f.group))
        elif f.rule in _SECRET_RULES:
            out.append(_finding(f"secret:{f.rule}", f.detail, f.group))
    linked = link_sources(tool_input.get("command") if tool == "Bash" else None, scope)
    for kind, path in scope.events:
        if kind.startswith("read"):
            if names_inside(path, keys) or (kind == "read-r" and names_ancestor(path, keys)):
                out.append(_finding("guard", f"reads {path}, where the checkpoint key and "
                                             "signed plans are kept"))
        elif not (kind == "delete" and path in linked):  # `ln -s /usr/bin/x y` reads, keeps
            out.extend(_event(kind, path, scope, keys, protected))
    if tool in _READ_TOOLS:
        target = file_tool_target(tool, tool_input, _READ_TOOLS[tool])
        out.extend(_read_tool(target, scope, keys, tool))
    command = tool_input.get("command") if tool == "Bash" else None
    if isinstance(command, str):
        out.extend(_bash(command, scope, keys, protected))
    if tool.startswith("mcp__"):
        out.extend(_mcp(tool, tool_input, scope, keys))
    from massgen_mcp.hook.hardline_operator import operator_findings

    out.extend(_finding("operator", detail) for detail in operator_findings(
        tool, tool_input, scope, command))
    return _dedup(out)


def _event(kind: str, path: str, scope: Scope, keys: str,
           protected: list[str]) -> list[Finding]:
    out: list[Finding] = []
    # Deleting the workspace or above is judged by the delete rules (rm-workspace, home).
    above = kind == "delete" and not names_ancestor(path, scope.workspace)
    if guarded(path, protected, scope.workspace) or (above and any(
            names_ancestor(path, p) for p in protected)):
        out.append(_finding("guard", f"{'deletes' if kind == 'delete' else 'writes'} {path}, "
                                     "part of the checkpoint guard (its key, state, settings "
                                     "or program)"))
    if kind == "delete":
        git = os.path.join(scope.workspace, ".git")
        if path == "/" or names_ancestor(path, scope.home):
            out.append(_finding("delete-system", f"deletes {path}, which holds a home "
                                                 "directory or the whole system"))
        elif _in_system_tree(path, scope):
            out.append(_finding("delete-system", f"deletes {path}, in a system tree"))
        elif path == git or (_globbed(path) and names_ancestor(path, git)
                             and not names_ancestor(path, scope.workspace)):
            out.append(_finding("delete-system", f"deletes {path}, the repository's .git"))
    elif _is_device(path):
        out.append(_finding("device-write", f"writes to the device {path}"))
    return out


def _read_tool(value: Any, scope: Scope, keys: str, tool: str) -> list[Finding]:
    if not isinstance(value, str) or not value:
        return []
    path = _absolute(scope, value)
    if path is None:
        return []
    if names_inside(path, keys) or (tool == "Grep" and names_ancestor(path, keys)):
        return [_finding("guard", f"{tool} reads {path}, where the checkpoint key and signed "
                                  "plans are kept")]
    kind = None if os.path.isdir(path) or tool in ("Glob", "LS") else secret_kind(path)
    return [_finding("secret", f"{tool} reads {value}, {kind}")] if kind else []


_MCP_PATH_ARGS = ("path", "file_path", "filepath", "file", "filename", "source", "src",
                  "paths", "files")


def _mcp(tool: str, args: dict[str, Any], scope: Scope, keys: str) -> list[Finding]:
    """Another MCP server's tool (it runs outside any sandbox) reaching the key, or reading
    a secret (writing one is gated as a write, like the Write tool)."""
    from massgen_mcp.hook.patterns import _WRITE_VERBS, name_words

    words = set(name_words(tool.rsplit("__", 1)[-1]))
    writes = bool(_WRITE_VERBS & words) and not words & {"upload", "send", "post", "share"}
    out: list[Finding] = []
    for key in _MCP_PATH_ARGS:
        values = args.get(key)
        for value in values if isinstance(values, list) else [values]:
            path = _absolute(scope, value) if isinstance(value, str) and value else None
            if path is None:
                continue
            if names_inside(path, keys):
                out.append(_finding("guard", f"{tool} reaches {value}, where the checkpoint "
                                             "key and signed plans are kept"))
            elif not writes and (kind := secret_kind(path)) and not os.path.isdir(path):
                out.append(_finding("secret", f"{tool} reads or sends {value}, {kind}"))
    return out


def _recursive(cmd: SimpleCommand) -> bool:
    if cmd.program in _RECURSIVE_READERS:
        return True
    if cmd.program in ("grep", "egrep", "fgrep", "cp", "chmod", "chown") and (
            cmd.has_short_flag("r") or cmd.has_short_flag("R") or cmd.has_short_flag("a")
            or cmd.has_long("--recursive")):
        return True
    return cmd.program == "find" and any(
        a in ("-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprintf", "-fls", "-delete")
        for a in cmd.args)


def _bash(command: str, scope: Scope, keys: str, protected: list[str]) -> list[Finding]:
    _DOTGLOB[0] = "dotglob" in command or "GLOBIGNORE" in command or "globdots" in command
    out: list[Finding] = []
    home = scope.home.rstrip("/")
    spelled = {keys, keys.replace(home, "~", 1), keys.replace(home, "$HOME", 1),
               keys.replace(home, "${HOME}", 1), "/" + os.path.basename(key_path()),
               "MASSGEN_MCP_KEY_FILE"}
    if re.search(r"(^|[\s/'\"])" + re.escape(os.path.basename(key_path())) + r"\b", command):
        spelled.add(os.path.basename(key_path()))  # `find ~ -name plan.key`: its name alone
    for needle in spelled:
        if needle and needle != "/" and needle in command:
            out.append(_finding("guard", f"names {needle}, where the checkpoint key and "
                                         "signed plans are kept"))
            break
    # `P=$(which massgen-mcp); chmod -x $P`: a variable holding our path, used later
    held = re.search(r"\w=\S*(\$\(|`)[^)`]*\bmassgen[-_]mcp\b|\bfor\s+\w+\s+in\s+[^;]*"
                     r"\bmassgen[-_]mcp\b", command)
    for cmd in commands_of(command):
        if cmd.program.startswith("massgen-mcp") or cmd.program.startswith("massgen_mcp"):
            sub = next((a for a in cmd.args if not a.startswith("--") or a in
                        _OUR_SAFE_SUBCOMMANDS), "serve")
            if sub not in _OUR_SAFE_SUBCOMMANDS:
                out.append(_finding("guard", f"runs `massgen-mcp {sub}`, which signs "
                                             "checkpoint plans with the guard's key"))
        if cmd.program not in _LOOK_ONLY and (any(re.search(r"\bmassgen[-_]mcp\b", text)
                                                  for w in cmd.words[1:] for _, text in w.subs) or (
                held and any(UNKNOWN in a for a in cmd.args))):
            out.append(_finding("guard", f"{cmd.program} is given the path of massgen-mcp's "
                                         "own program, found at run time"))
        if _uninstalls_us(cmd):
            out.append(_finding("guard", f"{cmd.program} uninstalls massgen-mcp, the checkpoint "
                                         "guard's own program"))
        if cmd.program.startswith("python") and _runs_our_code(cmd):
            out.append(_finding("guard", "runs massgen-mcp's own code (which holds the key "
                                         "that signs checkpoint plans) from a tool call"))
        for word in _words(cmd):
            path = _absolute(scope, word)
            if path is None or path == "/":
                continue
            if names_inside(path, keys) or (_recursive(cmd) and names_ancestor(path, keys)):
                out.append(_finding("guard", f"{cmd.program} reaches {word}, where the "
                                             "checkpoint key and signed plans are kept"))
            elif not _reads_only(cmd) and guarded(path, protected, scope.workspace):
                out.append(_finding("guard", f"{cmd.program} touches {word}, part of the "
                                             "checkpoint guard (its state, settings or program)"))
        if cmd.program in _DEVICE_TOOLS or cmd.program.startswith("mkfs."):
            out.extend(_finding("device-write", f"{cmd.program} writes the device {w}")
                       for w in cmd.args if _is_device(_absolute(scope, w) or ""))
        if cmd.program == "dd":
            out.extend(_finding("device-write", f"dd writes the device {a[3:]}")
                       for a in cmd.args if a.startswith("of=")
                       and _is_device(_absolute(scope, a[3:]) or ""))
    return out


def _reads_only(cmd: SimpleCommand) -> bool:
    if cmd.program == "git":
        return subcommand(cmd, GIT_GLOBAL_VALUES)[0] not in _GIT_WRITES
    return cmd.program in _LOOK_ONLY


def _uninstalls_us(cmd: SimpleCommand) -> bool:
    """`pip uninstall massgen-mcp`, `uv tool uninstall massgen_mcp`, `pipx uninstall-all`."""
    if cmd.program in ("pipx", "uv") and ("uninstall-all" in cmd.args or (
            "uninstall" in cmd.args and "--all" in cmd.args)):
        return True
    ours = [a for a in cmd.args if re.split(r"[=<>~!@\[ ]", a.lower().replace("_", "-"))[0]
            == "massgen-mcp"]
    return bool(ours) and (any(a in ("uninstall", "remove", "inject") for a in cmd.args) or (
        "install" in cmd.args and (any(a != "massgen-mcp" for a in ours) or any(
            a in ("--force-reinstall", "-I", "--ignore-installed", "--upgrade", "-U")
            for a in cmd.args))))


def _runs_our_code(cmd: SimpleCommand) -> bool:
    code = " ".join(cmd.args) + (cmd.stdin_code or "")
    return "massgen_mcp" in code


def _dedup(findings: list[Finding]) -> list[Finding]:
    return list({f.detail: f for f in reversed(findings)}.values())[::-1]
