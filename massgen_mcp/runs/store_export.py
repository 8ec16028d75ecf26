"""`massgen-mcp export`: one run's record, from any store, as the file store's layout.

The run lands in `<target>/runs/<run_id>/` (meta.json, events.jsonl, status.json,
result.json), so `RunStore(target)`, `massgen-mcp view --state-dir <target>` and `report`
read it like a run recorded there. What is written is what the store holds: already
redacted when it was recorded, and redacted again here (the same redactor has nothing left to
mask but costs nothing).
"""

from __future__ import annotations

import json
from pathlib import Path

from massgen_mcp.errors import InputError
from massgen_mcp.paths import runs_dir, write_atomic
from massgen_mcp.runs.store import RunRecords, check_run_id


def export_run(store: RunRecords, run_id: str, target: Path) -> Path:
    """Write the run's files under `target` (a state directory); returns the run's
    directory. A run still running is refused: its export would read as interrupted."""
    check_run_id(run_id)
    result = store.load(run_id)  # RunNotFoundError names the store
    if result.status == "running":
        raise InputError(f"run {run_id} is still running; export it once it has finished "
                         f"(massgen-mcp view {run_id} follows it)")
    meta = store.meta(run_id)
    events = store.events(run_id)
    out = runs_dir(target) / run_id
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result.model_dump(mode="json"), ensure_ascii=False)
    write_atomic(out / "meta.json", json.dumps(meta, ensure_ascii=False))
    write_atomic(out / "events.jsonl",
                 "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events))
    write_atomic(out / "status.json", text)
    write_atomic(out / "result.json", text)
    return out
