"""GNU long options as the tools read them: unique prefixes are accepted (`--rec`).

getopt_long and git's parse-options take any unambiguous prefix of a long option, and git
also `--no-<option>` for negatable ones. `resolve_long` rewrites each argument to the full
option(s) it can mean, so the rules match `--recursive`, never a spelling. A prefix that
fits several options stands for all of them (the tool would refuse it or pick one; the
hook judges the worst). The tables come from each tool's own `--help` (GNU coreutils,
sed, tar, git 2.4x); a tool not listed keeps its arguments as written. Standard library
only.
"""

from __future__ import annotations

_TABLE: dict[str, str | tuple[str, ...]] = {
    "npm": "dry-run",
    "man": (  # man-db 2.x
        "all apropos ascii catman config-file debug default ditroff encoding extension "
        "gxditview help html ignore-case locale local-file location location-cat manpath "
        "match-case names-only no-hyphenation no-justification no-subpages nh nj "
        "pager preprocessor prompt recode regex sections systems troff troff-device update "
        "usage warnings whatis wildcard"
    ),
    "pnpm": "dry-run",
    "yarn": "dry-run",
    "rm": (
        "dir force interactive no-preserve-root one-file-system preserve-root recursive "
        "verbose"
    ),
    "cp": (
        "archive attributes-only backup context copy-contents dereference force "
        "interactive link no-clobber no-dereference no-preserve no-target-directory "
        "one-file-system parents preserve recursive reflink remove-destination sparse "
        "strip-trailing-slashes suffix symbolic-link target-directory update verbose"
    ),
    "mv": (
        "backup context force interactive no-clobber no-target-directory "
        "strip-trailing-slashes suffix target-directory update verbose"
    ),
    "chmod": "changes no-preserve-root preserve-root quiet recursive reference silent verbose",
    "chown": (
        "changes dereference from no-dereference no-preserve-root preserve-root quiet "
        "recursive reference silent verbose"
    ),
    "sed": (
        "debug expression file follow-symlinks in-place line-length null-data posix quiet "
        "regexp-extended sandbox separate silent unbuffered"
    ),
    "tar": (
        "absolute-names acls add-file after-date anchored append atime-preserve "
        "auto-compress backup block-number blocking-factor bzip2 catenate check-device "
        "check-links checkpoint checkpoint-action clamp-mtime compare compress "
        "concatenate confirmation create delay-directory-restore delete dereference diff "
        "directory exclude exclude-backups exclude-caches exclude-caches-all "
        "exclude-caches-under exclude-from exclude-ignore exclude-ignore-recursive "
        "exclude-tag exclude-tag-all exclude-tag-under exclude-vcs exclude-vcs-ignores "
        "extract file files-from force-local format full-time get group group-map gunzip "
        "gzip hard-dereference hole-detection ignore-case ignore-command-error "
        "ignore-failed-read ignore-zeros incremental index-file info-script interactive "
        "keep-directory-symlink keep-newer-files keep-old-files label level list "
        "listed-incremental lzip lzma lzop mode mtime multi-volume new-volume-script "
        "newer newer-mtime no-acls no-anchored no-auto-compress no-check-device "
        "no-delay-directory-restore no-ignore-case no-ignore-command-error no-null "
        "no-overwrite-dir no-quote-chars no-recursion no-same-owner no-same-permissions "
        "no-seek no-selinux no-unquote no-verbatim-files-from no-wildcards "
        "no-wildcards-match-slash no-xattrs null numeric-owner occurrence old-archive "
        "one-file-system one-top-level overwrite overwrite-dir owner owner-map pax-option "
        "portability posix preserve-order preserve-permissions quote-chars quoting-style "
        "read-full-records record-size recursion recursive-unlink remove-files restrict "
        "rmt-command rsh-command same-order same-owner same-permissions seek selinux "
        "show-defaults show-omitted-dirs show-snapshot-field-ranges show-stored-names "
        "show-transformed-names skip-old-files sort sparse sparse-version starting-file "
        "strip-components suffix tape-length test-label to-command to-stdout totals touch "
        "transform uncompress ungzip unlink-first unquote update usage "
        "use-compress-program utc verbatim-files-from verbose verify volno-file warning "
        "wildcards wildcards-match-slash xattrs xattrs-exclude xattrs-include xform xz "
        "zstd"
    ),
    "ln": (
        "backup directory force interactive logical no-dereference no-target-directory "
        "physical relative suffix symbolic target-directory verbose"
    ),
    "install": (
        "backup compare context directory group mode no-target-directory owner "
        "preserve-context preserve-timestamps strip strip-program suffix target-directory "
        "verbose"
    ),
    "shred": "exact force iterations random-source remove size verbose zero",
    "truncate": "io-blocks no-create reference size",
    "tee": "append ignore-interrupts output-error",
    "git push": (
        "all atomic delete dry-run exec follow-tags force force-if-includes "
        "force-with-lease ipv4 ipv6 mirror no-verify porcelain progress prune push-option "
        "quiet receive-pack recurse-submodules repo set-upstream signed tags thin verbose"
    ),
    "git commit": (
        "ahead-behind all allow-empty allow-empty-message amend author branch cleanup "
        "date dry-run edit file fixup gpg-sign include interactive long message "
        "no-post-rewrite no-verify null only patch pathspec-file-nul pathspec-from-file "
        "porcelain quiet reedit-message reset-author reuse-message short signoff squash "
        "status template trailer untracked-files verbose"
    ),
    "git reset": (
        "hard intent-to-add keep merge mixed no-refresh patch pathspec-file-nul "
        "pathspec-from-file quiet recurse-submodules soft"
    ),
    "git clean": "dry-run exclude force interactive quiet",
    "git checkout": (
        "conflict detach force guess ignore-other-worktrees ignore-skip-worktree-bits "
        "merge orphan ours overlay overwrite-ignore patch pathspec-file-nul "
        "pathspec-from-file progress quiet recurse-submodules theirs track"
    ),
    "git restore": (
        "conflict ignore-skip-worktree-bits ignore-unmerged merge ours overlay patch "
        "pathspec-file-nul pathspec-from-file progress quiet recurse-submodules source "
        "staged theirs worktree"
    ),
    "git branch": (
        "abbrev all color column contains copy create-reflog delete edit-description "
        "force format ignore-case list merged move no-contains no-merged points-at quiet "
        "recurse-submodules remotes set-upstream-to show-current sort track "
        "unset-upstream verbose"
    ),
}
_NEGATABLE_PREFIX = "git "
_CACHE: dict[str, tuple[str, ...]] = {}


