"""Provider keys from the server's environment (and `.env`) reach each real CLI the way it reads
them; `${VAR}` expands in a CLI agent's `env`; `doctor` reports what the CLI itself says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents import answer_then_vote, best_label
from cli_agents import cli_agent, cli_env, cli_path, no_leftovers
from scripted_provider import ScriptedProvider, ScriptRequest, Text

from massgen_mcp.backends import BackendContext, create_backend
from massgen_mcp.backends.cli._options import CliOptions
from massgen_mcp.backends.cli.availability import cli_statuses
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.coordination.answers import TextAnswer
from massgen_mcp.coordination.workflow import new_answer_tool
from massgen_mcp.messages import Message

ENV_KEY = "env-key-from-the-environment-1234"


def _messages() -> list[Message]:
    return [Message("system", "You are agent a."), Message("user", "Which queue?")]


async def _one_turn(backend_data: dict[str, Any], env: Environment, run_dir: Path) -> Any:
    team = team_from_data({"agents": [{"id": "a", "backend": backend_data}]}, "t.yaml", env)
    backend = create_backend(team.agents[0], BackendContext(env=env, run_dir=run_dir))
    try:
        return await backend.turn(_messages(), [new_answer_tool(TextAnswer())])
    finally:
        await backend.aclose()


@pytest.mark.npm
async def test_claude_code_uses_anthropic_key_from_dotenv(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    """No api_key / base_url in the file and no login in HOME: the key in `.env` is used (the
    endpoint comes from the real environment: a project's .env may not redirect it)."""
    provider.script("cc", cli_agent(answer_then_vote("from the env key", best_label)))
    (tmp_path / ".env").write_text(f"ANTHROPIC_API_KEY={ENV_KEY}\n")
    home = tmp_path / "home"
    home.mkdir()
    env = Environment(cli_env(HOME=str(home), ANTHROPIC_BASE_URL=provider.anthropic_base_url),
                      dotenv_dir=tmp_path)
    turn = await _one_turn({"type": "claude_code", "model": "cc", "command": cli_path("claude"),
                            "max_retries": 0, "request_timeout_seconds": 60}, env, tmp_path)
    assert turn.tool_calls and turn.tool_calls[0].arguments["content"] == "from the env key"
    assert provider.requests_for("cc")[0].headers.get("x-api-key") == ENV_KEY
    assert ENV_KEY not in repr(turn)
    assert not no_leftovers(str(tmp_path))


@pytest.mark.npm
async def test_codex_reads_openai_api_key_from_the_environment(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    """Codex exec reads CODEX_API_KEY, not OPENAI_API_KEY: the server's OPENAI_API_KEY still
    reaches it (here with the file's base_url and no api_key)."""
    provider.script("cx", cli_agent(answer_then_vote("codex env key", best_label)))
    env = Environment(cli_env(HOME=str(tmp_path), OPENAI_API_KEY=ENV_KEY))
    turn = await _one_turn({"type": "codex", "model": "cx", "command": cli_path("codex"),
                            "base_url": provider.openai_base_url, "max_retries": 0,
                            "request_timeout_seconds": 60}, env, tmp_path)
    assert turn.tool_calls and turn.tool_calls[0].arguments["content"] == "codex env key"
    assert provider.requests_for("cx")[0].headers["authorization"] == f"Bearer {ENV_KEY}"
    assert not no_leftovers(str(tmp_path))


@pytest.mark.npm
async def test_gemini_cli_uses_gemini_api_key_from_the_environment(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    provider.script("gm", cli_agent(answer_then_vote("gemini env key", best_label)))
    home = tmp_path / "home"
    home.mkdir()
    env = Environment(cli_env(HOME=str(home), GEMINI_API_KEY=ENV_KEY,
                              GOOGLE_GEMINI_BASE_URL=provider.gemini_base_url))
    turn = await _one_turn({"type": "gemini_cli", "model": "gm", "command": cli_path("gemini"),
                            "max_retries": 0, "request_timeout_seconds": 120}, env, tmp_path)
    assert turn.tool_calls and turn.tool_calls[0].arguments["content"] == "gemini env key"
    assert provider.requests_for("gm")[0].headers.get("x-goog-api-key") == ENV_KEY
    assert not no_leftovers(str(tmp_path))


def test_vars_expand_in_a_cli_agents_env_and_an_unset_one_is_named() -> None:
    data = {"agents": [{"id": "cc", "backend": {
        "type": "claude_code", "env": {"MY_TOKEN": "${MY_TOKEN_VAR}", "MODE": "${MODE:-fast}"}}}]}
    team = team_from_data(data, "t.yaml", Environment({"MY_TOKEN_VAR": "tok-1"}))
    assert CliOptions.from_spec(team.agents[0]).env == {"MY_TOKEN": "tok-1", "MODE": "fast"}
    # Unset: that agent cannot run, and says which field needs which variable.
    unset = team_from_data(data, "t.yaml", Environment({})).agents[0].unavailable
    assert unset and "agents[0].backend.env.MY_TOKEN" in unset and "MY_TOKEN_VAR" in unset


@pytest.mark.npm
async def test_api_key_keeps_the_tools_the_file_allows(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    """`api_key` used to mean `--bare` (only Bash, Edit and Read offered); Write stays."""
    seen: list[list[str]] = []

    def script(req: ScriptRequest) -> Any:
        seen.append(req.tool_names)
        return Text("ok")

    provider.script("cc", script)
    from cli_agents import claude_backend

    env = Environment(cli_env())
    turn = await _one_turn(claude_backend(provider, "cc", allowed_tools=["Write", "Read"]),
                           env, tmp_path)
    assert turn.stop_reason == "end_turn"
    assert {"Write", "Read", "Edit", "Bash"} <= set(seen[0])
    assert "mcp__massgen__new_answer" in seen[0]


@pytest.mark.npm
async def test_doctor_reports_what_the_clis_say_about_their_login(tmp_path: Path) -> None:
    cli_path("claude")
    cli_path("codex")
    none = {s.type: s for s in await cli_statuses(Environment(cli_env(HOME=str(tmp_path))),
                                                  ask=True)}
    assert not none["claude_code"].login_found
    assert "`claude auth status`: not logged in" in none["claude_code"].login
    assert not none["codex"].login_found
    assert "`codex login status`: not logged in" in none["codex"].login
    assert not none["gemini_cli"].login_found
    keyed = {s.type: s for s in await cli_statuses(Environment(cli_env(
        HOME=str(tmp_path), ANTHROPIC_API_KEY=ENV_KEY, OPENAI_API_KEY=ENV_KEY,
        GEMINI_API_KEY=ENV_KEY)), ask=True)}
    assert keyed["claude_code"].login_found
    assert "logged in (ANTHROPIC_API_KEY)" in keyed["claude_code"].login
    assert keyed["codex"].login_found and "OPENAI_API_KEY set" in keyed["codex"].login
    assert keyed["gemini_cli"].login_found and keyed["gemini_cli"].login == "GEMINI_API_KEY set"
    assert not any(ENV_KEY in s.model_dump_json() for s in keyed.values())
    # A config file left by any run is not a login.
    (tmp_path / ".claude.json").write_text("{}")
    guessed = {s.type: s for s in await cli_statuses(Environment(cli_env(HOME=str(tmp_path))))}
    assert not guessed["claude_code"].login_found
