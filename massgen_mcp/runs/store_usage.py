"""Per-provider usage counters shared by every process on a store: provider calls
(cancelled ones included), tokens and cost. A run adds its usage once, when its final record
is written (`RunRecordWriter.finish`, or the interrupted finalization of an abandoned run).

The file store keeps them in `<state>/usage.json` under an exclusive lock (processes on one
machine); the Redis store in one hash per provider (`HINCRBY`, atomic across machines).
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from massgen_mcp.coordination.result import RunResult

#: The counters kept per provider (cost_usd is a float; the rest are integers).
FIELDS = ("runs", "provider_calls", "cancelled_calls", "input_tokens", "output_tokens",
          "total_tokens", "cost_usd")


def usage_of(result: RunResult) -> dict[str, dict[str, float]]:
    """What a finished run adds, by provider."""
    out: dict[str, dict[str, float]] = {}
    for agent in result.agents:
        u = agent.usage
        row = out.setdefault(agent.provider, dict.fromkeys(FIELDS, 0))
        row["provider_calls"] += u.provider_calls
        row["cancelled_calls"] += u.cancelled_calls
        row["input_tokens"] += u.input_tokens
        row["output_tokens"] += u.output_tokens
        row["total_tokens"] += u.total_tokens
        row["cost_usd"] += u.cost_usd or 0.0
    for row in out.values():
        row["runs"] = 1
    return out


def merge(total: dict[str, dict[str, float]], more: dict[str, dict[str, float]]) -> None:
    for provider, row in more.items():
        into = total.setdefault(provider, dict.fromkeys(FIELDS, 0))
        for k in FIELDS:
            into[k] = into.get(k, 0) + row.get(k, 0)


def tidy(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Counters as read back (strings from Redis, anything from a file): numbers only."""
    out: dict[str, dict[str, float]] = {}
    for provider, row in rows.items():
        if not isinstance(row, dict):
            continue
        clean: dict[str, float] = {}
        for k in FIELDS:
            try:
                value = float(row.get(k, 0) or 0)
            except (TypeError, ValueError):
                value = 0.0
            clean[k] = round(value, 6) if k == "cost_usd" else int(value)
        out[str(provider)] = clean
    return out


def add_file_usage(state: Path, result: RunResult) -> None:
    """Add a run's usage to `<state>/usage.json` (locked: several processes may finish runs
    at once)."""
    more = usage_of(result)
    if not more:
        return
    state.mkdir(parents=True, exist_ok=True)
    path = state / "usage.json"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(fd, "r+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            total = json.loads(f.read() or "{}")
        except ValueError:
            total = {}
        total = tidy(total if isinstance(total, dict) else {})
        merge(total, more)
        f.seek(0)
        f.truncate()
        f.write(json.dumps(tidy(total), indent=1))
        f.flush()


def read_file_usage(state: Path) -> dict[str, dict[str, float]]:
    try:
        with (state / "usage.json").open(encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_SH)  # not while a writer has truncated it
            data = json.loads(f.read() or "{}")
    except (OSError, ValueError):
        return {}
    return tidy(data) if isinstance(data, dict) else {}
