"""How deep a tool call goes before it reaches a backend (docs/run-path.md draws the path).

A real `run_consensus` goes through the SDK's in-memory client to a team of function-backend
agents; the first provider call records the chain of our own frames from the tool function to
the backend. The run executes in the server's background task group while the request waits
for it, and each agent is a task of its own, so the chain is stitched from three tasks: the
request's (suspended where it hands the run over), the run's and the agent's (running).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import anyio
import yaml
from mcp_harness import memory_client

import massgen_mcp
from massgen_mcp.backends.function import FunctionCall, register_function, unregister_function
from massgen_mcp.messages import Turn

#: Frames of our code between the SDK's tool dispatch and the backend (issue 33: at most 12).
MAX_STEPS = 12
PACKAGE = str(Path(massgen_mcp.__file__).parent)
BACKENDS = str(Path(PACKAGE) / "backends")
#: The frame the SDK's tool dispatch calls: the tool function behind its error boundary.
TOOL_BOUNDARY = "server.host:tool_errors.<locals>.wrapper"


def _ours(frame: FrameType) -> bool:
    """A frame of the package on the way to a backend (the backend's own frames are not)."""
    path = frame.f_code.co_filename
    return path.startswith(PACKAGE) and not path.startswith(BACKENDS)


def _step(frame: FrameType) -> str:
    module = Path(frame.f_code.co_filename).relative_to(PACKAGE).with_suffix("")
    return f"{'.'.join(module.parts)}:{frame.f_code.co_qualname}"


def _awaiting(coro: Any) -> Iterator[FrameType]:
    """The frames of a suspended task, outermost first (the chain of what awaits what)."""
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None)
        if frame is not None:
            yield frame
        coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None)


def _running() -> list[FrameType]:
    """The current task's frames, outermost first."""
    frames, frame = [], inspect.currentframe()
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames[::-1]


def path_to_here() -> list[str]:
    """Our steps from the tool function to this backend call, across the tasks on the way."""
    tasks = {id(t): t for t in asyncio.all_tasks()}
    chain = [f for f in _running() if _ours(f)]
    parent = anyio.get_current_task().parent_id
    while parent is not None and parent in tasks:  # the run's task, then whoever started it
        above = [f for f in _awaiting(tasks[parent].get_coro()) if _ours(f)]
        if not above:  # the server's background task group: the request handed the run over
            break
        chain = above + chain
        infos = {t.id: t for t in anyio.get_running_tasks()}
        parent = infos[parent].parent_id if parent in infos else None
    if not any(f.f_code.co_name == "run_consensus" for f in chain):
        suspended = ([f for f in _awaiting(t.get_coro()) if _ours(f)] for t in tasks.values())
        chain = next(frames for frames in suspended
                     if any(f.f_code.co_name == "run_consensus" for f in frames)) + chain
    return [_step(f) for f in chain]


async def test_a_run_consensus_reaches_its_backend_within_twelve_steps(tmp_path: Path) -> None:
    paths: list[list[str]] = []

    def agent(call: FunctionCall) -> Turn:
        if not paths:
            paths.append(path_to_here())
        if call.step.presenting:
            return call.answer("Use Kafka")
        if not call.step.answered:
            return call.answer(f"Use Kafka ({call.agent_id})")
        return call.vote(call.vote_targets()[0])

    register_function("run-path", agent)
    team = tmp_path / "team.yaml"
    team.write_text(yaml.safe_dump({"agents": [
        {"id": name, "backend": {"type": "function", "model": "run-path"}}
        for name in ("a", "b")]}))
    try:
        async with memory_client(tmp_path, team=team) as client:
            result = await client.call_tool("run_consensus", {"task": "Which queue?"})
    finally:
        unregister_function("run-path")
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert result.structured_content["final_answer"] == "Use Kafka"
    # What the server wraps around the SDK (who asks, MCP tasks) comes before its dispatch.
    steps = paths[0][paths[0].index(TOOL_BOUNDARY):]
    # From the tool function (behind its error boundary) to the one place that calls a model.
    assert steps[1] == "server.tools:register_run_tools.<locals>.run_consensus", steps
    assert steps[-1] == "coordination.converse:call_model", steps
    print("\n".join(steps))
    assert len(steps) <= MAX_STEPS, "\n".join(steps)


async def test_only_a_tool_calls_own_team_reaches_a_worker(tmp_path: Path) -> None:
    """The job a worker could run is an explicit value: a tool call's `ChosenTeam` carries
    the reference a worker resolves the team from; a plain `Team` (the CLI's, the Python
    API's) and a team that samples the client's own model always run in this process."""
    from massgen_mcp.app import App
    from massgen_mcp.config.env import Environment

    team = tmp_path / "team.yaml"
    team.write_text(yaml.safe_dump({"agents": [
        {"id": name, "backend": {"type": "function", "model": "run-path"}}
        for name in ("a", "b")]}))
    app = App(tmp_path / ".massgen", default_team=str(team), env=Environment({}), cwd=tmp_path)
    chosen = await app.tool_team(stances=["for", "against"])
    assert chosen.reference is not None
    assert chosen.reference["stances"] == ["for", "against"] and chosen.reference["team"] is None
    queued = app.consensus(chosen, "Which queue?")
    assert queued.job == {"call": {"mode": "consensus", "task": "Which queue?", "context": None,
                                   "follow_up_of": None}, "team": chosen.reference}
    assert app.consensus(chosen.team, "Which queue?").job is None
    sampling = await app.tool_team(models="sampling", sampling_available=True)
    assert sampling.reference is None
    assert app.plan(sampling, "Ship v2").job is None
