"""Coding-agent CLIs as team members: the real claude / codex / gemini binaries, headless,
against the loopback scripted provider (no real model, no network)."""

from __future__ import annotations

import json
import logging
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import answer_then_vote, best_label, has_answered, presenting
from cli_agents import (
    claude_backend,
    cli_agent,
    cli_env,
    cli_path,
    codex_backend,
    gemini_backend,
    leftover_processes,
    no_leftovers,
)
from scripted_provider import (
    Call,
    Error,
    Hang,
    Reply,
    ScriptedProvider,
    ScriptRequest,
    Text,
    ToolCalls,
    answer,
    vote,
)

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.runs.engine import Engine


def _team(provider: ScriptedProvider, agents: list[dict[str, Any]], **orch: Any) -> Any:
    return team_from_data({"agents": agents, "orchestrator": orch}, "cli-team.yaml",
                          Environment({}))


def _api(provider: ScriptedProvider, aid: str, model: str) -> dict[str, Any]:
    return {"id": aid, "backend": provider.backend("anthropic", model, max_retries=0)}


@pytest.mark.npm
async def test_mixed_team_with_claude_code_reaches_consensus(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("cc", cli_agent(answer_then_vote("CLI answer: use a queue", best_label)))
    provider.script("api1", answer_then_vote("API answer one", best_label))
    provider.script("api2", answer_then_vote("API answer two", best_label))
    team = _team(provider, [
        {"id": "coder", "backend": claude_backend(provider, "cc")},
        _api(provider, "b-api", "api1"), _api(provider, "c-api", "api2")],
        early_stop=False, orchestrator_timeout_seconds=120)
    events: list[dict[str, Any]] = []
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.prepare(team, "Which queue?", listener=events.append).start()
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    coder = next(a for a in result.agents if a.agent_id == "coder")
    assert coder.error is None and coder.answers >= 1
    assert any(a.agent_id == "coder" and "CLI answer" in a.text for a in result.answers)
    assert {v.voter for v in result.votes} == {"coder", "b-api", "c-api"}
    # The CLI really went through the provider with its own tool names.
    cc_requests = provider.requests_for("cc")
    assert any("mcp__massgen__new_answer" in r.tool_names for r in cc_requests)
    assert cc_requests[0].headers.get("x-api-key") == "test-key"
    assert coder.usage.provider_calls >= 2
    assert not no_leftovers(str(tmp_path))


def _editing_coder(edits: dict[str, tuple[str, str]]) -> Any:
    """A Claude Code agent that Reads and Edits `edits` (file -> (old, new)) in its workspace
    with Claude Code's own tools, then answers; later it votes for the first label."""
    plan = [(tool, name) for name in edits for tool in ("Read", "Edit")]

    def script(req: ScriptRequest) -> Reply:
        if presenting(req):
            return answer("FINAL: edited the project")
        if has_answered(req):
            return vote(best_label(req))
        done = [r for r in req.tool_results if r["name"] in ("Read", "Edit")]
        if len(done) >= len(plan):
            return answer("I changed VALUE to 2")
        cwd = re.search(r"(?:CWD|Primary working directory): (\S+)", req.text)
        assert cwd, "Claude Code's context names its working directory"
        tool, name = plan[len(done)]
        path = f"{cwd.group(1)}/{name}"
        if tool == "Read":
            return ToolCalls([Call("Read", {"file_path": path})])
        old, new = edits[name]
        return ToolCalls([Call("Edit", {"file_path": path, "old_string": old,
                                        "new_string": new})])

    return cli_agent(script)


def _project(root: Path) -> Path:
    proj = root / "proj"
    proj.mkdir()
    (proj / "app.py").write_text("VALUE = 1\n")
    (proj / "deploy.cfg").write_text("TOKEN=original\n")  # protected (a .env is not even seeded)
    (proj / "README.md").write_text("untouched\n")
    return proj


@pytest.mark.npm
async def test_claude_code_edits_its_workspace_wins_and_writes_back(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    proj = _project(tmp_path)
    provider.script("cc", _editing_coder({"app.py": ("VALUE = 1", "VALUE = 2"),
                                          "deploy.cfg": ("original", "stolen")}))
    provider.script("api1", answer_then_vote("API answer one", best_label))
    provider.script("api2", answer_then_vote("API answer two", best_label))
    team = _team(provider, [
        {"id": "a-coder", "backend": claude_backend(provider, "cc")},
        _api(provider, "b-api", "api1"), _api(provider, "c-api", "api2")],
        orchestrator_timeout_seconds=120,
        context_paths=[{"path": str(proj), "permission": "write",
                        "protected_paths": ["deploy.cfg"]}])
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.prepare(team, "Set VALUE to 2").start()
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    assert result.winner is not None and result.winner.agent_id == "a-coder"
    ws = result.workspace
    assert ws is not None and ws.agent_id == "a-coder"
    assert Path(ws.path).is_relative_to(tmp_path / ".massgen")
    assert {(c.path, c.change) for c in ws.changed} == {("app.py", "modified"),
                                                        ("deploy.cfg", "modified")}
    assert "-VALUE = 1" in ws.diff and "+VALUE = 2" in ws.diff
    # Written back: the change, not the protected file, not the untouched one.
    assert (proj / "app.py").read_text() == "VALUE = 2\n"
    assert (proj / "deploy.cfg").read_text() == "TOKEN=original\n"
    assert ws.applied == [str(proj / "app.py")]
    assert ws.skipped == ["deploy.cfg: protected"]
    # Peers got a read-only snapshot of the answer's workspace.
    snap = Path(result.log_dir) / "snapshots" / "agent1.1"
    assert (snap / "app.py").read_text() == "VALUE = 2\n"
    assert not (snap / "app.py").stat().st_mode & 0o222
    assert not no_leftovers(str(tmp_path))


@pytest.mark.npm
async def test_losing_coding_agent_never_writes_back(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    proj = _project(tmp_path)
    provider.script("cc", _editing_coder({"app.py": ("VALUE = 1", "VALUE = 3")}))
    provider.script("api1", answer_then_vote("API answer one", "agent2"))
    provider.script("api2", answer_then_vote("API answer two", "agent2"))
    team = _team(provider, [
        {"id": "a-coder", "backend": claude_backend(provider, "cc")},
        _api(provider, "b-api", "api1"), _api(provider, "c-api", "api2")],
        orchestrator_timeout_seconds=120, skip_final_presentation=True,
        context_paths=[{"path": str(proj), "permission": "write"}])
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.prepare(team, "Set VALUE").start()
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    assert result.winner is not None and result.winner.agent_id == "b-api"
    assert result.workspace is None
    assert (proj / "app.py").read_text() == "VALUE = 1\n"
    # The coder did edit its own copy.
    assert "VALUE = 3" in (Path(result.log_dir) / "workspaces" / "a-coder" / "app.py").read_text()


@pytest.mark.npm
async def test_codex_in_a_mixed_team(provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("cx", cli_agent(answer_then_vote("Codex answer", best_label)))
    provider.script("api1", answer_then_vote("API answer one", best_label))
    provider.script("api2", answer_then_vote("API answer two", best_label))
    team = _team(provider, [
        {"id": "a-codex", "backend": codex_backend(provider, "cx")},
        _api(provider, "b-api", "api1"), _api(provider, "c-api", "api2")],
        early_stop=False, orchestrator_timeout_seconds=120)
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.prepare(team, "Which queue?").start()
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    assert {v.voter for v in result.votes} == {"a-codex", "b-api", "c-api"}
    assert any(a.agent_id == "a-codex" and a.text == "Codex answer" for a in result.answers)
    first = provider.requests_for("cx")[0]
    # Codex's own shape: Responses API, MCP tools as a namespace, our key as a bearer token.
    assert first.path == "/v1/responses" and first.raw["stream"] is True
    assert any(t.get("type") == "namespace" and t.get("name") == "mcp__massgen"
               for t in first.raw["tools"])
    assert first.headers["authorization"] == "Bearer test-key"
    assert not no_leftovers(str(tmp_path))


@pytest.mark.npm
async def test_gemini_cli_in_a_mixed_team(provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("gm", cli_agent(answer_then_vote("Gemini CLI answer", best_label)))
    provider.script("api1", answer_then_vote("API answer one", best_label))
    provider.script("api2", answer_then_vote("API answer two", best_label))
    team = _team(provider, [
        {"id": "a-gemini", "backend": gemini_backend(provider, "gm")},
        _api(provider, "b-api", "api1"), _api(provider, "c-api", "api2")],
        orchestrator_timeout_seconds=240, skip_final_presentation=True)
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.prepare(team, "Which queue?").start()
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    assert any(a.agent_id == "a-gemini" and a.text == "Gemini CLI answer"
               for a in result.answers)
    first = provider.requests_for("gm")[0]
    assert first.path == "/v1beta/models/gm:streamGenerateContent"
    assert "mcp_massgen_new_answer" in first.tool_names
    assert not no_leftovers(str(tmp_path))


@pytest.mark.npm
async def test_missing_cli_is_one_clear_agent_error(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("api1", answer_then_vote("API answer one", best_label))
    provider.script("api2", answer_then_vote("API answer two", best_label))
    team = _team(provider, [
        {"id": "coder", "backend": {**claude_backend(provider, "cc"),
                                    "command": str(tmp_path / "no-such-claude")}},
        {"id": "codex", "backend": {"type": "codex"}},  # looked up on an empty PATH
        _api(provider, "b-api", "api1"), _api(provider, "c-api", "api2")],
        orchestrator_timeout_seconds=60)
    engine = Engine(tmp_path / ".massgen", Environment({"PATH": str(tmp_path)}))
    result = await engine.prepare(team, "Which queue?").start()
    # The live agents agreed, and the run says it lost two agents on the way.
    assert result.status == "degraded"
    assert "coder" in str(result.error) and "codex" in str(result.error)
    errors = {a.agent_id: a.error for a in result.agents}
    assert "Claude Code not found" in str(errors["coder"])
    assert "backend.command" in str(errors["coder"])
    assert "npm install -g @openai/codex" in str(errors["codex"])
    assert errors["b-api"] is None and errors["c-api"] is None


@pytest.mark.npm
async def test_cli_that_fails_is_named_and_the_run_goes_on(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("cc", Error(401, "invalid x-api-key"))
    provider.script("api1", answer_then_vote("API answer one", best_label))
    provider.script("api2", answer_then_vote("API answer two", best_label))
    team = _team(provider, [
        {"id": "coder", "backend": claude_backend(provider, "cc")},
        _api(provider, "b-api", "api1"), _api(provider, "c-api", "api2")],
        orchestrator_timeout_seconds=60)
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.prepare(team, "Which queue?").start()
    assert result.status == "degraded" and "coder" in str(result.error)
    coder = next(a for a in result.agents if a.agent_id == "coder")
    assert coder.status == "failed" and "Claude Code failed" in str(coder.error)
    assert "api_key" in str(coder.error)  # the fix is named
    assert "test-key" not in str(coder.error)
    assert not no_leftovers(str(tmp_path))


@pytest.mark.npm
async def test_codex_refused_connection_is_stopped_by_the_deadline(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    team = team_from_data({"agents": [{"id": "cx", "backend": {
        "type": "codex", "model": "m", "base_url": f"http://127.0.0.1:{port}/v1",
        "api_key": "k", "command": cli_path("codex"), "request_timeout_seconds": 4}}]},
        "t.yaml", Environment({}))
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.prepare(team, "Q?").start()
    assert result.status == "failed"
    assert "no result within 4s" in str(result.agents[0].error)
    assert not no_leftovers(str(tmp_path))


@pytest.mark.npm
async def test_cancelled_run_leaves_no_cli_process(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("cc", Hang())
    team = _team(provider, [{"id": "coder", "backend": claude_backend(provider, "cc")}])
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    prepared = engine.prepare(team, "Q?")
    results: list[Any] = []

    async def run() -> None:
        results.append(await prepared.start())

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await provider.wait_for("cc", 1, timeout=60)  # the CLI is mid-request
        assert leftover_processes(str(tmp_path))  # (the check sees it while it runs)
        assert engine.cancel(prepared.run_id)
    assert results[0].status == "cancelled"
    assert not no_leftovers(str(tmp_path))


def test_claude_code_config_keys_load_and_unknown_ones_warn(
        caplog: pytest.LogCaptureFixture) -> None:
    from massgen_mcp.backends.cli._options import CliOptions

    team = team_from_data({"agents": [{"id": "cc", "backend": {
        "type": "claude_code", "cwd": "ws1", "system_prompt": "S", "append_system_prompt": "A",
        "allowed_tools": ["Read", "Edit"], "disallowed_tools": ["Bash"],
        "permission_mode": "acceptEdits", "max_turns": 7, "max_thinking_tokens": 1000,
        "frobnicate": True}}]}, "t.yaml", Environment({}))
    spec = team.agents[0]
    assert spec.provider.name == "claude_code" and spec.model == "default"
    with caplog.at_level(logging.WARNING):
        o = CliOptions.from_spec(spec)
    assert (o.cwd, o.system_prompt, o.append_system_prompt) == ("ws1", "S", "A")
    assert o.allowed_tools == ("Read", "Edit") and o.disallowed_tools == ("Bash",)
    assert (o.permission_mode, o.max_turns, o.unknown) == ("acceptEdits", 7, ("frobnicate",))
    assert "frobnicate" in caplog.text and "max_thinking_tokens" not in caplog.text
    # The file-level warning names only what a coding agent really loses.
    assert len(team.warnings) == 1 and "frobnicate" in team.warnings[0]
    assert not any(k in team.warnings[0] for k in ("cwd", "permission_mode", "max_turns"))


@pytest.mark.npm
async def test_availability_reports_installed_clis_and_versions(tmp_path: Path) -> None:
    from massgen_mcp.backends.availability import backends_report

    report = await backends_report(Environment(cli_env(HOME=str(tmp_path))))
    by_type = {s.type: s for s in report.coding_agents}
    pinned = json.loads((Path(__file__).parents[1] / "js" / "package.json").read_text())
    deps = pinned["dependencies"]
    cli_path("claude")
    assert by_type["claude_code"].version == deps["@anthropic-ai/claude-code"]
    assert by_type["codex"].version == deps["@openai/codex"]
    assert by_type["gemini_cli"].version == deps["@google/gemini-cli"]
    assert all(s.usable and not s.login_found for s in by_type.values())
    assert "codex login" in by_type["codex"].fix
    assert not any(p.provider in by_type for p in report.providers)
    missing = await backends_report(Environment({"PATH": str(tmp_path),
                                                 "HOME": str(tmp_path)}))
    assert all(not s.installed and "npm install -g" in s.fix for s in missing.coding_agents)


KILLED_SERVER = """
import sys, anyio
from pathlib import Path
sys.path.insert(0, {tests!r})
from cli_agents import claude_backend, cli_env
from scripted_provider import ScriptedProvider
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.runs.engine import Engine
p = ScriptedProvider()
p.root = {root!r}
team = team_from_data({{"agents": [{{"id": "coder", "backend": claude_backend(p, "hang")}}]}},
                      "t.yaml", Environment({{}}))
anyio.run(lambda: Engine(Path({state!r}), Environment(cli_env())).prepare(team, "Q?").start())
"""


@pytest.mark.npm
async def test_killed_server_takes_its_cli_processes_with_it(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    cli_path("claude")  # the tier is decided here: a skip inside the child would not reach pytest
    provider.script("hang", Hang())
    code = KILLED_SERVER.format(tests=str(Path(__file__).parents[1]), root=provider.root,
                                state=str(tmp_path / "state"))
    server = await anyio.open_process([sys.executable, "-c", code],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await provider.wait_for("hang", 1, timeout=60)
        assert leftover_processes(str(tmp_path / "state"))
        server.kill()  # SIGKILL: no cleanup code runs in the server
        await server.wait()
        with anyio.fail_after(10):
            while leftover_processes(str(tmp_path / "state")):
                await anyio.sleep(0.05)  # polling the process table (no event to wait on)
    finally:
        if server.returncode is None:
            server.kill()
        await server.aclose()  # its pipes closed while the loop runs, not at garbage collection


@pytest.mark.npm
async def test_plan_mode_through_claude_code_with_a_rejected_plan_fixed_in_session(
        provider: ScriptedProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_modes import CYCLIC, GOOD, planner

    from massgen_mcp.app import App

    monkeypatch.setenv("MASSGEN_MCP_KEY_FILE", str(tmp_path / "keys" / "plan.key"))
    provider.script("cc", cli_agent(planner(CYCLIC)))
    provider.script("api1", planner(GOOD))
    provider.script("api2", planner(GOOD))
    team = _team(provider, [
        {"id": "a-coder", "backend": claude_backend(provider, "cc")},
        _api(provider, "b-api", "api1"), _api(provider, "c-api", "api2")],
        orchestrator_timeout_seconds=120)
    app = App(tmp_path / ".massgen", env=Environment(cli_env()), cwd=tmp_path)
    run = app.plan(team, "Add a job queue", depth="shallow")
    result = await run.start()
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    assert [t["id"] for t in run.outcome.plan["tasks"]] == [t["id"] for t in GOOD["tasks"]]  # type: ignore[index]
    # The cyclic plan was refused and the refusal reached the same Claude Code session.
    texts = [m["content"] for r in provider.requests_for("cc") for m in r.messages
             if m["role"] == "user"]
    assert any("was not accepted" in t and "cycle" in t.lower() for t in texts)
    coder = next(a for a in result.agents if a.agent_id == "a-coder")
    assert coder.error is None and coder.answers >= 1


@pytest.mark.npm
async def test_a_prompt_too_long_for_the_command_line_goes_through_stdin(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    context = "".join(f"line {i}: some project context\n" for i in range(6000))  # ~180 KB
    assert len(context) > 150_000
    provider.script("cc", cli_agent(answer_then_vote("read it all", best_label)))
    team = _team(provider, [{"id": "coder", "backend": claude_backend(provider, "cc")}],
                 skip_final_presentation=True)
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.prepare(team, "Summarize", context=context).start()
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    first = provider.requests_for("cc")[0]
    assert "line 5999: some project context" in first.text


def _chatty_after_answering(req: ScriptRequest) -> Reply:
    """Answers once; in every later turn of its resumed session (the final presentation too)
    it only says "Submitted." (no tool call), as a real Claude Code member did (issue 21)."""
    if presenting(req):
        return Text("Submitted.")
    if not any(str(r["name"]).endswith("new_answer") for r in req.tool_results):  # all session
        return answer("CLI answer: use a queue")
    return Text("Submitted.")  # also after the reminder


@pytest.mark.npm
async def test_a_resumed_members_closing_chatter_never_becomes_its_answer(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    def the_cli(req: ScriptRequest) -> str:  # the API agents vote for the CLI's answer
        found = re.search(r"<(agent\d+)\.\d+>\s*CLI answer", req.last_user_text)
        return found.group(1) if found else best_label(req)

    provider.script("cc", cli_agent(_chatty_after_answering))
    provider.script("api1", answer_then_vote("API answer one", the_cli))
    provider.script("api2", answer_then_vote("API answer two", the_cli))
    team = _team(provider, [
        {"id": "coder", "backend": claude_backend(provider, "cc")},
        _api(provider, "b-api", "api1"), _api(provider, "c-api", "api2")],
        orchestrator_timeout_seconds=180)
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.prepare(team, "Which queue?").start()
    assert result.status in ("completed", "degraded"), result.error
    # The CLI really was resumed and really said it (so the test tests something).
    assert any(len(r.messages) > 2 for r in provider.requests_for("cc"))
    assert not any(a.text.strip() == "Submitted." for a in result.answers), result.answers
    final = result.final_answer or ""
    assert final.strip() != "Submitted." and "Submitted." not in final
    assert "use a queue" in final  # the winner's content is kept
    assert not no_leftovers(str(tmp_path))


@pytest.mark.npm
async def test_gemini_cli_that_fails_is_named_and_the_run_goes_on(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("gm", Error(401, "API key not valid"))
    provider.script("api1", answer_then_vote("API answer one", best_label))
    provider.script("api2", answer_then_vote("API answer two", best_label))
    team = _team(provider, [
        {"id": "gem", "backend": gemini_backend(provider, "gm")},
        _api(provider, "b-api", "api1"), _api(provider, "c-api", "api2")],
        orchestrator_timeout_seconds=120)
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.prepare(team, "Which queue?").start()
    assert result.status == "degraded" and "gem" in str(result.error)
    gem = next(a for a in result.agents if a.agent_id == "gem")
    assert gem.status == "failed" and "Gemini CLI failed" in str(gem.error)
    assert "api_key" in str(gem.error)  # the fix is named
    assert "test-key" not in str(gem.error)
    assert not no_leftovers(str(tmp_path))


@pytest.mark.npm
async def test_gemini_cli_may_not_run_what_no_one_allowed(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    """Over ACP the CLI asks before a shell command: only the member's MCP servers' tools
    are allowed, so the command never runs; the workflow call after it does."""
    marker = tmp_path / "ran.txt"

    def script(req: ScriptRequest) -> Reply:
        if not any(r["name"] == "run_shell_command" for r in req.tool_results):
            return ToolCalls([Call("run_shell_command", {"command": f"touch {marker}",
                                                         "description": "make a file"})])
        return answer("done without a shell")

    provider.script("gm", cli_agent(script))
    team = team_from_data({"agents": [{"id": "gem", "backend": gemini_backend(provider, "gm")}],
                           "orchestrator": {"skip_final_presentation": True}},
                          "t.yaml", Environment({}))
    engine = Engine(tmp_path / ".massgen", Environment(cli_env()))
    result = await engine.prepare(team, "Q?").start()
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    assert not marker.exists()
    refused = [r for req in provider.requests_for("gm") for r in req.tool_results
               if r["name"] == "run_shell_command"]
    assert refused and all(marker.name not in str(r["content"]) or r["is_error"]
                           for r in refused)
    assert not no_leftovers(str(tmp_path))
