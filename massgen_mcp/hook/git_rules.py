"""Dangerous git commands. Standard library only.

- `git push` with `--force`, `-f`, `--force-with-lease`, `--force-if-includes` or a
  `+refspec`, and `--delete`/`:branch`: gated only when the destination branch is
  protected (`PROTECTED_BRANCH`: main, master, trunk, develop, dev, stable, staging, prod*,
  production, release*, hotfix*, gh-pages) or cannot be determined (no refspec and no
  readable `.git/HEAD`, a detached HEAD, `--all`, or a bare `-f`/`--force` without a lease,
  which goes to an upstream the hook does not read). With no refspec the current branch is
  read from `.git/HEAD` (no git process). Pushing to a deploy remote (`heroku`, `dokku`,
  `production`...) is a deploy. Force-pushing a named feature branch after a
  rebase is routine and recoverable, so it is not gated; reviewers still get "branches
  others build on" in the policy text. `--mirror` and pushing to a URL rather than a
  configured remote are always gated.
- `git reset --hard`, `git clean -f...` (not `-n`), `git checkout .`/`-f`, `git restore .`
  (not `--staged` alone), `git stash clear`: always gated. The hook cannot cheaply tell
  whether uncommitted work exists, and these are the commands that lose it.
- `--no-verify` (and `commit -n`), `filter-branch`/`filter-repo`, `branch -D` of a
  protected branch, `git add` of a secret file.
"""

from __future__ import annotations

import os
import re

from massgen_mcp.hook.command import SimpleCommand, subcommand
from massgen_mcp.hook.git_alias import scripted_todo
from massgen_mcp.hook.lexer import UNKNOWN
from massgen_mcp.hook.options import option_values, resolve_long
from massgen_mcp.hook.policy import Finding
from massgen_mcp.hook.scope import Scope, secret_kind
from massgen_mcp.regex import lazy

PROTECTED_BRANCH = lazy(
    r"^(main|master|trunk|develop|development|dev|stable|staging|production|gh-pages"
    r"|prod([-/_].*)?|release([-/_].*)?|releases/.*|hotfix([-/_].*)?)$"
)
GIT_GLOBAL_VALUES = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
#: Remotes of git-push platforms where a push is a deploy (`git push heroku main`).
_DEPLOY_REMOTE = lazy(r"(?i)^(heroku|dokku|production|prod|live|deploy|flynn|"
                            r"piku|caprover|azure|pantheon|platform|engineyard)([-_.].*)?$")
_URL_REMOTE = lazy(r"^(https?://|ssh://|git://|file://|[\w.-]+@[\w.-]+:)")


