"""Where a path points, as the hook sees it: the workspace, a temp dir, home, or beyond.

Rules for paths a tool call writes or deletes (choices, documented):

- The workspace is the checkpoint session's workspace, else `$CLAUDE_PROJECT_DIR`, else
  the hook input's `cwd`. Writing or deleting inside it is the agent's normal work.
- Shared temp roots (`/tmp`, `/var/tmp`, `/dev/shm`) are outside the workspace like any
  other directory: other people's temp data is data. Only a *private* temp dir the operator
  configures is scratch space: `$MASSGEN_MCP_TMPDIR`, `$CLAUDE_CODE_TMPDIR`, or `$TMPDIR`
  when it is not itself a shared root (all read from the hook's own environment, which
  the agent does not set). A relative path that climbs out of the workspace (`../x`) is
  outside even when it lands there: climbing out is the act.
- Writing a device other than the harmless ones (`/dev/null`, the standard streams) is
  destruction (`> /dev/sda`, `dd of=/dev/nvme0n1`).
- `/`, the home directory and its ancestors, and the workspace root and its ancestors are
  never a fine target for a recursive delete.
- Secret files and guardrail files are dangerous to write anywhere, inside the workspace
  included. Example/template env files (`.env.example`, `.env.sample`, ...) are not secrets.
- A path built from a variable the hook cannot see (`$BUILD_DIR/`, `$(...)`) is unknown,
  and an unknown delete or write target is treated as dangerous: if the variable were
  empty the command would reach `/`. After a `cd` to a directory the hook cannot
  determine, every relative path is unknown too.
- Links made earlier in the same line (`ln -s / r && rm -rf r/`) are followed like the
  links already on disk (`Scope.links`).

Standard library only.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections import namedtuple

from massgen_mcp.hook.active import key_path
from massgen_mcp.hook.policy import Finding
from massgen_mcp.regex import lazy

_TEMPLATE_ENV = lazy(r"^\.env\.(example|sample|template|dist|defaults|schema)$", re.I)
# The one list of secret-bearing files: the hook's, and the server's `files` argument's
# (massgen_mcp/inputs.py). Token-bearing configuration counts (as good as a key).
_SECRET_NAMES: tuple[tuple[re.Pattern[str], str], ...] = (
    (lazy(r"^\.env(\..+|rc)?$", re.I), "an environment file"),
    (lazy(r"^id_(rsa|dsa|ecdsa|ed25519|xmss)(_sk)?$"), "a private SSH key"),
    (lazy(r"\.(pem|key|p12|pfx|jks|keystore|ppk|kdbx)$", re.I), "key material"),
    (lazy(r"^credentials", re.I), "a credentials file"),
    (lazy(r"^[._](netrc|pgpass|pypirc|git-credentials|my\.cnf|s3cfg|boto|vault-token"
                r"|terraformrc|htpasswd)$", re.I), "a credentials file"),
    (lazy(r"^\.(npmrc|yarnrc\.yml)$", re.I), "a package registry config (auth tokens)"),
    (lazy(r"\.tfstate(\.backup)?$", re.I), "Terraform state (it holds the secrets of "
                                                 "what it manages)"),
    (lazy(r"^(kubeconfig|.+\.kubeconfig)$", re.I), "a cluster credentials file"),
    (lazy(r"^(application_default_credentials|service[-_]account.*)\.json$", re.I),
     "a cloud service account key"),
    (lazy(r".\.env$", re.I), "an environment file"),  # prod.env, .dev.env
    (lazy(r"^\.mcp\.json$", re.I), "an MCP client config (tool servers' tokens)"),
    (lazy(r"^\.dev\.vars$", re.I), "an environment file (Cloudflare's)"),
    (lazy(r"^\.?secrets?([._-][\w-]+)?\.(toml|ya?ml|json|ini|cfg|conf|env|txt|properties)$"
                r"|^\.secrets?$", re.I), "a secrets file"),
    (lazy(r"\.tfvars(\.json)?$", re.I), "Terraform variables (they hold its secrets)"),
    (lazy(r"^oauth_creds\.json$", re.I), "a coding CLI's login (OAuth tokens)"),
    (lazy(r"^(\.[a-z0-9_]*_?history|fish_history|\.histfile)$", re.I),
     "a shell or REPL history (commands typed with secrets in them)"),
    (lazy(r"^(secring\.gpg|.+\.(gpg|asc)\.key)$", re.I), "a private GPG key"),
)
_SECRET_DIRS = (".ssh", ".aws", ".gnupg", ".azure", ".password-store", ".kube")
_SECRET_SUFFIX = (("/.kube/config", "a cluster credentials file"),
                  ("/.docker/config.json", "a registry credentials file"),
                  ("/.config/gh/hosts.yml", "the GitHub CLI's token file"),
                  ("/.config/gcloud/access_tokens.db", "cloud access tokens"),
                  ("/massgen-mcp/plan.key", "the key that signs checkpoint plans"),
                  ("/.codex/auth.json", "the Codex CLI's login (tokens)"),
                  ("/.claude/.credentials.json", "Claude Code's login (tokens)"),
                  ("/.m2/settings.xml", "Maven's settings (repository passwords)"),
                  ("/.gradle/gradle.properties", "Gradle's user properties (publish tokens)"),
                  ("/composer/auth.json", "Composer's registry tokens"),
                  ("/github-copilot/apps.json", "GitHub Copilot's login (tokens)"),
                  ("/github-copilot/hosts.json", "GitHub Copilot's login (tokens)"))
_GLOB = lazy(r"[*?\[]")
_HARMLESS_DEVICE = lazy(r"^/(dev/(null|zero|full|u?random|stdout|stderr|stdin|tty|fd/\d+"
                        r"|pts/\d+)|proc/self/fd/[012])$")
_ENVIRON = lazy(r"(^|/)proc/[^/]+/(task/[^/]+/)?environ$")
SHARED_TEMP = ("/tmp", "/var/tmp", "/dev/shm", "/private/tmp", "/private/var/tmp")
UNKNOWN_CWD = "\0cwd"  # after `cd "$X"`: where relative paths point is not known
_VAR = lazy(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def _total(pattern: str) -> bool:
    """A glob that matches every name (`*`, `**`, `?*`): it empties the directory."""
    return not pattern.replace("*", "").replace("?", "") or pattern in (".*", ".??*")


def is_under(path: str, root: str) -> bool:
    """True if `path` is `root` or inside it (both absolute and normalized)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def secret_kind(path: str) -> str | None:
    """What kind of secret a path names, or None. `.pub` keys and `.env.example` are not."""
    if _ENVIRON.search(path):
        return "a process environment (every key in it)"
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


