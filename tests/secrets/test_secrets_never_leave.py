"""Secrets never leave: secret files are refused by one rule (`files`, workspace seeding, the
file tools), and what goes to a provider is redacted first (tool outputs and answers too),
with the server's own token and cloud keys in the redaction set. Each case runs for real: a
scripted provider records what it was sent, and the run's records are read back."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from agents import answer_then_vote, best_label, has_answered, presenting
from mcp import Client
from mcp_harness import EXE, server_env, write_team
from scripted_provider import (
    Call,
    Reply,
    ScriptedProvider,
    ScriptRequest,
    Text,
    ToolCalls,
    answer,
    vote,
)
from tiers import require_program

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.config.trust import TeamPolicy
from massgen_mcp.runs.engine import Engine
from massgen_mcp.server import build_server

TOKEN = "mcp-tok-Qx7Vb2Lm9Tz4Rk8Wp3Hd"
AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Fh3Kd"
DOTENV_KEY = "sk-proj-DotenvOnly0123456789abcdef"
NPM = "npm_Zx9Vq2Lk8Tw4Rb7Yc3Nd6Hf1Jg5Ps0"


@pytest.fixture(autouse=True)
def _own_config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def _sent(provider: ScriptedProvider) -> str:
    return "\n".join(json.dumps(r.raw) for r in provider.requests)


def _records(state: Path) -> str:
    """The run records (not the copies of the project in workspaces, seed and snapshots)."""
    copies = ("workspaces", "seed", "snapshots")
    return "\n".join(p.read_text(errors="replace") for p in state.rglob("*")
                     if p.is_file() and not copies_of(p, copies))


def copies_of(path: Path, names: tuple[str, ...]) -> bool:
    return any(part in names for part in path.parts)


# ---------------------------------------------------------------- the `files` argument


SECRET_FILES = ["prod.env", ".env.local", ".mcp.json", ".dev.vars", "secrets.toml",
                "terraform.tfvars", ".codex/auth.json", ".gemini/oauth_creds.json",
                ".config/github-copilot/apps.json", ".config/github-copilot/hosts.json",
                ".bash_history", ".zsh_history", ".npmrc", ".pypirc", ".netrc",
                ".git-credentials", ".ssh/id_ed25519", ".gnupg/secring.gpg"]


@pytest.mark.parametrize("name", [*SECRET_FILES, "hardlink.txt"])
async def test_files_refuses_every_secret_file_and_hard_links(
        provider: ScriptedProvider, tmp_path: Path, name: str) -> None:
    (tmp_path / ".env").write_text(f"OPENAI_API_KEY={DOTENV_KEY}\n")
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if name == "hardlink.txt":
        os.link(tmp_path / ".env", path)  # another name for .env
    else:
        path.write_text(f"token = {NPM}\n")
    app = App(tmp_path / ".massgen", env=Environment(
        {"OLLAMA_BASE_URL": provider.openai_base_url}, dotenv_dir=None), cwd=tmp_path,
        team_policy=TeamPolicy.create(None, None))
    server, _ = build_server(app)
    async with Client(server) as client:
        r = await client.call_tool("run_consensus", {"task": "x", "files": [name],
                                                     "models": "ollama/m1"})
    text = r.model_dump_json()
    assert r.is_error and name in text and "--allow-secret-files" in text
    assert provider.requests == [] and NPM not in text and DOTENV_KEY not in text


# ---------------------------------------------------------------- seeding and tool outputs


def _reader(req: ScriptRequest) -> Reply:
    """Lists and prints every file of its workspace, then answers with what it read."""
    if presenting(req):
        return answer("FINAL: " + req.last_user_text[-400:])
    if has_answered(req):
        return vote(best_label(req))
    ran = [r for r in req.tool_results if r["name"] == "execute_command"]
    if not ran:
        return ToolCalls([Call("execute_command", {
            "command": "ls -a; cat .env .npmrc prod.env linked notes.txt"})])
    return answer("What I found: " + ran[0]["content"])


@pytest.mark.bubblewrap
async def test_seeding_skips_secret_files_and_outputs_are_redacted_before_providers(
        provider: ScriptedProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_program("bubblewrap", "bwrap")
    monkeypatch.setenv("MASSGEN_MCP_TOKEN", TOKEN)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".env").write_text(f"OPENAI_API_KEY={DOTENV_KEY}\n")
    (proj / ".npmrc").write_text(f"//registry.npmjs.org/:_authToken={NPM}\n")
    (proj / "prod.env").write_text(f"X={NPM}\n")
    os.link(proj / ".env", proj / "linked")
    # Not a secret file by name: its contents reach the model only through redaction.
    (proj / "notes.txt").write_text(f"token {TOKEN} aws {AWS}\n")
    provider.script("reader", _reader)
    backend = provider.backend("anthropic", "reader", max_retries=0,
                               enable_mcp_command_line=True)
    team = team_from_data({"agents": [{"id": "reader", "backend": backend}], "orchestrator": {
        "context_paths": [{"path": str(proj)}]}}, "t.yaml", Environment({}))
    state = tmp_path / ".massgen"
    result = await Engine(state, Environment({})).prepare(team, "What is in the project?").start()
    assert result.status == "completed", (result.error, [a.error for a in result.agents])
    sent = _sent(provider)
    assert "notes.txt" in sent and "execute_command" in sent  # the command did run
    for secret in (DOTENV_KEY, NPM, TOKEN, AWS):
        assert secret not in sent
        assert secret not in _records(state)
    workspaces = list((state / "runs").rglob("workspaces/*"))
    assert workspaces and not any((w / name).exists() for w in workspaces
                                  for name in (".env", ".npmrc", "prod.env", "linked"))


# ---------------------------------------------------------------- the file tools


async def test_the_file_tools_refuse_a_hard_link_to_a_secret(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    from massgen_mcp.tools.files import roots_from

    (tmp_path / ".env").write_text(f"OPENAI_API_KEY={DOTENV_KEY}\n")
    os.link(tmp_path / ".env", tmp_path / "innocent.txt")
    (tmp_path / "plain.txt").write_text("hello\n")
    team = team_from_data(yaml.safe_load(
        f"agents: [{{id: a, backend: {{type: ollama, model: m}}}}]\n"
        f"orchestrator: {{context_paths: [{{path: '{tmp_path}'}}]}}\n"), "t.yaml",
        Environment({"OLLAMA_BASE_URL": provider.openai_base_url}))
    roots, _ = roots_from(team.orchestrator.context_paths)
    assert roots[0].protects((tmp_path / "innocent.txt").resolve())
    assert not roots[0].protects((tmp_path / "plain.txt").resolve())


# ---------------------------------------------------------------- eval outputs


def _leaky_solver(req: ScriptRequest) -> Reply:
    """Right on every arith problem, and repeats the server's token in every reply."""
    from massgen_mcp.eval.arith import problems

    p = next(p for p in problems(0, 8) if p.prompt in req.text)
    text = f"My token is {TOKEN}.\nAnswer: {p.answer}"
    if "new_answer" not in req.tool_names and "vote" not in req.tool_names:
        return Text(text)
    if presenting(req) or not has_answered(req):
        return answer(text)
    return vote(req.tool_enum("vote", "agent_id")[0], f"ok {TOKEN}")


