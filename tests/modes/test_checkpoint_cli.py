"""`massgen-mcp checkpoint-init` and `massgen-mcp checkpoint` through the installed command:
the same arguments as the tools, the same records, and `run`'s exit codes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from mcp_harness import EXE, server_env, write_team
from scripted_provider import Error, ScriptedProvider
from test_modes import EXECUTOR_TOOLS, GOALS, UNKNOWN_TOOL, reviewer


def cli(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = server_env({"MASSGEN_MCP_KEY_FILE": str(cwd / "keys" / "plan.key")})
    return subprocess.run([EXE, *args], cwd=cwd, env=env, input=stdin, capture_output=True,
                          text=True, timeout=180)


def init(workspace: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    tools = workspace.parent / "tools.json"
    tools.write_text(json.dumps(EXECUTOR_TOOLS))
    return cli(workspace.parent, "checkpoint-init", "--workspace-dir", str(workspace),
               "--original-task", "ship v2", "--available-tools", str(tools), *extra)


def test_checkpoint_init_then_checkpoint_from_the_command_line(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    first = init(workspace, "--safety-policy", "never touch billing", "--json")
    assert first.returncode == 0, first.stderr
    stored = json.loads(first.stdout)
    assert stored["replaced"] is False and stored["workspace_dir"] == str(workspace)
    assert stored["tools"] == [t["name"] for t in EXECUTOR_TOOLS]  # type: ignore[index]
    again = init(workspace, "--safety-policy", "never touch billing")
    assert again.returncode == 0 and again.stdout.startswith("replaced the previous session")

    provider.script("r1", reviewer(UNKNOWN_TOOL))
    provider.script("r2", reviewer(UNKNOWN_TOOL))
    team = write_team(tmp_path / "reviewers.yaml", provider, [("r1", "openai", "r1"),
                                                             ("r2", "anthropic", "r2")])
    done = cli(tmp_path, "checkpoint", "deploy v2 to production", "--team", str(team),
               "--action-goal", json.dumps(GOALS[0]),
               "--eval-criteria", "keep downtime under 1 min")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Checkpoint ckpt_001 (completed): follow these steps")
    assert "mcp__ops__deploy" in done.stdout
    assert "answer" in done.stderr  # progress on stderr
    seen = provider.requests_for("r1")[0].text
    for needle in ("deploy v2 to production", "never touch billing",
                   "keep downtime under 1 min", "mcp__ops__deploy"):
        assert needle in seen
    # The first candidates named an unknown tool: refused with the reason, then fixed.
    feedback = next(r.tool_results for r in provider.requests_for("r1") if r.tool_results)
    assert "mcp__ops__nuke" in feedback[0]["content"]

    as_json = cli(tmp_path, "checkpoint", "deploy v2 again", "--team", str(team),
                  "--action-goal", json.dumps(GOALS[0]), "--json", "--quiet")
    assert as_json.returncode == 0, as_json.stderr
    result = json.loads(as_json.stdout)
    assert result["status"] == "completed" and result["checkpoint_id"] == "ckpt_002"
    logs = Path(result["logs_dir"])
    assert {"inputs.json", "plan.json", "votes.json"} <= {p.name for p in logs.iterdir()}
    assert json.loads((logs / "inputs.json").read_text())["objective"] == "deploy v2 again"


def test_checkpoint_exit_codes_follow_run(provider: ScriptedProvider, tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    # No session yet: bad usage (2), before any model is called.
    none = cli(tmp_path, "checkpoint", "drop the old tables", "--models", "openai/gpt-5")
    assert none.returncode == 2 and "checkpoint_init" in none.stderr, none.stderr
    # Bad tool lists: 2, naming the option and what it expects.
    bad = cli(tmp_path, "checkpoint-init", "--workspace-dir", str(workspace),
              "--original-task", "t", "--available-tools", "[{\"description\": 1}]")
    assert bad.returncode == 2 and "available_tools[0].name" in bad.stderr, bad.stderr
    unreadable = cli(tmp_path, "checkpoint-init", "--workspace-dir", str(workspace),
                     "--original-task", "t", "--available-tools", "missing.json")
    assert unreadable.returncode == 2 and "--available-tools" in unreadable.stderr
    from_stdin = cli(tmp_path, "checkpoint-init", "--workspace-dir", str(workspace),
                     "--original-task", "t", "--available-tools", "-",
                     stdin=json.dumps(EXECUTOR_TOOLS))
    assert from_stdin.returncode == 0, from_stdin.stderr
    # Every reviewer fails: no approved plan, exit 1, nothing on stdout.
    provider.script("down", Error(401, "bad key"))
    team = write_team(tmp_path / "down.yaml", provider, [("a", "openai", "down"),
                                                        ("b", "anthropic", "down")])
    failed = cli(tmp_path, "checkpoint", "deploy", "--team", str(team))
    assert failed.returncode == 1, failed.stderr
    assert failed.stdout == "" and "no approved plan (status failed" in failed.stderr
