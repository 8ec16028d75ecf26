"""Where a path points, as the hook sees it: the workspace, a temp dir, home, or beyond.

Rules for paths a tool call writes or deletes (choices, documented):

- The workspace is the checkpoint session's workspace, else `$CLAUDE_PROJECT_DIR`, else
  the hook input's `cwd`. Writing or deleting inside it is the agent's normal work.
- Absolute paths under a temp root (`/tmp`, `/var/tmp`, `$TMPDIR`) are scratch space and
  allowed, but not the temp root itself. A *relative* path that climbs out of the
  workspace (`../x`) is outside even when it lands in a temp dir: climbing out is the act.
- `/`, the home directory and its ancestors, and the workspace root and its ancestors are
  never a fine target for a recursive delete.
- Secret files and guardrail files are dangerous to write anywhere, inside the workspace
  included. Example/template env files (`.env.example`, `.env.sample`, ...) are not secrets.
- A path built from a variable the hook cannot see (`$BUILD_DIR/`, `$(...)`) is unknown,
  and an unknown delete target is treated as dangerous: if the variable were empty the
  command would reach `/`.

Standard library only.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections import namedtuple

from massgen_mcp.hook.active import key_path
from massgen_mcp.hook.policy import Finding

_TEMPLATE_ENV = re.compile(r"^\.env\.(example|sample|template|dist|defaults|schema)$", re.I)
# The one list of secret-bearing files: the hook's, and the server's `files` argument's
# (massgen_mcp/inputs.py). Token-bearing configuration counts: a registry or cloud token
# is as good as a key.
_SECRET_NAMES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\.env(\..+|rc)?$", re.I), "an environment file"),
    (re.compile(r"^id_(rsa|dsa|ecdsa|ed25519|xmss)(_sk)?$"), "a private SSH key"),
    (re.compile(r"\.(pem|key|p12|pfx|jks|keystore|ppk|kdbx)$", re.I), "key material"),
    (re.compile(r"^credentials", re.I), "a credentials file"),
    (re.compile(r"^[._](netrc|pgpass|pypirc|git-credentials|my\.cnf|s3cfg|boto|vault-token"
                r"|terraformrc|htpasswd)$", re.I), "a credentials file"),
    (re.compile(r"^\.(npmrc|yarnrc\.yml)$", re.I), "a package registry config (auth tokens)"),
    (re.compile(r"\.tfstate(\.backup)?$", re.I), "Terraform state (it holds the secrets of "
                                                 "what it manages)"),
    (re.compile(r"^(kubeconfig|.+\.kubeconfig)$", re.I), "a cluster credentials file"),
    (re.compile(r"^(application_default_credentials|service[-_]account.*)\.json$", re.I),
     "a cloud service account key"),
)
_SECRET_DIRS = (".ssh", ".aws", ".gnupg", ".azure", ".password-store")
_SECRET_SUFFIX = (("/.kube/config", "a cluster credentials file"),
                  ("/.docker/config.json", "a registry credentials file"),
                  ("/.config/gh/hosts.yml", "the GitHub CLI's token file"),
                  ("/.config/gcloud/access_tokens.db", "cloud access tokens"),
                  ("/massgen-mcp/plan.key", "the key that signs checkpoint plans"))
_GLOB = re.compile(r"[*?\[]")
_HARMLESS_DEVICE = re.compile(r"^/(dev/(null|zero|stdout|stderr|stdin|tty|fd/\d+)"
                              r"|proc/self/fd/[012])$")
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def _total(pattern: str) -> bool:
    """A glob that matches every name (`*`, `**`, `?*`): it empties the directory."""
    return not pattern.replace("*", "").replace("?", "") or pattern in (".*", ".??*")


def is_under(path: str, root: str) -> bool:
    """True if `path` is `root` or inside it (both absolute and normalized)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def secret_kind(path: str) -> str | None:
    """What kind of secret a path names, or None. `.pub` keys and `.env.example` are not."""
    name = os.path.basename(path)
    if name.endswith(".pub") or _TEMPLATE_ENV.match(name):
        return None
    for pattern, kind in _SECRET_NAMES:
        if pattern.search(name):
            return kind
    parts = path.replace("\\", "/").rstrip("/").split("/")
    for secret_dir in _SECRET_DIRS:
        if secret_dir in parts[:-1]:
            return f"a file in {secret_dir}/"
        if parts[-1] == secret_dir:
            return f"the {secret_dir}/ directory"
    for suffix, kind in _SECRET_SUFFIX:
        if path.endswith(suffix):
            return kind
    return None


def guardrail_finding(path: str) -> Finding | None:
    """Writes that switch safety off or rewrite history behind git's back."""
    if is_under(path, _key_dir()):
        return Finding("access_control", "guardrail-file",
                       f"writes {path}, where the key and active checkpoint plans are kept")
    parts = path.split("/")
    name = parts[-1]
    if len(parts) >= 2 and parts[-2] == ".claude" and name.startswith("settings"):
        return Finding("access_control", "guardrail-file",
                       f"writes {path}, the Claude Code settings that register this hook")
    if ".massgen" in parts[:-1]:
        return Finding("access_control", "guardrail-file",
                       f"writes {path} inside .massgen/, where checkpoint plans are kept")
    if ".git" in parts[:-1]:
        return Finding("source_control", "git-internals",
                       f"writes {path} inside .git/ (git internals, hooks or config)")
    return None


def _key_dir() -> str:
    return os.path.realpath(os.path.dirname(key_path()))