def current_branch(cwd: str) -> str | None:
    """The checked-out branch from `.git/HEAD` (worktrees too), without running git."""
    path = cwd
    while True:
        dotgit = os.path.join(path, ".git")
        if os.path.isfile(dotgit):
            try:
                with open(dotgit, encoding="utf-8") as f:
                    line = f.readline().strip()
            except OSError:
                return None
            gitdir = line.removeprefix("gitdir:").strip()
            dotgit = os.path.join(path, gitdir)
        if os.path.isdir(dotgit):
            try:
                with open(os.path.join(dotgit, "HEAD"), encoding="utf-8") as f:
                    head = f.readline().strip()
            except OSError:
                return None
            return head.removeprefix("ref: refs/heads/") if head.startswith("ref:") else None
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def git_findings(cmd: SimpleCommand, scope: Scope) -> list[Finding]:
    """Dangerous `git` invocations (see the module docstring for what is gated)."""
    sub, idx = subcommand(cmd, GIT_GLOBAL_VALUES)
    rest = SimpleCommand("git", resolve_long(f"git {sub}", cmd.args[idx + 1:]))
    if "-C" in cmd.args[:idx]:  # `git -C repo push`: that repository's branch counts
        repo = scope.resolve(cmd.args[cmd.args.index("-C") + 1])
        if repo and os.path.isdir(repo):
            scope = scope.with_cwd(repo)
    pos = rest.positionals()
    out: list[Finding] = []
    if sub == "rebase" and any(scripted_todo(v.partition("=")[2]) for v in option_values(
            cmd.args[:idx], ("-c",)) if v.lower().startswith("sequence.editor=")):
        out.append(Finding("destruction", "git-rewrite", "a script edits the rebase's todo "
                           "list (sequence.editor), which can drop or squash commits unseen"))
    if "--no-verify" in rest.args or (sub == "commit" and rest.has_short_flag("n")):
        out.append(Finding("access_control", "no-verify",
                           f"git {sub} --no-verify skips the repository's hooks"))
    if sub == "push":
        out.extend(_push(rest, scope))
    elif sub == "reset" and rest.has_long("--hard", "--merge", "--keep"):
        out.append(Finding("destruction", "git-reset-hard",
                           "git reset --hard/--merge/--keep moves the working tree back"))
    elif sub == "checkout-index" and (rest.has_short_flag("f") or rest.has_long("--force")) and (
            rest.has_short_flag("a") or rest.has_long("--all")):
        out.append(Finding("destruction", "git-discard",
                           "git checkout-index -a -f overwrites the working tree"))
    elif sub == "clean" and (rest.has_short_flag("f") or rest.has_long("--force")) and not (
        rest.has_short_flag("n") or rest.has_long("--dry-run")
    ):
        out.append(Finding("destruction", "git-clean",
                           "git clean -f deletes untracked files for good"))
    elif sub in ("checkout", "restore") and _discards_worktree(sub, rest, scope):
        out.append(Finding("destruction", "git-discard",
                           f"git {sub} over the whole tree discards uncommitted changes"))
    elif sub == "stash" and pos[:1] in (["clear"], ["drop"]):
        out.append(Finding("destruction", "git-stash-clear",
                           f"git stash {pos[0]} drops stashed work for good"))
    elif sub == "branch" and (rest.has_short_flag("D") or (
            (rest.has_long("--delete") or rest.has_short_flag("d"))
            and (rest.has_long("--force") or rest.has_short_flag("f")))):
        # a forced delete drops commits no other branch holds; a protected one is shared
        out.extend(Finding("source_control", "git-branch-delete",
                           f"force-deletes the {'protected ' if PROTECTED_BRANCH.match(b) else ''}"
                           f"branch '{b}' (its unmerged commits go with it)") for b in pos)
    elif sub == "branch" and (rest.has_short_flag("M") or rest.has_short_flag("C")) and pos:
        out.append(Finding("source_control", "git-branch-delete",
                           f"git branch -{'M' if rest.has_short_flag('M') else 'C'} overwrites "
                           f"the branch '{pos[-1]}' if it exists"))
    elif sub == "branch" and (rest.has_short_flag("f") or rest.has_long("--force")) and len(
            pos) >= 2:
        out.append(Finding("source_control", "git-branch-delete",
                           f"git branch -f moves the branch '{pos[0]}' (its commits may be lost)"))
    elif sub == "tag" and (rest.has_short_flag("d") or rest.has_long("--delete")):
        out.append(Finding("source_control", "git-update-ref", "git tag -d deletes tags"))
    elif sub == "submodule" and pos[:1] == ["deinit"] and (
            rest.has_short_flag("f") or rest.has_long("--force", "--all")):
        out.append(Finding("destruction", "git-discard",
                           "git submodule deinit --force discards the submodules' changes"))
    elif sub == "read-tree" and (rest.has_long("--reset") or rest.has_short_flag("u")):
        out.append(Finding("destruction", "git-discard",
                           "git read-tree -u/--reset overwrites the working tree"))
    elif sub == "switch" and (rest.has_short_flag("f") or rest.has_long(
            "--force", "--discard-changes")):
        out.append(Finding("destruction", "git-discard",
                           "git switch --discard-changes throws away uncommitted changes"))
    elif sub == "reflog" and pos[:1] in (["expire"], ["delete"]):
        out.append(Finding("destruction", "git-reflog",
                           f"git reflog {pos[0]} drops the record that recovers lost commits"))
    elif (sub == "gc" and (any(a.startswith("--prune=") and a[8:] in ("now", "all")
                               for a in rest.args) or any(  # `git -c gc.pruneExpire=now gc`
            re.match(r"(?i)^gc\.\w*expire\w*=(now|all|0)", a) for a in cmd.args[:idx]))) \
            or sub == "prune":
        out.append(Finding("destruction", "git-prune",
                           f"git {sub} deletes unreachable commits now (no grace period)"))
    elif sub == "update-ref" and (rest.has_short_flag("d") or rest.has_long("--stdin") or (
            pos and PROTECTED_BRANCH.match(pos[0].removeprefix("refs/heads/")))):
        out.append(Finding("source_control", "git-update-ref",
                           "git update-ref deletes or moves a ref directly"))
    elif sub == "worktree" and pos[:1] in (["remove"], ["prune"]) and (
            rest.has_short_flag("f") or rest.has_long("--force")):
        out.append(Finding("destruction", "git-discard",
                           "git worktree remove --force discards that worktree's changes"))
    elif sub == "rm" and (rest.has_short_flag("f") or rest.has_long("--force")) and not \
            rest.has_long("--cached"):
        out.append(Finding("destruction", "git-discard",
                           "git rm -f deletes files with their uncommitted changes"))
    elif sub in ("credential", "credential-store", "credential-cache") or (
            sub == "config" and any("credential" in a for a in pos)):
        out.append(Finding("secrets", "print-secret",
                           f"git {sub} prints stored credentials"))
    elif sub in ("checkout", "switch") and (created := _option_value(
            rest.args, ("-B", "-C", "--force-create"))) and PROTECTED_BRANCH.match(created):
        out.append(Finding("source_control", "git-branch-delete",
                           f"git {sub} resets the shared branch '{created}' (its commits may "
                           "be lost)"))
    elif sub == "fetch" and any(r.startswith("+") and (PROTECTED_BRANCH.match(
            dst := r.partition(":")[2].removeprefix("refs/heads/")) or (  # a wildcard: all
                "*" in dst and r.partition(":")[2].startswith("refs/heads/"))) for r in pos[1:]):
        out.append(Finding("source_control", "git-update-ref",
                           "git fetch +src:dst overwrites a local shared branch (its local "
                           "commits are lost)"))
    elif sub == "config" and any(re.match(r"(?i)^url\..*\.(push)?insteadof$", p) for p in pos):
        out.append(Finding("supply_chain", "git-config-redirect",
                           "git config url.<base>.insteadOf sends fetches and pushes elsewhere"))
    elif sub == "apply" and _reverts_worktree(rest):
        out.append(Finding("destruction", "git-discard",
                           "git apply --reverse undoes a patch in the working tree (fed `git "
                           "diff`, it throws away the uncommitted changes)"))
    elif sub in ("checkout", "restore") and (rest.has_short_flag("p") or rest.has_long(
            "--patch")) and not (sub == "restore" and rest.has_long("--staged") and not (
                rest.has_long("--worktree") or rest.has_short_flag("W"))):
        # with no terminal, its answers come from a pipe or a file (`yes | git checkout -p`)
        out.append(Finding("destruction", "git-discard",
                           f"git {sub} --patch discards the hunks its answers select"))
    elif sub in ("apply", "am") and (rest.has_long("--unsafe-paths") or any(
            scope.write_finding(d + "/x") for d in _option_value_all(rest.args, "--directory"))):
        out.append(Finding("exfiltration", "write-outside-workspace",
                           f"git {sub} writes files outside the workspace (--directory / "
                           "--unsafe-paths)"))
    elif sub in _PRINTS_CONTENT and (found := [
            p for p in pos[1 if sub == "grep" else 0:] if secret_kind(p.rsplit(":", 1)[-1])
            and (sub != "log" or rest.has_short_flag("p") or rest.has_long("--patch"))]):
        out.append(Finding("secrets", "print-secret",
                           f"git {sub} prints {found[0]}, a secret file's content"))
    elif sub == "log" and (rest.has_short_flag("p") or rest.has_long("--patch")) and any(
            re.search(r"(?i)passw|secret|token|api.?key|private.?key|credential", v)
            for v in _option_value_all(rest.args, "-S") + _option_value_all(rest.args, "-G")
            + [a[2:] for a in rest.args if a.startswith(("-S", "-G")) and len(a) > 2]):
        out.append(Finding("secrets", "print-secret",
                           "git log -p searches history for secrets and prints what it finds"))
    elif sub in ("filter-branch", "filter-repo"):
        out.append(Finding("source_control", "git-rewrite", f"git {sub} rewrites history"))
    elif sub == "add" and (found := [p for p in pos if secret_kind(p)]):
        out.append(Finding("secrets", "git-add-secret", f"stages {found[0]} for commit"))
    return out


