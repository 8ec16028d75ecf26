"""`open_store(url, state)`: the run records `--store URL` names (`store_url.py` reads it).

No URL: the files under the state directory (`RunStore`), exactly as without the option.
A Redis URL: `RedisStore`, imported only then (redis-py is not loaded otherwise).
"""

from __future__ import annotations

from pathlib import Path

from massgen_mcp.redaction import add_process_secret
from massgen_mcp.runs.store import RunRecords, RunStore
from massgen_mcp.runs.store_url import check_store_url, url_password


def open_store(url: str | None, state: Path, **options: float) -> RunRecords:
    """The run records for `--store url` (None: the files in `state`). Raises `ConfigError`
    (with the password masked) for a bad URL or a Redis that does not answer."""
    if url is None or url == "":
        return RunStore(state)
    url = check_store_url(url)
    add_process_secret(url_password(url))  # never in a record, an event or a provider call
    from massgen_mcp.runs.scale.redis_store import RedisStore  # redis is imported only here

    return RedisStore(url, state, **options)