def _options(tool: str) -> tuple[str, ...]:
    if tool not in _CACHE:
        raw = _TABLE.get(tool, "")
        text = raw if isinstance(raw, str) else "".join(raw)
        names = text.split()
        if tool.startswith(_NEGATABLE_PREFIX):
            names += [f"no-{n}" for n in names if not n.startswith("no-")]
        _CACHE[tool] = tuple(names)
    return _CACHE[tool]


def resolve_long(tool: str, args: list[str]) -> list[str]:
    """`args` with every abbreviated long option of `tool` written out in full.

    `tool` is a program (`rm`) or `git <subcommand>`. Arguments after `--` are operands
    and stay as they are.
    """
    names = _options(tool)
    if not names:
        return args
    out: list[str] = []
    operands = False
    for arg in args:
        if operands or not arg.startswith("--") or arg == "--":
            operands = operands or arg == "--"
            out.append(arg)
            continue
        name, eq, value = arg[2:].partition("=")
        if name in names:
            out.append(arg)
            continue
        matches = [n for n in names if n.startswith(name)] if name else []
        if not matches:
            out.append(arg)
        out.extend(f"--{m}{eq}{value}" for m in matches)
    return out


def option_values(args: list[str], names: tuple[str, ...]) -> list[str]:
    """Values of long options `--x=v` / `--x v` and short ones `-I v` / `-Iv` in `names`."""
    out: list[str] = []
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                out.append(args[i + 1])
            elif name.startswith("--") and arg.startswith(name + "="):
                out.append(arg[len(name) + 1:])
            elif not name.startswith("--") and arg.startswith(name) and len(arg) > len(name):
                out.append(arg[len(name):].removeprefix("="))  # `-TT=cmd` as `-TTcmd`
    return out