_RELEASE = lazy(r"^v?\d+(\.\d+)+([-+.]\w+)*$")  # a release tag's name: shared like main
_PRINTS_CONTENT = frozenset({"show", "log", "diff", "grep", "blame", "cat-file", "annotate"})


def _option_value(args: list[str], names: tuple[str, ...]) -> str | None:
    """The value of the first of `names` (`-B x`, `--force-create=x`), or None."""
    for i, arg in enumerate(args):
        if arg in names and i + 1 < len(args):
            return args[i + 1]
        if "=" in arg and arg.split("=", 1)[0] in names:
            return arg.split("=", 1)[1]
    return None


def _reverts_worktree(rest: SimpleCommand) -> bool:
    """`git apply -R` that writes the working tree: not a check, a report, or the index
    alone (`--cached` keeps the files; the staged blobs stay in the object store)."""
    reverse = rest.has_short_flag("R") or rest.has_long("--reverse")
    report = rest.has_long("--check", "--stat", "--numstat", "--summary") or (
        rest.has_long("--cached") and not rest.has_long("--index"))
    return reverse and not report


def _option_value_all(args: list[str], name: str) -> list[str]:
    return [args[i + 1] if a == name else a.split("=", 1)[1] for i, a in enumerate(args)
            if (a == name and i + 1 < len(args)) or a.startswith(name + "=")]


