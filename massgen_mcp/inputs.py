"""What a run sends to providers besides the prompts: the task, the context text and files.

Files are read safely, bounded, never outside the working directory, and never a secret
(`.env`, keys, token-bearing files: the one list, in `hook/scope.py`, and a private key or a
token in a git config found by content) unless the operator allowed it. Task and context are
bounded in size whoever sends them (stdio has no request size limit of its own) and the
configured keys are replaced with `***` in them: everything here is sent to every provider
of the team, on every turn.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Iterable
from pathlib import Path

from massgen_mcp.errors import InputError

MAX_FILE_BYTES = 200_000
MAX_TOTAL_BYTES = 600_000
MAX_FILES = 20
#: The task (for plan and checkpoint: goal, objective, constraints and action goals together)
#: and the context (text and files together), in characters.
MAX_TASK_CHARS = 100_000
MAX_CONTEXT_CHARS = 1_000_000
SECRET_FILES_FLAG = "--allow-secret-files"


def screen_inputs(task: str, context: str | None, secrets: Iterable[str]
                  ) -> tuple[str, str | None]:
    """The task and context as they may be sent: within the size limits (InputError
    otherwise) and with the configured keys (and anything shaped like a key) redacted."""
    from massgen_mcp.redaction import Redactor

    for what, text, limit, fix in (
            ("the task", task, MAX_TASK_CHARS, "put long material in 'context' or 'files'"),
            ("the context", context, MAX_CONTEXT_CHARS, "pass an excerpt")):
        if text is not None and len(text) > limit:
            raise InputError(f"{what} is {len(text):,} characters; the limit is {limit:,} "
                             f"(it is sent to every agent on every turn): {fix}")
    redactor = Redactor(secrets)
    return redactor.text(task), (redactor.text(context) if context is not None else None)


def read_context_files(paths: list[str], root: Path | None = None, *,
                       allow_secrets: bool = False) -> str:
    """The files as one context block, each under a `=== path ===` header.

    Paths are relative to `root` (the server's working directory) and may not leave it,
    not even through a symlink. Binary files and files over the size limits are refused with
    an error that says which file and why. So are secret-bearing files (the hook's notion of
    a secret), unless `allow_secrets`. Each path is checked by `check_context_path`.
    """
    if not paths:
        return ""
    if len(paths) > MAX_FILES:
        raise InputError(f"files: at most {MAX_FILES} files per call (got {len(paths)})")
    base = (root or Path.cwd()).resolve()
    parts, total = [], 0
    for raw in paths:
        target = check_context_path(raw, base, allow_secrets=allow_secrets)
        size = target.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputError(f"files: '{raw}' is {size:,} bytes; the limit is "
                             f"{MAX_FILE_BYTES:,} per file (pass an excerpt in 'context')")
        try:
            data = target.read_bytes()
        except OSError as e:
            raise InputError(f"files: cannot read '{raw}': {e.strerror}") from None
        if b"\x00" in data[:8192]:
            raise InputError(f"files: '{raw}' looks binary; only text files can be given")
        kind = None if allow_secrets else _secret_content(target, data)
        if kind:
            raise InputError(f"files: '{raw}' holds {kind}, which is never sent to the "
                             "models; pass the non-secret parts in 'context', or start the "
                             f"server with {SECRET_FILES_FLAG}")
        total += len(data)
        if total > MAX_TOTAL_BYTES:
            raise InputError(f"files: together the files exceed {MAX_TOTAL_BYTES:,} bytes")
        text = data.decode("utf-8", errors="replace")
        parts.append(f"=== {target.relative_to(base)} ===\n{text}")
    return "\n\n".join(parts)


_PRIVATE_KEY = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----")
_URL_PASSWORD = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@")
_GIT_HEADER = re.compile(rb"extraheader\s*=\s*(authorization|private-token)", re.I)


def _secret_content(path: Path, data: bytes) -> str | None:
    """Secrets a file's name does not show: a private key pasted anywhere, or a git config
    whose remote URL or extra header carries a token (`https://x:ghp_...@github.com`)."""
    if _PRIVATE_KEY.search(data):
        return "a private key"
    if (".git" in path.parts or path.name == ".gitmodules") and (
            _URL_PASSWORD.search(data) or _GIT_HEADER.search(data)):
        return "a git config with a token (in a remote URL or an extra header)"
    return None


def secret_file(path: Path, data: bytes | None = None) -> str | None:
    """What kind of secret the file at `path` is, or None: THE rule for every file the
    server sends on (`files`, workspace seeding from `context_paths`, the agents' file
    tools). By name (the hook's list, `hook/scope.py`: `.env*`, `*.env`, keys, tokens,
    coding CLIs' logins, histories), as a hard link (another name for any file, `.env`
    included, that the name check cannot see), and by content when `data` is given."""
    from massgen_mcp.hook.scope import secret_kind

    kind = secret_kind(str(path))
    if kind is None and not path.is_symlink():
        kind = secret_kind(str(path.resolve()))
    if kind is not None:
        return kind
    try:
        st = path.lstat()
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        return "a hard link (another name for a file that may be a secret)"
    return _secret_content(path, data) if data is not None else None


def check_context_path(raw: object, base: Path, *, allow_secrets: bool = False,
                       what: str = "files", relative_to: Path | None = None) -> Path:
    """The resolved regular file `raw` names, or InputError: the rules of every tool argument
    that reads a file (`files`, `trajectory_path`, ...). Inside `base` (the server's working
    directory), not even through a symlink; never a secret unless `allow_secrets`.
    `relative_to`: where a relative path starts (default `base`)."""
    from massgen_mcp.hook.scope import secret_kind

    if not isinstance(raw, str) or not raw.strip():
        raise InputError(f"{what}: every entry must be a non-empty path string")
    if "\x00" in raw:
        raise InputError(f"{what}: {raw!r} contains a NUL character (\\0); give a plain path")
    target = ((relative_to or base) / Path(raw).expanduser()).resolve()
    if not target.is_relative_to(base):
        raise InputError(f"{what}: '{raw}' is outside the working directory {base}; give a "
                         "path inside it")
    kind = None if allow_secrets else (secret_kind(str(target)) or secret_kind(raw)
                                       or (secret_file(target) if target.is_file() else None))
    if kind:
        raise InputError(f"{what}: '{raw}' is {kind}, which is never sent to the models; "
                         "pass the non-secret parts in 'context', or start the server with "
                         f"{SECRET_FILES_FLAG}")
    if not target.is_file():
        what_it_is = "a directory" if target.is_dir() else "not found"
        raise InputError(f"{what}: '{raw}' is {what_it_is} (paths are relative to "
                         f"{relative_to or base})")
    return target


def join_context(context: str | None, files_text: str) -> str | None:
    pieces = [p for p in (context, files_text) if p and p.strip()]
    return "\n\n".join(pieces) if pieces else None
