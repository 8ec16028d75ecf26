"""What a new user meets in the first minutes, over MCP: failed runs read as errors,
timeouts with an answer do not, partial bundled teams, clean descriptions, a clean SIGTERM,
and `doctor` starting what `setup` registered."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from agents import has_answered
from mcp_harness import http_server, memory_client, write_team
from scripted_provider import Error, Hang, answer
from test_ship import CLI, clean_env
from tiers import require_node_bin

from massgen_mcp.cli.setup import run_setup
from massgen_mcp.config.choose import CLI as CLI_WORDS
from massgen_mcp.config.choose import resolve_team
from massgen_mcp.config.env import Environment
from massgen_mcp.errors import ConfigError

VENV_EXE = Path(sys.executable).parent / "massgen-mcp"


async def test_a_failed_run_is_a_tool_error_with_its_result_attached(provider, tmp_path):
    provider.script("down", Error(401, "bad key"))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "down"),
                                                        ("b", "anthropic", "down")])
    async with memory_client(tmp_path, team=team) as client:
        r = await client.call_tool("run_consensus", {"task": "Which queue?"})
    assert r.is_error
    assert r.structured_content is not None and r.structured_content["status"] == "failed"
    assert "every agent failed" in r.structured_content["error"]
    assert r.content[0].text.startswith("No answer (status failed")  # type: ignore[union-attr]


async def test_a_timeout_with_a_best_answer_is_not_an_error_and_one_without_is(provider,
                                                                              tmp_path):
    def answers_then_hangs(req):
        return Hang() if has_answered(req) else answer("queue: SQS")

    provider.script("quick", answers_then_hangs)
    provider.script("mute", Hang())
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "quick"),
                                                        ("b", "gemini", "mute")],
                      skip_final_presentation=True)
    async with memory_client(tmp_path, team=team) as client:
        r = await client.call_tool("run_consensus", {"task": "Which queue?", "timeout_s": 3})
        assert not r.is_error, r.content
        assert r.structured_content["status"] == "timeout"
        assert r.structured_content["final_answer"] == "queue: SQS"
        assert "best answer so far" in r.structured_content["error"]

    silent = write_team(tmp_path / "silent.yaml", provider, [("a", "openai", "mute"),
                                                             ("b", "gemini", "mute")])
    async with memory_client(tmp_path, team=silent) as client:
        r = await client.call_tool("run_consensus", {"task": "Which queue?", "timeout_s": 2})
    assert r.is_error and r.structured_content["status"] == "timeout"
    error = r.structured_content["error"]
    assert error.startswith("no answer: the run reached its time limit after 2 s before any "
                            "agent answered") and "best answer" not in error
    assert "best answer" not in r.content[0].text and "(no answer)" not in r.content[0].text  # type: ignore[union-attr]


async def test_tool_descriptions_reach_clients_without_source_indentation(tmp_path):
    async with memory_client(tmp_path) as client:
        tools = (await client.list_tools()).tools
    assert len(tools) >= 10
    for tool in tools:
        assert tool.description and tool.description == tool.description.strip()
        assert not any(line.startswith(" ") for line in tool.description.splitlines()), \
            tool.name


# ------------------------------------------------------------------ partial bundled teams

def env_with(tmp_path: Path, **keys: str) -> Environment:
    return Environment(keys, dotenv_dir=tmp_path)


def test_a_bundled_team_with_two_of_three_keys_runs_with_two_and_says_why(tmp_path):
    env = env_with(tmp_path, OPENAI_API_KEY="k-openai-123456", GEMINI_API_KEY="k-gemini-123456")
    team = resolve_team(team="frontier", env=env)
    assert [a.id for a in team.agents] == ["gpt", "gemini"]
    assert team.source == "bundled:frontier"
    assert team.orchestrator.max_new_answers_per_agent == 3  # the team's own settings kept
    (note,) = team.notes
    assert note == ("team 'frontier' runs with 2 of its 3 agents; left out claude "
                    "(claude/claude-sonnet-4-5): ANTHROPIC_API_KEY not set")
    # Overrides keep the note.
    assert team.with_overrides(orchestrator_timeout_seconds=5).notes == team.notes


@pytest.mark.parametrize("keys", [{"ANTHROPIC_API_KEY": "k-anthropic-1234"}, {}],
                         ids=["one-key", "no-key"])
def test_a_bundled_team_that_cannot_field_two_agents_names_every_missing_variable(
        tmp_path, keys):
    with pytest.raises(ConfigError) as e:
        resolve_team(team="frontier", env=env_with(tmp_path, **keys), vocabulary=CLI_WORDS)
    text = str(e.value)
    assert "OPENAI_API_KEY" in text and "GEMINI_API_KEY or GOOGLE_API_KEY" in text
    assert ("ANTHROPIC_API_KEY" in text) is (not keys)
    assert "at least 2" in text


def test_a_team_file_of_the_users_with_a_missing_key_still_says_which(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("agents:\n  - id: a\n    backend: {type: openai, model: gpt-5}\n"
                    "  - id: b\n    backend: {type: gemini, model: gemini-2.5-pro}\n")
    with pytest.raises(ConfigError, match=r"agents\[0\]: no API key for openai"):
        resolve_team(team=str(path), env=env_with(tmp_path, GEMINI_API_KEY="k-gemini-1234"))


# ------------------------------------------------------------------ the HTTP server stops

def test_sigterm_on_the_http_server_exits_cleanly_without_a_traceback(tmp_path, provider):
    import anyio
    from mcp import Client

    with http_server(tmp_path) as server:
        async def touch() -> None:
            async with Client(server.url) as c:
                await c.list_tools()
                os.killpg(server.proc.pid, signal.SIGTERM)
                with anyio.fail_after(30):
                    while server.proc.poll() is None:
                        await anyio.sleep(0.05)

        with contextlib.suppress(Exception):  # the session may end with the server
            anyio.run(touch)
        assert server.proc.wait(30) == 0
    stderr = "".join(server.stderr)
    assert "Traceback" not in stderr and "CancelledError" not in stderr, stderr


# ------------------------------------------------------------------ doctor starts them

def doctor_json(project: Path, **env: str) -> tuple[int, dict]:
    done = subprocess.run([*CLI, "doctor", "--json", "--dir", str(project)],
                          capture_output=True, text=True, timeout=180, cwd=project,
                          env=clean_env(project, OPENAI_API_KEY="k-openai-123456", **env))
    return done.returncode, json.loads(done.stdout)


@pytest.mark.skipif(not VENV_EXE.is_file(), reason="massgen-mcp not installed")
def test_doctor_starts_each_registration_and_says_what_to_do_when_it_fails(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    marker = tmp_path / "ran"
    evil = project / "tools" / "server.sh"
    evil.parent.mkdir()
    evil.write_text(f"#!/bin/sh\ntouch {marker}\n")
    evil.chmod(0o755)
    run_setup(project, clients=["claude", "gemini"], hooks=False, instructions=None)
    run_setup(project, clients=["codex"], hooks=False, instructions=None,
              command=["massgen-mcp"])  # the bare name: not on this PATH
    (project / ".cursor").mkdir()
    (project / ".cursor" / "mcp.json").write_text(json.dumps(
        {"mcpServers": {"massgen": {"command": str(evil)}}}))
    code, report = doctor_json(project, PATH="/usr/bin:/bin")
    regs = {r["client"]: r for r in report["registrations"]}
    assert code == 1
    assert regs["claude"]["starts"] and regs["claude"]["tools"] >= 10
    assert regs["gemini"]["starts"] and regs["claude"]["command"] == [str(VENV_EXE)]
    codex = regs["codex"]
    assert not codex["starts"] and "massgen-mcp not found on PATH" in codex["problem"]
    assert "massgen-mcp setup --client codex" in codex["fix"] and str(VENV_EXE) in codex["fix"]
    cursor = regs["cursor"]
    assert not cursor["starts"] and "lies inside the project" in cursor["problem"]
    assert not marker.exists(), "doctor ran a program the project named"


@pytest.mark.skipif(not VENV_EXE.is_file(), reason="massgen-mcp not installed")
def test_doctor_flags_a_bare_name_that_only_this_shells_venv_provides(tmp_path):
    run_setup(tmp_path, clients=["claude"], hooks=False, instructions=None,
              command=["massgen-mcp"])
    code, report = doctor_json(tmp_path, PATH=f"{VENV_EXE.parent}:/usr/bin:/bin")
    (reg,) = report["registrations"]
    assert code == 1 and not reg["starts"] and reg["tools"] >= 10
    assert "(a virtual environment) is on this shell's PATH" in reg["problem"]


def client_doctor(project: Path, home: Path) -> tuple[int, dict]:
    """`doctor --json` as a user with the three client CLIs on PATH and no provider key."""
    path = f"{require_node_bin('claude').parent}:/usr/bin:/bin"
    for name in ("codex", "gemini"):
        require_node_bin(name)
    env = clean_env(home, PATH=path, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                    DISABLE_AUTOUPDATER="1")
    done = subprocess.run([*CLI, "doctor", "--json", "--dir", str(project)],
                          capture_output=True, text=True, timeout=400, cwd=project, env=env)
    return done.returncode, json.loads(done.stdout)


@pytest.mark.npm
@pytest.mark.skipif(not VENV_EXE.is_file(), reason="massgen-mcp not installed")
def test_doctor_reports_what_each_client_says_not_just_that_it_starts(tmp_path):
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    run_setup(project, clients=["claude", "codex", "gemini"], hooks=False, instructions=None)

    # Right after `setup`: every entry starts, no client uses it yet, and none of that (nor
    # the missing key) is a failure.
    code, report = client_doctor(project, home)
    assert code == 0, report
    assert all(r["starts"] for r in report["registrations"])
    clients = report["clients"]
    assert clients["claude"]["state"] == "registered, waiting for your approval"
    assert "Pending approval" in clients["claude"]["detail"]
    assert clients["codex"]["state"] == "project file not trusted"
    assert f'[projects."{project}"]' in clients["codex"]["fix"]
    assert clients["gemini"]["state"] == "project file not trusted"
    assert not any(c["ok"] for c in clients.values())
    assert any(w.startswith("no team can run") for w in report["warnings"])
    assert "claude: registered, waiting for your approval" in report["warnings"]

    # The user answers each client's prompts (what those answers record).
    state = home / ".claude.json"
    state.write_text(json.dumps({"projects": {str(project): {"hasTrustDialogAccepted": True}}}))
    (project / ".claude").mkdir()
    local = project / ".claude" / "settings.local.json"
    local.write_text(json.dumps({"enabledMcpjsonServers": ["massgen"]}))
    (home / ".codex").mkdir(exist_ok=True)
    (home / ".codex" / "config.toml").write_text(
        f'[projects."{project}"]\ntrust_level = "trusted"\n')
    (home / ".gemini").mkdir(exist_ok=True)
    (home / ".gemini" / "trustedFolders.json").write_text(
        json.dumps({str(project): "TRUST_FOLDER"}))
    code, report = client_doctor(project, home)
    assert code == 0, report
    states = {c: v["state"] for c, v in report["clients"].items()}
    assert states == {"claude": "connected", "codex": "enabled", "gemini": "connected"}

    # Rejected in Claude Code, disabled in Codex: still not ok, still not a failure.
    local.write_text(json.dumps({"disabledMcpjsonServers": ["massgen"]}))
    codex = project / ".codex" / "config.toml"
    codex.write_text(codex.read_text().replace("args = []", "args = []\nenabled = false"))
    code, report = client_doctor(project, home)
    assert code == 0, report
    assert report["clients"]["claude"]["state"] == "rejected"
    assert "disabledMcpjsonServers" in report["clients"]["claude"]["fix"]
    assert report["clients"]["codex"]["state"] == "disabled"

    # A command the client cannot start is a failure, by the client's word too.
    gemini = project / ".gemini" / "settings.json"
    data = json.loads(gemini.read_text())
    data["mcpServers"]["massgen"]["command"] = str(tmp_path / "gone" / "massgen-mcp")
    gemini.write_text(json.dumps(data))
    code, report = client_doctor(project, home)
    assert code == 1
    assert report["clients"]["gemini"]["fails"], report["clients"]["gemini"]


def test_no_stray_test_output_is_committed() -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    tops = {line.split("/", 1)[0] for line in done.stdout.splitlines()}
    assert not [t for t in tops if t.startswith("tmp")], tops