#: Where secrets live under a home directory: reading a directory above one of these
#: recursively (Grep over ~/.config/gh, `grep -r x ~`, `tar c ~`) reads them.
HOME_SECRETS = (".ssh", ".aws", ".gnupg", ".azure", ".password-store", ".config/gh",
                ".docker/config.json", ".kube", ".netrc", ".git-credentials", ".pgpass",
                ".npmrc", ".pypirc", ".config/gcloud", ".vault-token", ".terraformrc",
                ".m2/settings.xml", ".gradle/gradle.properties")


def holds_secrets(path: str, home: str) -> str | None:
    """The secret location (`~/.ssh`, ...) a directory holds, or None."""
    return next((f"~/{rel}" for rel in HOME_SECRETS
                 if is_under(os.path.join(home, rel), path)), None)


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


_TEMP_HINT = (" (shared temp dirs count as outside; use a dir inside the workspace, or the "
              "operator's private temp dir, MASSGEN_MCP_TMPDIR)")


def _temp_hint(path: str) -> str:
    shared = any(is_under(path, os.path.realpath(r)) for r in SHARED_TEMP)
    return _TEMP_HINT if shared else ""


def _key_dir() -> str:
    return os.path.realpath(os.path.dirname(key_path()))


def private_temp_roots() -> tuple[str, ...]:
    """The operator's private temp dirs (see the module docstring); shared roots never."""
    shared = {os.path.realpath(r) for r in SHARED_TEMP} | {"/"}
    roots = {os.path.realpath(r) for r in (os.environ.get("MASSGEN_MCP_TMPDIR"),
                                           os.environ.get("CLAUDE_CODE_TMPDIR"),
                                           os.environ.get("TMPDIR")) if r and os.path.isabs(r)}
    from massgen_mcp.hook.expand import FRESH_TEMP

    return tuple(sorted((roots - shared) | {FRESH_TEMP}))


