"""Reading and writing the guard's state files safely. Standard library only, no pathlib.

`read_bytes` / `read_json` / `read_text` never block and never follow a file out of its
directory: a state file must be a regular file of at most `MAX_STATE_BYTES`, opened with
O_NONBLOCK (a FIFO cannot hang the hook) and O_NOFOLLOW; a final symlink is allowed only to
a file in the same directory. Anything else is a `StateFileError` naming the file, on which
the hook denies. `write_json_atomic` writes temp file + rename.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the hook ~8 ms of start-up
    from typing import Any


def write_json_atomic(path: str, data: Any) -> None:
    """Write JSON so readers see the old file or the new one, never a torn one."""
    from massgen_mcp.paths import write_atomic  # stdlib only; writers only

    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


class StateFileError(ValueError):
    """A checkpoint state file exists but cannot be used; the message names the file."""


MAX_STATE_BYTES = 4 << 20


def read_bytes(path: str, limit: int = MAX_STATE_BYTES) -> bytes | None:
    """A state file's bytes, or None if it does not exist; StateFileError if it is not a
    regular file of sane size (a FIFO, device or directory, a symlink out of its directory,
    over `limit`). Never blocks: a FIFO is opened non-blocking and refused."""
    import errno
    import stat

    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise StateFileError(f"{path} cannot be read ({e.strerror})") from None
    target = path
    if stat.S_ISLNK(info.st_mode):
        target = os.path.realpath(path)
        if os.path.dirname(target) != os.path.realpath(os.path.dirname(path)):
            raise StateFileError(f"{path} is a symbolic link out of its directory (to "
                                 f"{target}); state files must be regular files")
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(
        os, "O_CLOEXEC", 0)
    try:
        fd = os.open(target, flags)
    except FileNotFoundError:
        return None
    except OSError as e:
        why = "a symbolic link" if e.errno == errno.ELOOP else e.strerror
        raise StateFileError(f"{path} cannot be read ({why})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(info.st_mode) else "a directory"
                    if stat.S_ISDIR(info.st_mode) else "a device or socket")
            raise StateFileError(f"{path} is {kind}, not a regular file")
        if info.st_size > limit:
            raise StateFileError(f"{path} is {info.st_size:,} bytes, over the {limit:,} a "
                                 "state file may have")
        data = os.read(fd, limit + 1)
        if len(data) > limit:
            raise StateFileError(f"{path} is over the {limit:,} bytes a state file may have")
        return data
    finally:
        os.close(fd)


def read_json(path: str) -> Any:
    """The parsed file, or None if it does not exist. A malformed or unsafe file (see
    `read_bytes`): StateFileError naming it."""
    data = read_bytes(path)
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise StateFileError(f"{path} is not valid JSON ({e})") from None


def read_text(path: str) -> str | None:
    """A small text file the guard owns (the operator's hardline file), read safely."""
    data = read_bytes(path, 1 << 20)
    return None if data is None else data.decode("utf-8", errors="replace")
