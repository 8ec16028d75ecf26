"""`massgen-mcp export RUN_ID [--store URL] [--to DIR]`: a run's record as files.

From the Redis store (or the files of another state directory) to the file layout under
`DIR/runs/RUN_ID/`, which `massgen-mcp view --state-dir DIR` and `report` then read.
"""

from __future__ import annotations

import argparse
import sys

from massgen_mcp.cli.view import add_run_arguments, open_records, resolve_run
from massgen_mcp.paths import state_dir


def add_export_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("export", help="write a run's record as files (from --store)",
                       description="Write one run's record (meta.json, events.jsonl, "
                                   "status.json, result.json) under DIR/runs/RUN_ID/, from "
                                   "the Redis store or a state directory; `massgen-mcp view "
                                   "--state-dir DIR` reads it back.")
    add_run_arguments(p)
    p.add_argument("--to", default=None, metavar="DIR",
                   help="the state directory to write to (default: $MASSGEN_MCP_HOME or "
                        "./.massgen)")


def export_main(args: argparse.Namespace) -> int:
    from pathlib import Path

    from massgen_mcp.errors import MassgenError
    from massgen_mcp.runs.store import RunStore
    from massgen_mcp.runs.store_export import export_run

    target = state_dir(args.to)
    try:
        store = open_records(args)
        run_id = resolve_run(store, args.run_id)
        assert run_id is not None
        if isinstance(store, RunStore) and Path(store.state).resolve() == target:
            print(f"massgen-mcp export: run {run_id} is already in {target} (give --to DIR "
                  "for another directory)", file=sys.stderr)
            return 0
        out = export_run(store, run_id, target)
    except MassgenError as e:
        print(f"massgen-mcp export: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"massgen-mcp export: cannot write under {target}: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out}", file=sys.stderr)
    return 0