class Scope(namedtuple("Scope", "cwd workspace home temp_roots links", defaults=((),))):
    """The directories a hook decision is relative to (all absolute, symlinks resolved).

    `links` holds (link, target) pairs for links the line creates before it uses them.
    """

    __slots__ = ()

    @classmethod
    def create(cls, cwd: str, workspace: str | None = None) -> Scope:
        cwd = os.path.realpath(cwd)
        home = os.path.realpath(os.path.expanduser("~"))
        return cls(cwd, os.path.realpath(workspace or cwd), home, private_temp_roots())

    def with_cwd(self, cwd: str) -> Scope:
        where = cwd if cwd == UNKNOWN_CWD else os.path.realpath(cwd)
        return self._replace(cwd=where)

    def with_link(self, link: str, target: str) -> Scope:
        return self._replace(links=((link, target), *self.links))

    def expand(self, word: str) -> str | None:
        """`~`, `$HOME` and environment variables expanded; None if something stays unknown."""
        if word == "~" or word.startswith("~/"):
            word = self.home + word[1:]
        if "`" in word or "$(" in word or word == "$":
            return None

        def lookup(name: str) -> str | None:
            return self.home if name == "HOME" else self.cwd if name == "PWD" else (
                os.environ.get(name))

        def sub(m: re.Match[str]) -> str:
            value = lookup(m.group(1))
            return "\0" if value is None else value

        if "${" in word:  # `${HOME:?}`, `${X:-/}`: the operators too, not just the name
            from massgen_mcp.hook.expand import param_expand

            word = param_expand(word, lookup)
        expanded = _VAR.sub(sub, word) if "$" in word else word
        return None if "\0" in expanded or "$" in expanded else expanded

    def resolve(self, word: str) -> str | None:
        """The absolute, normalized path a word names (None if it depends on unknowns)."""
        expanded = self.expand(word)
        if expanded is None or expanded == "" or "\0" in expanded:
            return None
        if self.cwd == UNKNOWN_CWD and not os.path.isabs(expanded):
            return None
        path = os.path.realpath(os.path.join(self.cwd, expanded))
        for _ in range(8):  # links the line made, possibly through one another
            for link, target in self.links:
                if is_under(path, link):
                    path = os.path.realpath(target + path[len(link):])
                    break
            else:
                break
        return path

    def secret(self, word: str) -> str | None:
        """What secret a word names: as written, resolved, or through the files a glob
        matches (`cat .en?` reads `.env`), the guard's own key and state included."""
        kind = secret_kind(word)
        if kind or self.cwd == UNKNOWN_CWD:
            return kind
        candidates = [p for p in [self.resolve(word)] if p]
        if _GLOB.search(word):
            from massgen_mcp.hook.expand import glob_matches

            candidates += [os.path.realpath(p) for p in glob_matches(
                self.expand(word) or word, self.cwd, self.home)]
        for path in candidates:
            if is_under(path, _key_dir()):
                return "the guard's signing key and plan state"
            if kind := secret_kind(path):
                return kind
        return None

    def note_reads(self, cmd: object) -> None:
        """A command about to run here (the line's `cd`s followed): a recording scope
        (`hardline.RecordingScope`) notes what it reads; this one has nothing to do."""
        return None

    def climbs_out(self, word: str) -> bool:
        """A relative path that climbs out of the workspace (`../x` from its root); a plain
        `x` in a directory the line moved to is not climbing."""
        if word.startswith(("/", "~", "$")):
            return False
        path = self.resolve(word)
        return path is not None and not is_under(path, self.workspace) and not (
            self.cwd != UNKNOWN_CWD and is_under(path, self.cwd))

    def in_temp(self, path: str) -> bool:
        """Scratch space: under a temp root, but not the root itself, nor under home.

        HOME may itself lie under a temp dir (CI, sandboxes): home stays home there.
        """
        if is_under(path, self.home) or is_under(self.home, path):
            return False
        from massgen_mcp.hook.expand import FRESH_TEMP

        return any(is_under(path, root) and (path != root or root == FRESH_TEMP)
                   for root in self.temp_roots)

    def delete_finding(self, word: str) -> Finding | None:
        """Why deleting `word` recursively is dangerous, or None when it is ordinary work."""
        target = word.rstrip("/") or "/"
        if "$" in target:  # `"${arr[@]}"`, `${HOME:?}`: expanded before globbing
            expanded = self.expand(target)
            if expanded is None:
                return Finding("destruction", "rm-unknown-target",
                               f"recursive delete of '{word}', a path the hook cannot resolve")
            target = expanded.rstrip("/") or "/"
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
            return self.guard_removal(path, what)
        if self.in_temp(path) and not self.climbs_out(target):
            return None
        return Finding("destruction", "rm-outside-workspace",
                       f"recursive delete of {what}, outside the workspace {self.workspace}"
                       f"{_temp_hint(path)}")

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

    def read_finding(self, word: str) -> Finding | None:
        """Reads the Read tool must not do: the guard's key and state, a process's
        environment. (Other secret files are left to Claude Code's own permission rules.)"""
        path = os.path.realpath(word) if os.path.isabs(word) else self.resolve(word)
        if path and is_under(path, _key_dir()):
            return Finding("secrets", "guard-secret",
                           f"reads {word}, the guard's signing key and plan state")
        if path and _ENVIRON.search(path):
            return Finding("secrets", "print-secret", f"reads {word}, a process environment")
        return None

    def guard_removal(self, path: str, what: str) -> Finding | None:
        """Deleting or moving away the files that register and feed the guard."""
        claude = os.path.join(self.workspace, ".claude")
        if path == claude or (os.path.dirname(path) == claude
                              and os.path.basename(path).startswith("settings")):
            return Finding("access_control", "guardrail-file",
                           f"removes {what}, the Claude Code settings that register this hook")
        finding = guardrail_finding(path)
        if finding and finding.group == "access_control":
            return finding
        if is_under(_key_dir(), path):
            return Finding("access_control", "guardrail-file",
                           f"removes {what}, which holds the guard's key and plans")
        return None

    def write_finding(self, word: str, *, verb: str = "writes") -> Finding | None:
        """Why writing the file `word` is dangerous, or None when it is ordinary work.

        The path is normalised first: `/dev/../root/.ssh/x` is `/root/.ssh/x`. Only the
        harmless devices (`/dev/null`, the standard streams, `/dev/fd/N`) are skipped.
        """
        if word.startswith("&") or word.isdigit():
            return None  # `>&2`: a file descriptor, not a file
        expanded = self.expand(word)
        if expanded is not None and _HARMLESS_DEVICE.match(os.path.normpath(os.path.join(
                "/" if self.cwd == UNKNOWN_CWD else self.cwd, expanded))):
            return None
        path = self.resolve(word)
        if path is None:
            shown = word.replace("\0", "$(...)")
            return Finding("exfiltration", "write-unknown-target",
                           f"{verb} {shown}, a path the hook cannot resolve (a variable or "
                           "substitution, or a directory it cannot follow)")
        if path.startswith("/dev/") and not _HARMLESS_DEVICE.match(path):
            return Finding("destruction", "device-write", f"{verb} {word}, a device")
        kind = secret_kind(path)
        if kind:
            return Finding("secrets", "secret-file", f"{verb} {word}, {kind}")
        finding = guardrail_finding(path)
        if finding:
            return finding
        if is_under(path, self.workspace) or (self.in_temp(path) and not self.climbs_out(word)):
            return None
        return Finding("exfiltration", "write-outside-workspace",
                       f"{verb} {word}, outside the workspace {self.workspace}{_temp_hint(path)}")
