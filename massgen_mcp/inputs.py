"""Files given to a run as context: read safely, bounded, never outside the working directory."""

from __future__ import annotations

from pathlib import Path

from massgen_mcp.errors import InputError

MAX_FILE_BYTES = 200_000
MAX_TOTAL_BYTES = 600_000
MAX_FILES = 20


def read_context_files(paths: list[str], root: Path | None = None) -> str:
    """The files as one context block, each under a `=== path ===` header.

    Paths are relative to `root` (the server's working directory) and may not leave it,
    not even through a symlink. Binary files and files over the size limits are refused with
    an error that says which file and why.
    """
    if not paths:
        return ""
    if len(paths) > MAX_FILES:
        raise InputError(f"files: at most {MAX_FILES} files per call (got {len(paths)})")
    base = (root or Path.cwd()).resolve()
    parts, total = [], 0
    for raw in paths:
        if not isinstance(raw, str) or not raw.strip():
            raise InputError("files: every entry must be a non-empty path string")
        target = (base / raw).resolve()
        if not target.is_relative_to(base):
            raise InputError(f"files: '{raw}' is outside the working directory {base}; "
                             "give a path inside it")
        if not target.is_file():
            what = "a directory" if target.is_dir() else "not found"
            raise InputError(f"files: '{raw}' is {what} (paths are relative to {base})")
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


def join_context(context: str | None, files_text: str) -> str | None:
    pieces = [p for p in (context, files_text) if p and p.strip()]
    return "\n\n".join(pieces) if pieces else None