def test_eval_outputs_are_redacted_and_private(provider: ScriptedProvider,
                                              tmp_path: Path) -> None:
    provider.script("leaky", _leaky_solver)
    team = write_team(tmp_path / "team.yaml", provider,
                      [("a", "openai", "leaky"), ("b", "openai", "leaky")])
    record, report, state = tmp_path / "rec", tmp_path / "eval.html", tmp_path / "state"
    done = subprocess.run(
        [EXE, "eval", "arith", "--team", str(team), "--limit", "2", "--json", "--quiet",
         "--record", str(record), "--report", str(report), "--state-dir", str(state)],
        cwd=tmp_path, env=server_env({"MASSGEN_MCP_TOKEN": TOKEN}), capture_output=True,
        text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert provider.requests  # the members were asked, and said the token every time
    outputs = [report, *record.rglob("*.jsonl"), *state.rglob("items.jsonl")]
    assert len(outputs) >= 4 and all(p.is_file() for p in outputs)
    assert TOKEN not in done.stdout and TOKEN not in done.stderr
    for path in outputs:
        assert TOKEN not in path.read_text(), path
        assert path.stat().st_mode & 0o077 == 0, (path, oct(path.stat().st_mode))


# ---------------------------------------------------------------- record file modes


async def test_the_state_directory_is_private_and_every_record_is_0600(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("m1", answer_then_vote("Kafka"))
    team = team_from_data({"agents": [{"id": "a", "backend": provider.backend(
        "openai", "m1", max_retries=0)}]}, "t.yaml", Environment({}))
    state = tmp_path / ".massgen"
    result = await Engine(state, Environment({})).prepare(team, "Which queue?").start()
    assert result.status == "completed"
    run_dir = state / "runs" / result.run_id
    for d in (state, state / "runs", run_dir):
        assert d.stat().st_mode & 0o777 == 0o700, (d, oct(d.stat().st_mode))
    records = [p for p in run_dir.iterdir() if p.is_file()]
    assert any(p.name == "events.jsonl" for p in records)
    for p in records:
        assert p.stat().st_mode & 0o077 == 0, (p, oct(p.stat().st_mode))


# ---------------------------------------------------------------- debug logs


def test_debug_logs_are_redacted_whichever_logger_writes_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("MASSGEN_MCP_TOKEN", TOKEN)
    App(tmp_path / ".massgen", env=Environment({"OPENAI_API_KEY": DOTENV_KEY}), cwd=tmp_path)
    body = {"messages": [{"role": "user", "content": f"key {DOTENV_KEY} token {TOKEN}"}]}
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("openai._base_client").debug("Request options: %s", body)
        try:
            raise RuntimeError(f"upstream said {DOTENV_KEY}")
        except RuntimeError:
            logging.getLogger("httpx").exception("request failed")
    text = caplog.text + "".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    assert "Request options" in text and "request failed" in text
    assert DOTENV_KEY not in text and TOKEN not in text


# ---------------------------------------------------------------- a key only a .env sets


async def test_a_key_only_the_projects_env_sets_is_named_as_such(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("m1", answer_then_vote("Kafka"))
    (tmp_path / ".env").write_text(f"OPENAI_API_KEY={DOTENV_KEY}\n")
    team = tmp_path / "team.yaml"
    team.write_text(yaml.safe_dump({"agents": [{"id": "a", "backend": {
        "type": "openai", "model": "m1", "base_url": provider.openai_base_url,
        "max_retries": 0}}]}))
    app = App(tmp_path / ".massgen", env=Environment({}, dotenv_dir=tmp_path), cwd=tmp_path,
              default_team=str(team))
    server, _ = build_server(app)
    async with Client(server) as client:
        r = await client.call_tool("run_consensus", {"task": "Which queue?"})
    text = r.model_dump_json()
    assert not r.is_error and f"OPENAI_API_KEY from {tmp_path / '.env'}" in text, text[-3000:]
    assert DOTENV_KEY not in text
    doctor = subprocess.run(
        [EXE, "doctor", "--dir", str(tmp_path)], cwd=tmp_path, capture_output=True,
        text=True, timeout=300, env=server_env({"XDG_CONFIG_HOME": str(tmp_path / "xdg"),
                                                "HOME": str(tmp_path)}))
    out = doctor.stdout + doctor.stderr
    assert f"OPENAI_API_KEY from {tmp_path / '.env'}" in out, out
    assert DOTENV_KEY not in out