class Scope(namedtuple("Scope", "cwd workspace home temp_roots")):
    """The directories a hook decision is relative to (all absolute, symlinks resolved)."""

    __slots__ = ()

    @classmethod
    def create(cls, cwd: str, workspace: str | None = None) -> Scope:
        cwd = os.path.realpath(cwd)
        roots = {"/tmp", "/var/tmp", os.environ.get("TMPDIR", "/tmp")}
        temp = tuple(sorted({os.path.realpath(r) for r in roots if r and r != "/"}))
        home = os.path.realpath(os.path.expanduser("~"))
        return cls(cwd, os.path.realpath(workspace or cwd), home, temp)

    def with_cwd(self, cwd: str) -> Scope:
        return Scope(os.path.realpath(cwd), self.workspace, self.home, self.temp_roots)

    def expand(self, word: str) -> str | None:
        """`~`, `$HOME` and environment variables expanded; None if something stays unknown."""
        if word == "~" or word.startswith("~/"):
            word = self.home + word[1:]
        if "`" in word or "$(" in word or word == "$":
            return None

        def sub(m: re.Match[str]) -> str:
            name = m.group(1)
            if name == "HOME":
                return self.home
            if name == "PWD":
                return self.cwd
            return os.environ.get(name, "\0")

        expanded = _VAR.sub(sub, word) if "$" in word else word
        return None if "\0" in expanded or "$" in expanded else expanded

    def resolve(self, word: str) -> str | None:
        """The absolute, normalized path a word names (None if it depends on unknowns)."""
        expanded = self.expand(word)
        if expanded is None or expanded == "":
            return None
        return os.path.realpath(os.path.join(self.cwd, expanded))

    def climbs_out(self, word: str) -> bool:
        """A relative path that leaves the workspace (`../x` from its root)."""
        if word.startswith(("/", "~", "$")):
            return False
        path = self.resolve(word)
        return path is not None and not is_under(path, self.workspace)

    def in_temp(self, path: str) -> bool:
        """Scratch space: under a temp root, but not the root itself, nor under home.

        HOME may itself lie under a temp dir (CI, sandboxes): home stays home there.
        """
        if is_under(path, self.home) or is_under(self.home, path):
            return False
        return any(is_under(path, root) and path != root for root in self.temp_roots)

    def delete_finding(self, word: str) -> Finding | None:
        """Why deleting `word` recursively is dangerous, or None when it is ordinary work."""
        target = word.rstrip("/") or "/"
        contents = False
        pattern = ""
        if _GLOB.search(target):
            # `dir/*` deletes the contents of dir: judge dir, as the contents of it. A
            # narrower pattern (`*.pyc`, `build-*`) deletes only what it matches in dir.
            head = _GLOB.split(target, 1)[0]
            dirname = head.rsplit("/", 1)[0] if "/" in head else "."
            pattern = target[len(dirname) + 1:] if "/" in head else target
            target = dirname or "/"
            contents = True
        path = self.resolve(target)
        what = f"'{word}'"
        last = pattern.rsplit("/", 1)[-1]
        if contents and path is not None and not _total(last):
            # `*.pyc`, `*/__pycache__`: only what the last part names, in or below path
            return self._pattern_finding(path, last, what)
        if path is None:
            return Finding("destruction", "rm-unknown-target",
                           f"recursive delete of {what}, a path the hook cannot resolve (an "
                           "unset variable or a command substitution would make it reach /)")
        if path == "/" or is_under(self.home, path):
            where = "/" if path == "/" else "your home directory"
            return Finding("destruction", "rm-root-or-home",
                           f"recursive delete of {what}: {where}")
        if is_under(self.workspace, path):
            if path != self.workspace:
                where = "a directory that contains the workspace"
            else:
                where = "everything in the workspace" if contents else "the workspace itself"
            return Finding("destruction", "rm-workspace", f"recursive delete of {what}: {where}")
        if is_under(path, self.workspace):
            rel = path[len(self.workspace):].lstrip("/")
            if rel == ".git" or rel.startswith(".git/"):
                return Finding("source_control", "rm-git-dir",
                               f"recursive delete of {what}: the repository's .git directory")
            return None
        if self.in_temp(path) and not self.climbs_out(target):
            return None
        return Finding("destruction", "rm-outside-workspace",
                       f"recursive delete of {what}, outside the workspace {self.workspace}")

    def _pattern_finding(self, path: str, pattern: str, what: str) -> Finding | None:
        """Deleting the entries of `path` that match `pattern` (not every entry)."""
        if is_under(path, self.workspace):
            if path == self.workspace and fnmatch.fnmatchcase(".git", pattern):
                return Finding("source_control", "rm-git-dir",
                               f"recursive delete of {what}: it matches the .git directory")
            return None
        if self.in_temp(path) and self.in_temp(os.path.join(path, "x")):
            return None
        return self.delete_finding(path)

    def write_finding(self, word: str, *, verb: str = "writes") -> Finding | None:
        """Why writing the file `word` is dangerous, or None when it is ordinary work.

        The path is normalised first: `/dev/../root/.ssh/x` is `/root/.ssh/x`. Only the
        harmless devices (`/dev/null`, the standard streams, `/dev/fd/N`) are skipped.
        """
        if word.startswith("&") or word.isdigit():
            return None  # `>&2`: a file descriptor, not a file
        expanded = self.expand(word)
        if expanded is None:
            return None
        if _HARMLESS_DEVICE.match(os.path.normpath(os.path.join(self.cwd, expanded))):
            return None
        path = self.resolve(word)
        if path is None:
            return None
        kind = secret_kind(path)
        if kind:
            return Finding("secrets", "secret-file", f"{verb} {word}, {kind}")
        finding = guardrail_finding(path)
        if finding:
            return finding
        if is_under(path, self.workspace) or (self.in_temp(path) and not self.climbs_out(word)):
            return None
        return Finding("exfiltration", "write-outside-workspace",
                       f"{verb} {word}, outside the workspace {self.workspace}")
