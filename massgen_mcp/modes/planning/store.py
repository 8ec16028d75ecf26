"""Stored plans: ``<state dir>/plans/<plan_id>/`` with ``plan.json``, ``plan.md`` and
``metadata.json``.

Every file is written with `paths.write_atomic` (a temporary file, fsync, rename);
``metadata.json`` is written last, so a directory without it is an unfinished save and is
ignored. Plan ids look like ``plan_20261130T183300Z_ab12``: they sort by creation second, and
the random suffix plus an exclusive ``mkdir`` keeps them unique within a second.

A plan belongs to whoever asked for it (``owner`` in its metadata, as a run's meta records
its owner: runs/owners.py). Every reader takes the caller and treats a plan it may not see
exactly as one that does not exist, and ``latest`` is the caller's latest.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from massgen_mcp.errors import InputError, MassgenError
from massgen_mcp.modes.planning.answer_format import plan_markdown
from massgen_mcp.modes.planning.schema import Plan, accepted_task_range, validate_plan
from massgen_mcp.paths import plans_dir, write_atomic
from massgen_mcp.runs.owners import LOCAL, LOCAL_NAME, Principal

log = logging.getLogger(__name__)

LATEST = "latest"
_EXAMPLE_ID = "plan_20261130T183300Z_ab12"


class PlanMetadata(BaseModel):
    """What is known about how a stored plan was made."""

    plan_id: str
    goal: str
    depth: str
    run_id: str | None = Field(description="The consensus run that produced the plan.")
    created: str = Field(description="Creation time, ISO 8601 UTC.")
    task_count: int
    chunk_count: int
    consensus: dict[str, Any] = Field(
        default_factory=dict, description="Votes and tally of the run that chose the plan."
    )
    owner: str = Field(default=LOCAL_NAME, description="Who asked for the plan.")


class StoredPlan(BaseModel):
    """A plan as stored: the structured plan, its Markdown, its metadata and its folder."""

    plan_id: str
    goal: str
    depth: str
    plan: Plan
    markdown: str
    metadata: PlanMetadata
    path: str = Field(description="The folder holding plan.json, plan.md and metadata.json.")


class PlanSummary(BaseModel):
    """One line of `list_plans`."""

    plan_id: str
    goal: str
    depth: str
    created: str
    task_count: int
    run_id: str | None = None


def save_plan(
    state_dir: Path,
    *,
    goal: str,
    depth: str,
    plan: Plan | Mapping[str, Any],
    run_id: str | None,
    consensus: dict[str, Any],
    owner: str = LOCAL_NAME,
) -> StoredPlan:
    """Store a plan and return it as stored.

    A `Plan` is stored as is; a mapping (e.g. `ParsedAnswer.data`) is checked with
    `validate_plan` first and raises `AnswerRejected` if invalid. `consensus` (votes, tally)
    must be JSON-serialisable.
    """
    accepted_task_range(depth)  # InputError for an unknown depth
    if not isinstance(plan, Plan):
        plan = validate_plan(plan, depth)
    root = plans_dir(Path(state_dir))
    root.mkdir(parents=True, exist_ok=True)
    folder, plan_id, now = _new_folder(root)
    markdown = plan_markdown(plan, goal)
    metadata = PlanMetadata(
        plan_id=plan_id,
        goal=goal,
        depth=depth,
        run_id=run_id,
        created=now.isoformat(timespec="microseconds"),
        task_count=len(plan.tasks),
        chunk_count=len(plan.chunks()),
        consensus=consensus,
        owner=owner,
    )
    write_atomic(folder / "plan.json", plan.model_dump_json(indent=2))
    write_atomic(folder / "plan.md", markdown)
    # last: marks the save done
    write_atomic(folder / "metadata.json", metadata.model_dump_json(indent=2))
    return StoredPlan(
        plan_id=plan_id, goal=goal, depth=depth, plan=plan, markdown=markdown,
        metadata=metadata, path=str(folder),
    )


def get_plan(state_dir: Path, plan_id: str, who: Principal = LOCAL) -> StoredPlan:
    """A stored plan by id, or the newest one `who` may see for ``"latest"``.

    Raises `InputError` for a malformed or unknown id (listing the newest ids), or when
    ``"latest"`` is asked for and no plan exists yet. A plan of another user is unknown.
    """
    root = plans_dir(Path(state_dir))
    wanted = plan_id.strip() if isinstance(plan_id, str) else ""
    if wanted.lower() == LATEST:
        newest = _metadata_newest_first(root, who)
        if not newest:
            raise InputError(
                f"no plans are stored in {root} yet: make one with the `plan` tool or "
                f"`massgen-mcp plan \"<goal>\"`"
            )
        wanted = newest[0].plan_id
    _check_id(wanted)
    folder = root / wanted
    metadata = _metadata(folder)
    if metadata is None or not who.may_see(metadata.owner):
        known = [m.plan_id for m in _metadata_newest_first(root, who)[:5]]
        listing = f"newest plans: {', '.join(known)}" if known else "no plans are stored yet"
        raise InputError(f"no plan {wanted!r} in {root} ({listing}); or use 'latest'")
    try:
        plan = Plan.model_validate_json((folder / "plan.json").read_bytes())
        markdown = (folder / "plan.md").read_text(encoding="utf-8")
    except (OSError, ValidationError) as e:
        raise MassgenError(f"plan {wanted!r} in {folder} is damaged: {e}") from None
    return StoredPlan(
        plan_id=wanted, goal=metadata.goal, depth=metadata.depth, plan=plan,
        markdown=markdown, metadata=metadata, path=str(folder),
    )


def list_plans(state_dir: Path, limit: int = 20, who: Principal = LOCAL) -> list[PlanSummary]:
    """Stored plans `who` may see, newest first (at most `limit`)."""
    return [
        PlanSummary(
            plan_id=m.plan_id, goal=m.goal, depth=m.depth, created=m.created,
            task_count=m.task_count, run_id=m.run_id,
        )
        for m in _metadata_newest_first(plans_dir(Path(state_dir)), who)[: max(limit, 0)]
    ]


def _check_id(plan_id: str) -> None:
    if (
        not plan_id
        or plan_id.startswith(".")
        or any(c in plan_id for c in "/\\\0")
        or ".." in plan_id
    ):
        raise InputError(
            f"{plan_id!r} is not a plan id: ids look like '{_EXAMPLE_ID}' (or use 'latest')"
        )


def _new_folder(root: Path) -> tuple[Path, str, datetime]:
    for _ in range(20):
        now = datetime.now(UTC)
        plan_id = f"plan_{now:%Y%m%dT%H%M%SZ}_{secrets.token_hex(2)}"
        folder = root / plan_id
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        return folder, plan_id, now
    raise MassgenError(f"could not pick a free plan id in {root}")


def _metadata(folder: Path) -> PlanMetadata | None:
    """A plan folder's metadata; None for an unfinished save or a damaged file (logged)."""
    try:
        return PlanMetadata.model_validate(json.loads((folder / "metadata.json").read_bytes()))
    except FileNotFoundError:
        return None  # an unfinished save
    except (OSError, ValueError) as e:
        log.warning("skipping damaged plan folder %s: %s", folder, e)
        return None


def _metadata_newest_first(root: Path, who: Principal) -> list[PlanMetadata]:
    try:
        folders = [p for p in root.iterdir() if p.name.startswith("plan_")]
    except FileNotFoundError:
        return []
    found = [m for m in map(_metadata, folders) if m is not None and who.may_see(m.owner)]
    # The id sorts by second; the stored time (microseconds) orders plans within a second.
    found.sort(key=lambda m: (m.created, m.plan_id), reverse=True)
    return found