def _discards_worktree(sub: str, rest: SimpleCommand, scope: Scope) -> bool:
    """Checking out over a directory (`.`, `./`, `src/`, a glob) discards every change in it;
    one file at a time is the everyday undo."""
    args = rest.args
    after = args[args.index("--") + 1:] if "--" in args else rest.positionals()
    whole_tree = any(_tree_path(p, scope) for p in after)
    if sub == "checkout":
        return whole_tree or rest.has_short_flag("f") or rest.has_long("--force")
    staged_only = rest.has_long("--staged") and not (
        rest.has_long("--worktree") or rest.has_short_flag("W"))
    return whole_tree and not staged_only


def _tree_path(spec: str, scope: Scope) -> bool:
    """Does a pathspec name a whole directory (or a glob, or the top: `:/`)?"""
    if spec in (".", "./", ":/", "*", ":") or spec.startswith((":/", ":(")) or any(
            c in spec for c in "*?["):
        return True
    path = scope.resolve(spec)
    return path is None or os.path.isdir(path)


def _push(rest: SimpleCommand, scope: Scope) -> list[Finding]:
    args = rest.args
    force = rest.has_short_flag("f") or any(
        a == "--force" or a.startswith(("--force-with-lease", "--force-if-includes"))
        for a in args)
    delete = rest.has_short_flag("d") or "--delete" in args
    pos = [a for i, a in enumerate(args) if not a.startswith("-")
           and (i == 0 or args[i - 1] not in ("-o", "--push-option", "--receive-pack", "--exec"))]
    remote, refspecs = (pos[0] if pos else None), pos[1:]
    out: list[Finding] = []
    if "--prune" in args and any("*" in r or r.startswith("+") for r in pos[1:]):
        out.append(Finding("source_control", "git-push-prune",
                           "git push --prune with a wildcard refspec deletes every remote "
                           "branch missing locally"))
    if "--mirror" in args:
        out.append(Finding("source_control", "git-push-mirror",
                           "git push --mirror overwrites every ref on the remote"))
    if remote and _URL_REMOTE.match(remote):
        out.append(Finding("exfiltration", "git-push-url",
                           f"pushes to {remote}, an address that is not a configured remote"))
    if remote and _DEPLOY_REMOTE.match(remote):
        out.append(Finding("prod_infra", "deploy",
                           f"pushing to the `{remote}` remote deploys to a live environment"))
    force = force or any(r.startswith("+") for r in refspecs)
    delete = delete or any(r.startswith(":") for r in refspecs)
    if force and "--tags" in args:
        out.append(Finding("source_control", "git-force-push",
                           "force-pushes every tag (release tags on the remote are replaced)"))
    if not (force or delete):
        return out
    dests: list[str | None] = []
    for ref in refspecs:
        src, _, dst = ref.lstrip("+").partition(":")
        name = (dst or src).removeprefix("refs/heads/")
        if UNKNOWN in name or "$" in name or "*" in name:
            dests.append(None)  # computed at run time, or every branch a wildcard matches
            continue
        dests.append(current_branch(scope.cwd) if name in ("HEAD", "@") else name)
    if not refspecs:
        every = "--all" in args or "--branches" in args
        # a bare force with no lease goes to an upstream the hook does not read (it may be
        # named differently, or shared); with a lease git refuses to overwrite others' work
        blind = force and not any(a.startswith("--force-with-lease") for a in args)
        dests.append(None if every or blind else current_branch(scope.cwd))
    verb = "force-pushes" if force else "deletes"
    for dest in dests:
        if dest is None:
            out.append(Finding("source_control", "git-force-push",
                               f"{verb} a branch the hook cannot determine (computed, no "
                               "refspec, detached HEAD or --all); name the branch explicitly"))
        elif PROTECTED_BRANCH.match(dest) or dest.startswith("refs/tags/") or _RELEASE.match(dest):
            out.append(Finding("source_control", "git-force-push",
                               f"{verb} the shared branch '{dest}'"))
    return out
