"""Routes by which a search or a listing prints secret files it was not named with.

- a recursive search for secret names (or for everything) through a tree holding secret
  files (`grep -r API_KEY config/`, `rg -uu SECRET .`; the Grep tool too, in `patterns.py`);
- `find` running a program on files whose name pattern picks secrets (`-name '.env*' -exec
  cat {} +`);
- paths found under a directory holding secrets or the guard's key handed to a program by
  xargs (`find ~/.config -name 'plan.*' | xargs cat`);
- a secret store asked for a value (`aws secretsmanager get-secret-value`, `kubectl get
  secret -o yaml`, `terraform output -raw db_password`), `declare -p API_KEY`.
Standard library only.
"""

from __future__ import annotations

import os
import re
from itertools import islice

from massgen_mcp.hook.active import key_path
from massgen_mcp.hook.command import SimpleCommand, wordset
from massgen_mcp.hook.options import option_values
from massgen_mcp.hook.policy import Finding
from massgen_mcp.hook.scope import Scope, holds_secrets, is_under, secret_kind
from massgen_mcp.regex import lazy

#: Names a glob is tried against: does the Grep tool's `glob` reach secret files?
SECRET_SAMPLES = (".env", ".env.local", ".env.production", "id_rsa", "id_ed25519", ".netrc",
                   "credentials", "credentials.json", ".pgpass", ".npmrc", ".pypirc",
                   "server.pem", "tls.key", "terraform.tfstate", "kubeconfig")
SECRETISH = lazy(r"(?i)key|token|secret|passw|credential|private|auth|^\W{0,2}$|^\.\*?$")


def searches_secrets(cmd: SimpleCommand, scope: Scope) -> str | None:
    """`grep -r API_KEY config/`, `rg -uu SECRET .`: a recursive search for secret names (or
    for everything) through a tree that holds secret files prints their values."""
    program, args = cmd.program, cmd.args
    if program in ("grep", "egrep", "fgrep"):
        if not (cmd.has_short_flag("r") or cmd.has_short_flag("R") or cmd.has_long(
                "--recursive", "--dereference-recursive")):
            return None
    elif program in ("rg", "ag"):  # they skip hidden files (.env) unless told otherwise
        if not any(a in ("--hidden", "-.", "--unrestricted") or re.fullmatch(r"-u{2,3}", a)
                   for a in args):
            return None
    else:
        return None
    pos = cmd.positionals()
    given = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-e", "--regexp")]
    patterns, roots = (given, pos) if given else (pos[:1], pos[1:])
    if not any(SECRETISH.search(p) for p in patterns):
        return None
    for root in roots or ["."]:
        where = scope.resolve(root)
        if where and (found := secret_files_in(where)):
            return f"{program} searches {root} recursively for secrets, and it holds {found}"
    return None


def secret_files_in(path: str) -> str | None:
    """A secret file in `path` or one level below (a bounded look, not a walk)."""
    try:
        entries = list(islice(os.scandir(path), 200))
    except OSError:
        return None
    for entry in entries:
        if entry.is_file(follow_symlinks=False) and secret_kind(entry.path):
            return entry.name
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and entry.name not in (".git", "node_modules"):
            try:
                inner = list(islice(os.scandir(entry.path), 200))
            except OSError:
                continue
            hit = next((e for e in inner if e.is_file(follow_symlinks=False)
                        and secret_kind(e.path)), None)
            if hit:
                return f"{entry.name}/{hit.name}"
    return None


def finds_secrets(cmd: SimpleCommand) -> str | None:
    """The -name / -path pattern of a find that picks secret files (`-name '.env*'`)."""
    import fnmatch

    for i, arg in enumerate(cmd.args[:-1]):
        if arg in ("-name", "-iname", "-path", "-ipath", "-wholename"):
            pattern = cmd.args[i + 1].rsplit("/", 1)[-1]
            if any(fnmatch.fnmatch(n, pattern) for n in SECRET_SAMPLES):
                return cmd.args[i + 1]
    return None


_PRODUCERS = wordset("find fd fdfind ls locate tree")


def takes_names_on_stdin(cmd: SimpleCommand) -> bool:
    """An archiver or copier that reads the names of the files to pack on stdin (`cpio -o`,
    `pax -w`, `tar -T -`, `zip -@`, `rsync --files-from=-`)."""
    args = cmd.args
    return (cmd.program == "cpio" and (cmd.has_short_flag("o") or cmd.has_short_flag("p")
                                       or "--create" in args or "--pass-through" in args)) or (
        cmd.program == "pax" and cmd.has_short_flag("w")) or (
        cmd.program == "zip" and "-@" in args) or (cmd.program in ("tar", "bsdtar", "rsync") and (
            any(v in ("-", "/dev/stdin") for v in option_values(args, ("-T", "--files-from")))))


