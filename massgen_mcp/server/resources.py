"""The run resources (the index, one run, its answer, view and events, and their pages)
and the prompts.

Registered at start, so this module imports little: what a resource needs to answer is
imported when it is read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError

from massgen_mcp.errors import MassgenError
from massgen_mcp.server.users import asking

if TYPE_CHECKING:
    from massgen_mcp.app import App


@contextmanager
def _not_found() -> Iterator[None]:
    """Our errors reading a run (no such run, another user's) as the SDK's "not found"."""
    try:
        yield
    except MassgenError as e:
        raise ResourceNotFoundError(str(e)) from None


def register_index(mcp: MCPServer, app: App) -> None:
    """The runs index: a static resource."""
    @mcp.resource("massgen://runs", name="runs", mime_type="application/json",
                  description="The 50 most recent runs with status and winner.")
    def runs_index() -> str:
        from massgen_mcp.server.tools import run_list

        return run_list(app, 50).model_dump_json(indent=1)


def register_run_resources(mcp: MCPServer, app: App) -> None:
    """One run as resources (templates): its record, answer, view and events, and pages."""
    from massgen_mcp.server.result_pages import register_result_pages, whole_or_index

    # Another user's run reads as one that does not exist (runs/owners.py).
    def record(run_id: str) -> str:
        return app.get_run(run_id, asking()).model_dump_json(indent=1)

    def events(run_id: str) -> str:
        return "\n".join(json.dumps(e) for e in app.run_events(run_id, asking()))

    @mcp.resource("massgen://runs/{run_id}", name="run", mime_type="application/json",
                  description="A run's status and result (JSON); an index of its pages when "
                              "it is too large for one message.")
    def run_resource(run_id: str) -> str:
        with _not_found():
            return whole_or_index(f"massgen://runs/{run_id}", record(run_id))

    @mcp.resource("massgen://runs/{run_id}/answer", name="run-answer",
                  mime_type="text/markdown",
                  description="A run's whole final answer (Markdown text).")
    def run_answer(run_id: str) -> str:
        with _not_found():
            result = app.get_run(run_id, asking())
        if result.final_answer is None:
            raise ResourceNotFoundError(f"run {run_id} has no final answer (status "
                                        f"{result.status})")
        return result.final_answer

    @mcp.resource("massgen://runs/{run_id}/view", name="run-view", mime_type="text/html",
                  description="A run as the viewer shows it (an HTML fragment, every value "
                              "escaped), for the run viewer App.")
    def run_view(run_id: str) -> str:
        from massgen_mcp.runs.view.model import load_run_view
        from massgen_mcp.runs.view.page import run_main

        with _not_found():
            live = app.live_run(run_id, asking())
            view = load_run_view(app.store, run_id, live.snapshot() if live else None)
        state = "live" if view.live else "done"
        return f'<div data-state="{state}">{run_main(view)}</div>'

    @mcp.resource("massgen://runs/{run_id}/events", name="run-events",
                  mime_type="application/x-ndjson",
                  description="A run's coordination events, one JSON object per line; an "
                              "index of its pages when too large for one message.")
    def run_events(run_id: str) -> str:
        with _not_found():
            return whole_or_index(f"massgen://runs/{run_id}/events", events(run_id))

    register_result_pages(mcp, record, events)


def register_prompts(mcp: MCPServer) -> None:
    """The common uses as prompts (slash commands in clients)."""
    @mcp.prompt(title="Ask the team")
    def consensus(question: str) -> str:
        """Ask a team of models a hard question and get the answer they converge on."""
        return (f"Use the massgen run_consensus tool to ask a team of models:\n\n{question}\n\n"
                "Then report the final answer, who won with how many votes, and any dissent "
                "worth knowing from the votes' reasons.")

    @mcp.prompt(title="Team review")
    def review(target: str, focus: str = "correctness, security and maintainability") -> str:
        """Have a team of models review code, a design or a document."""
        return (f"Use the massgen run_consensus tool to get a team review of {target}. Give the "
                f"team the relevant files with the `files` argument. Focus: {focus}. Ask for "
                "concrete findings ranked by severity, each with a suggested fix. Report the "
                "team's final review and where reviewers disagreed.")

    @mcp.prompt(name="plan", title="Team plan")
    def plan_prompt(goal: str) -> str:
        """Have a team of models agree on a validated task plan for a goal."""
        return (f"Use the massgen plan tool to get a team-agreed task plan for: {goal}\n\n"
                "Then summarize the plan's chunks and first tasks, and follow it.")
