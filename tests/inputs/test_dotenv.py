"""A project's `.env`, read with python-dotenv: quotes, comments, escapes and multi-line
values as every dotenv tool reads them; the real environment still wins and endpoint
variables are still refused unless the operator allows them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from agents import answer_then_vote
from mcp_harness import EXE, server_env

from massgen_mcp.config.env import Environment

KEY = "sk-dotenv-key-1234"


def env_from(tmp_path: Path, text: str, **real: str) -> Environment:
    (tmp_path / ".env").write_text(text)
    return Environment(real, dotenv_dir=tmp_path)


def test_a_quoted_key_with_a_comment_is_the_key_alone(tmp_path: Path) -> None:
    env = env_from(tmp_path, f"OPENAI_API_KEY='{KEY}' # my key\n"
                             f'ANTHROPIC_API_KEY="{KEY}"   # another\n'
                             f"export GEMINI_API_KEY={KEY} # bare, exported\n")
    assert env["OPENAI_API_KEY"] == KEY
    assert env["ANTHROPIC_API_KEY"] == KEY
    assert env["GEMINI_API_KEY"] == KEY


def test_escapes_and_multi_line_values(tmp_path: Path) -> None:
    env = env_from(tmp_path, 'A="one\\ntwo\\tthree"\n'
                             "B='no \\n escapes in single quotes'\n"
                             'PEM="-----BEGIN KEY-----\nabc\ndef\n-----END KEY-----"\n'
                             "C=after # the multi-line value did not swallow this line\n")
    assert env["A"] == "one\ntwo\tthree"
    assert env["B"] == "no \\n escapes in single quotes"
    assert env["PEM"] == "-----BEGIN KEY-----\nabc\ndef\n-----END KEY-----"
    assert env["C"] == "after"


def test_the_real_environment_wins_and_endpoints_stay_refused(tmp_path: Path) -> None:
    text = (f"OPENAI_API_KEY='{KEY}'\n"
            "OLLAMA_BASE_URL='http://attacker.example/v1' # a cloned repo's choice\n")
    env = env_from(tmp_path, text, OPENAI_API_KEY="from-the-shell")
    assert env["OPENAI_API_KEY"] == "from-the-shell"
    assert "OLLAMA_BASE_URL" not in env and env.ignored == ("OLLAMA_BASE_URL",)
    allowed = env_from(tmp_path, text, MASSGEN_MCP_DOTENV_ENDPOINTS="1")
    assert allowed["OLLAMA_BASE_URL"] == "http://attacker.example/v1"


def test_the_key_from_a_commented_dotenv_line_reaches_the_provider(provider,
                                                                   tmp_path: Path) -> None:
    """`massgen-mcp run` in a project whose .env says `ANTHROPIC_API_KEY='…' # my key`:
    the provider receives exactly the key, without quotes or comment."""
    provider.script("env-key", answer_then_vote("from the key", "agent1", final="KEYED"))
    backend = {k: v for k, v in provider.backend("anthropic", "env-key", max_retries=0).items()
               if k != "api_key"}
    (tmp_path / "team.yaml").write_text(yaml.safe_dump(
        {"agents": [{"id": "a", "backend": backend}, {"id": "b", "backend": backend}]}))
    (tmp_path / ".env").write_text(f"ANTHROPIC_API_KEY='{KEY}' # my key\n")
    done = subprocess.run([EXE, "run", "x", "--team", "team.yaml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=server_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "KEYED"
    sent = {r.headers.get("x-api-key") or r.headers["authorization"].removeprefix("Bearer ")
            for r in provider.requests_for("env-key")}
    assert sent == {KEY}
    assert KEY not in done.stdout + done.stderr
