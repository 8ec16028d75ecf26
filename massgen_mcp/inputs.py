"""Files given to a run as context: read safely, bounded, never outside the working directory,
and never a secret (`.env`, keys, credential stores: what the PreToolUse hook protects) unless
the operator allowed it; the contents are sent to every provider of the team."""

from __future__ import annotations

from pathlib import Path

from massgen_mcp.errors import InputError

MAX_FILE_BYTES = 200_000
MAX_TOTAL_BYTES = 600_000
MAX_FILES = 20
SECRET_FILES_FLAG = "--allow-secret-files"


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
        total += len(data)
        if total > MAX_TOTAL_BYTES:
            raise InputError(f"files: together the files exceed {MAX_TOTAL_BYTES:,} bytes")
        text = data.decode("utf-8", errors="replace")
        parts.append(f"=== {target.relative_to(base)} ===\n{text}")
    return "\n\n".join(parts)


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
    kind = None if allow_secrets else (secret_kind(str(target)) or secret_kind(raw))
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
