"""Secrets never leave: secret files are refused by one rule (`files`, workspace seeding, the
file tools), and what goes to a provider is redacted first (tool outputs and answers too),
with the server's own token and cloud keys in the redaction set. Each case runs for real: a
scripted provider records what it was sent, and the run's records are read back."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from agents import best_label, has_answered, presenting
from mcp import Client
from scripted_provider import Call, Reply, ScriptedProvider, ScriptRequest, ToolCalls, answer, vote
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
    result = await Engine(state, Environment({})).run(team, "What is in the project?")
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
