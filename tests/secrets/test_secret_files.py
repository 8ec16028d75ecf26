"""Token-bearing files kept from the models (one list, shared with the hook), and secrets on a
trusted tool server's command line kept out of its log and the run's records."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from agents import answer_then_vote
from mcp import Client
from scripted_provider import ScriptedProvider

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.config.trust import TeamPolicy
from massgen_mcp.hook.patterns import check_call
from massgen_mcp.hook.scope import Scope
from massgen_mcp.redaction import secret_args
from massgen_mcp.server import build_server

SERVER = str(Path(__file__).parents[1] / "tool_server.py")
TOKEN_FILES = {
    ".npmrc": "//registry.npmjs.org/:_authToken=npm_abcdefghijklmnop\n",
    ".yarnrc.yml": "npmAuthToken: npm_abcdefghijklmnop\n",
    ".pypirc": "[pypi]\npassword = pypi-AgEIcHlwaS5vcmc\n",
    ".netrc": "machine github.com login x password ghp_abcdefghijklmnop\n",
    "_netrc": "machine github.com login x password ghp_abcdefghijklmnop\n",
    "infra/prod.tfstate": '{"outputs": {"db_password": {"value": "hunter2hunter2"}}}\n',
    "infra/terraform.tfstate.backup": '{"db_password": "hunter2hunter2"}\n',
    ".docker/config.json": '{"auths": {"ghcr.io": {"auth": "eDpnaHBfYWJjZGVm"}}}\n',
    ".kube/config": "users:\n- user:\n    token: eyJhbGciOiJSUzI1NiIs\n",
    "kubeconfig": "users:\n- user:\n    token: eyJhbGciOiJSUzI1NiIs\n",
    "id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n",
    "keys/id_xmss": "not even shaped like a key\n",
    "service-account-prod.json": '{"type": "service_account", "private_key_id": "abc"}\n',
    ".config/gh/hosts.yml": "github.com:\n    oauth_token: gho_abcdefghijklmnop\n",
    ".azure/accessTokens.json": '[{"accessToken": "eyJ0eXAiOiJKV1Qi"}]\n',
    ".my.cnf": "[client]\npassword=hunter2hunter2\n",
    ".git/config": '[remote "origin"]\n\turl = https://x-access-token:ghp_abcdefghijkl@github.com/o/r\n',
    ".gitmodules": '[submodule "s"]\n\turl = https://bot:glpat-abcdefghijklm@gitlab.com/o/s\n',
    "sub/.git/config": "[http]\n\textraheader = AUTHORIZATION: basic eDpnaHBfYWJj\n",
    "notes/deploy.txt": "paste:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n",
}


def _app(cwd: Path, **kw: Any) -> App:
    return App(cwd / ".massgen", env=Environment({}, dotenv_dir=cwd), cwd=cwd,
               team_policy=TeamPolicy.create(None), **kw)


async def _call(app: App, tool: str, args: dict[str, Any]) -> Any:
    server, _ = build_server(app)
    async with Client(server) as client:
        return await client.call_tool(tool, args)


@pytest.mark.parametrize("name", sorted(TOKEN_FILES))
async def test_token_bearing_files_are_never_sent(provider: ScriptedProvider, tmp_path: Path,
                                                  name: str) -> None:
    target = tmp_path / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(TOKEN_FILES[name])
    r = await _call(_app(tmp_path), "run_consensus", {"task": "x", "files": [name]})
    text = r.content[0].text
    assert r.is_error and "--allow-secret-files" in text and name in text
    assert TOKEN_FILES[name].strip()[:20] not in text and provider.requests == []


async def test_harmless_neighbours_still_pass(provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("m1", answer_then_vote("Kafka"))
    teams = tmp_path / "teams"
    teams.mkdir()
    (teams / "t.yaml").write_text(yaml.safe_dump({"agents": [{
        "id": "a", "backend": provider.backend("openai", "m1", max_retries=0)}]}))
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = https://github.com/o/r.git\n')
    (tmp_path / "infra").mkdir()
    (tmp_path / "infra" / "main.tf").write_text('resource "x" "y" {}\n')
    (tmp_path / "id_card.md").write_text("an id card design\n")
    (tmp_path / "docs.md").write_text("Connect with postgres://user:password@localhost/db\n")
    app = App(tmp_path / ".massgen", env=Environment({}, dotenv_dir=tmp_path), cwd=tmp_path,
              team_policy=TeamPolicy.create([str(teams)]))
    r = await _call(app, "run_consensus", {"task": "Which queue?", "team": "t", "files": [
        ".git/config", "infra/main.tf", "id_card.md", "docs.md"]})
    assert r.structured_content["status"] == "completed", r.content[0].text
    sent = provider.requests_for("m1")[0].text
    assert "github.com/o/r.git" in sent and "an id card design" in sent


@pytest.mark.parametrize("name", [".npmrc", "prod.tfstate", ".pypirc", "kubeconfig",
                                  "service-account.json", "~/.config/gh/hosts.yml"])
def test_the_hook_uses_the_same_list(tmp_path: Path, name: str) -> None:
    scope = Scope.create(str(tmp_path))
    findings = check_call("Bash", {"command": f"cat {name}"}, scope)
    assert findings and any(name.rsplit("/", 1)[-1] in f.detail and "transcript" in f.detail
                            for f in findings), findings


# ---------------------------------------------------------------- tool-server command lines

ARG_SECRETS = ["argtok-7f3k9q2m1x8v", "flagval-4h8j2k9l3m", "urlpass-9x7c5v3b1n",
               "bearer-2m4n6b8v0c1x", "envpass-5t7y9u1i3o"]


def test_secret_args_finds_every_form() -> None:
    s1, s2, s3, s4, s5 = ARG_SECRETS
    found = secret_args([f"--api-key={s1}", "--token", s2, f"https://bot:{s3}@example.com/x",
                         f"Authorization: Bearer {s4}", f"DB_PASSWORD={s5}", "--verbose",
                         "--name=server", "plain"])
    assert set(ARG_SECRETS) <= set(found)
    assert "server" not in found and "plain" not in found


async def test_secrets_on_a_tool_server_command_line_are_redacted_in_its_log(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("m1", answer_then_vote("Kafka"))
    s1, s2, s3, s4, s5 = ARG_SECRETS
    # The server prints its own command line to stderr (many do, on start or on error).
    echo = {"name": "echo", "command": "/bin/sh",
            "args": ["-c", f"echo \"argv: $*\" >&2; exec '{sys.executable}' '{SERVER}'", "sh",
                     f"--api-key={s1}", "--token", s2, f"https://bot:{s3}@example.com/x",
                     f"Authorization: Bearer {s4}", f"DB_PASSWORD={s5}"]}
    backend = {**provider.backend("openai", "m1", max_retries=0), "mcp_servers": [echo]}
    team = tmp_path / "team.yaml"
    team.write_text(yaml.safe_dump({"agents": [{"id": "a", "backend": backend}]}))
    app = App(tmp_path / ".massgen", env=Environment({}, dotenv_dir=tmp_path), cwd=tmp_path,
              default_team=str(team))
    r = await _call(app, "run_consensus", {"task": "Which queue?"})
    assert r.structured_content["status"] == "completed", r.content[0].text
    files = [p for p in (tmp_path / ".massgen").rglob("*") if p.is_file()]
    logs = [p for p in files if p.name.endswith(".stderr.log")]
    assert logs and "argv: " in logs[0].read_text()
    for p in files:
        text = p.read_text(encoding="utf-8", errors="replace")
        for secret in ARG_SECRETS:
            assert secret not in text, (p, secret)