def pipeline_reach(pipeline: list[SimpleCommand], scope: Scope) -> list[Finding]:
    """`find ~/.config -name 'plan.*' | xargs cat`: paths found under a directory holding
    secrets (or the guard's key) are handed to a program through xargs."""
    keys = os.path.realpath(os.path.dirname(key_path()))
    source = None
    for at, cmd in enumerate(pipeline):
        if takes_names_on_stdin(cmd) and (named := [
                a for before in pipeline[:at] for a in before.args
                if secret_kind(re.sub(r"[*?]", "", a))] + [
                a for a in (cmd.stdin_code or "").split() if secret_kind(a)]):
            return [Finding("secrets", "copy-secret", f"{cmd.program} packs the files named "
                            f"on its input, {named[0]} among them (a secret)")]
        if cmd.program in _PRODUCERS:
            for root in cmd.positionals()[:3] or ["."]:
                where = scope.resolve(root) if not root.startswith("-") else None
                if where and (holds_secrets(where, scope.home) or is_under(keys, where)):
                    source = root
        elif source and cmd.from_xargs and cmd.program not in ("echo", "wc", "ls", "stat"):
            return [Finding("secrets", "print-secret",
                            f"{cmd.program} is handed the files found under {source}, which "
                            "holds secrets (or the guard's key)")]
    return []


_SEARCHERS = wordset("grep egrep fgrep rg ag ack cat less more head tail sed awk find fd echo "
                     "printf git ls touch mkdir cp mv rm vim code nano pytest")
_WORD_PARTS = lazy(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_SECRET_NAME = lazy(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)
_STORE_WORDS = wordset("secret secrets secretsmanager keyvault password passwords credential "
                       "credentials")
#: Python's `secrets` module makes random tokens; it reads no store.
_PY_SECRETS = lazy(r"\b(?:import\s+secrets\b|from\s+secrets\s+import\b|secrets\.(?:"
                         r"token_\w+|choice|randbelow|randbits|compare_digest|SystemRandom))")
_STORE_READS = wordset("get show access read download value reveal export pull print dump "
                       "decrypt view describe cat output")


def secret_store_read(cmd: SimpleCommand) -> str | None:
    """`aws secretsmanager get-secret-value`, `gcloud secrets versions access`, `kubectl get
    secret -o yaml`, `terraform output -raw db_password`: a secret store asked for a value
    (listing names is not)."""
    if cmd.program in ("declare", "typeset", "local", "export") and "-p" in cmd.args:
        hit = next((a for a in cmd.args if _SECRET_NAME.search(a)), None)
        return f"{cmd.program} -p prints {hit}, a secret variable" if hit else None
    if cmd.program in _SEARCHERS:  # `grep -rn get_secret src/` looks for code, not values
        return None
    parts = {p.lower() for w in cmd.positionals()[:6]
             for p in _WORD_PARTS.findall(_PY_SECRETS.sub(" ", w))}
    dumps = any(a in ("-o", "--output", "--raw", "--plaintext", "--reveal", "-raw") or
                a.startswith(("-ojson", "-oyaml", "-ojsonpath", "--output=")) for a in cmd.args)
    reads = parts & _STORE_READS
    if cmd.program in ("kubectl", "oc") and reads == {"get"}:
        reads = set()  # `kubectl get secrets` lists names; `-o yaml` prints the values
    if parts & _STORE_WORDS and (reads or dumps):
        return f"{cmd.program} prints a value from a secret store"
    return None


_PATTERN_FIRST = wordset("grep egrep fgrep rg ag ack ugrep")
#: A searcher's options whose value is the next word (a glob, a type, a count), not a pattern.
_SEARCH_VALUES = frozenset({"-g", "--glob", "--iglob", "-t", "--type", "-T", "--type-not",
                            "-A", "-B", "-C", "-m", "--max-count", "-d", "--max-depth",
                            "--include", "--exclude", "-G", "--file-search-regex", "--ignore"})


def read_operands(cmd: SimpleCommand) -> list[str]:
    """The files a reader reads: a searcher's first operand is its pattern (`rg process.env`),
    unless the pattern comes by option (`-e`, `-f`)."""
    pos = cmd.positionals()
    if cmd.program not in _PATTERN_FIRST or not pos or any(
            a in ("-e", "-f", "--regexp", "--file") or a.startswith(("--regexp=", "--file="))
            for a in cmd.args):
        return pos
    # an option's value (`-g '.env*'`) stays: a glob naming secrets still selects them
    values = {cmd.args[i + 1] for i, a in enumerate(cmd.args[:-1]) if a in _SEARCH_VALUES}
    at = next((i for i, p in enumerate(pos) if p not in values), None)
    return pos[:at] + pos[at + 1:] if at is not None else pos
