"""The run viewer: a run's files rendered as a page, live while the run runs.

`load_run_view` reads a run (model.py); `run_page`/`runs_page` render it (page.py, with the
safe Markdown of markdown.py and the word diff of diff.py); `viewer_app` serves it (web.py)
for `massgen-mcp view` and the HTTP transport; `report_html` is the self-contained file of
`massgen-mcp report`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from massgen_mcp.runs.store import RunRecords

_served_at: str | None = None  # the viewer's base URL when this process serves it


def set_served_at(url: str | None) -> None:
    """Where this process serves the viewer (the HTTP transport sets it), for `view_hint`."""
    global _served_at
    _served_at = url.rstrip("/") if url else None


def view_hint(run_id: str) -> str:
    """One short line saying where to watch or share a run."""
    from massgen_mcp.paths import own_command

    me = own_command()
    if _served_at:
        return f"— Watch: {_served_at}/{run_id} (or: {me} view {run_id})"
    return f"— Watch: {me} view {run_id} · share: {me} report {run_id}"


def report_html(state: Path | RunRecords, run_id: str) -> str:
    """The run as one self-contained HTML file: no script, no network fetch. `state`: the
    run records, or a state directory (its files)."""
    from massgen_mcp.runs.view.model import load_run_view
    from massgen_mcp.runs.view.page import run_page

    return run_page(load_run_view(state, run_id), standalone=True)
