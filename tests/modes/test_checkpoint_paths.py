"""What `checkpoint_init` may point the reviewers at: a project, never the home directory, `/`
or a system directory; and a trajectory file that is still the file that was checked when it
is read (a directory above it swapped for a link leads nowhere)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.modes.checkpoint.prompt import review_task
from massgen_mcp.modes.checkpoint.store import init_session
from massgen_mcp.server import build_server

TOOLS = [{"name": "Bash", "description": "Run a shell command",
          "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / "project").mkdir(parents=True)
    (home / ".ssh").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("MASSGEN_MCP_KEY_FILE", str(tmp_path / "keys" / "plan.key"))
    return home


async def _init(app: App, workspace: str) -> Any:
    server, _ = build_server(app)
    async with Client(server) as client:
        return await client.call_tool("checkpoint_init", {
            "workspace_dir": workspace, "original_task": "Ship it", "available_tools": TOOLS})


@pytest.mark.parametrize(("where", "says"), [
    ("HOME", "the home directory"), ("/", "above the home"), ("/etc", "system directory"),
    ("HOME/.ssh", "secrets"), ("ABOVE", "above the server's working directory")])
async def test_checkpoint_init_refuses_what_is_not_a_project(
        home: Path, tmp_path: Path, where: str, says: str) -> None:
    cwd = home / "project" / "sub"
    cwd.mkdir()
    app = App(tmp_path / ".massgen", env=Environment({}), cwd=cwd)
    workspace = where.replace("HOME", str(home)).replace("ABOVE", str(home / "project"))
    r = await _init(app, workspace)
    text = r.content[0].text if r.content else ""
    assert r.is_error and says in text, text
    ok = await _init(app, str(cwd))
    assert not ok.is_error


def test_a_trajectory_read_through_a_swapped_parent_is_not_sent(home: Path,
                                                                 tmp_path: Path) -> None:
    workspace = home / "project"
    logs = workspace / "logs"
    logs.mkdir()
    (logs / "trajectory.log").write_text("step 1: ran the tests\n")
    session, _ = init_session(tmp_path / "state", workspace, "Ship it", TOOLS,
                              trajectory_path="logs/trajectory.log")
    assert "ran the tests" in review_task(session, "Deploy", None, None)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "trajectory.log").write_text("SECRET-OUTSIDE-THE-PROJECT\n")
    (logs / "trajectory.log").unlink()
    logs.rmdir()
    logs.symlink_to(elsewhere)  # the parent is now a link; the file name is the same
    text = review_task(session, "Deploy", None, None)
    assert "SECRET-OUTSIDE-THE-PROJECT" not in text and "through a link" in text
