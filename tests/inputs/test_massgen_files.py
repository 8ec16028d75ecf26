"""MassGen-shaped team files, written the way MassGen's own examples are: what loads, what
warns (once per file, naming what the team loses) and what is refused (every problem at once)."""

from __future__ import annotations

import logging
import subprocess
import textwrap
from pathlib import Path

import pytest
from agents import answer_then_vote
from helpers import run_team
from mcp_harness import EXE, server_env
from scripted_provider import ScriptedProvider, Text

from massgen_mcp.backends import create_backend
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import load_team_file
from massgen_mcp.config.orchestration import VOTING_SENSITIVITY
from massgen_mcp.errors import ConfigError, MissingKeyError
from massgen_mcp.messages import user
from massgen_mcp.runs.engine import Engine

KEYS = {"OPENAI_API_KEY": "k-openai", "ANTHROPIC_API_KEY": "k-anthropic",
        "GEMINI_API_KEY": "k-gemini", "GROQ_API_KEY": "k-groq", "NGC_API_KEY": "k-ngc",
        "POE_API_KEY": "k-poe"}


def _file(tmp_path: Path, body: str, name: str = "team.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def _load(tmp_path: Path, body: str, env: dict[str, str] | None = None):
    return load_team_file(_file(tmp_path, body), Environment(
        KEYS if env is None else env, dotenv_dir=tmp_path))


def test_fairness_lead_cap_answers_is_massgens_key(tmp_path: Path) -> None:
    team = _load(tmp_path, """
        agents:
          - id: a
            backend: {type: openai, model: gpt-5}
        orchestrator:
          fairness_lead_cap_answers: 1
        """)
    assert team.orchestrator.fairness_lead_cap == 1 and team.warnings == ()
    off = _load(tmp_path, """
        agents: [{id: a, backend: {type: openai, model: gpt-5}}]
        orchestrator: {fairness_enabled: false, fairness_lead_cap_answers: 3}
        """)
    assert off.orchestrator.fairness_lead_cap is None


async def test_top_k_and_chat_template_kwargs_pass_through_vllm(
        tmp_path: Path, provider: ScriptedProvider) -> None:
    team = _load(tmp_path, f"""
        agents:
          - id: qwen
            backend:
              type: vllm
              model: qwen-local
              base_url: {provider.openai_base_url}
              top_k: 20
              chat_template_kwargs: {{enable_thinking: false}}
          - id: sg
            backend: {{type: sglang, model: qwen-sg, top_k: 5}}
        """, env={})
    assert team.warnings == ()
    provider.script("qwen-local", Text("ok"))
    backend = create_backend(team.agents[0])
    await backend.turn([user("hi")], [])
    await backend.aclose()
    raw = provider.requests_for("qwen-local")[0].raw
    assert raw["top_k"] == 20 and raw["chat_template_kwargs"] == {"enable_thinking": False}


async def test_extra_body_is_sent_by_openai_compatible_backends(
        tmp_path: Path, provider: ScriptedProvider) -> None:
    team = _load(tmp_path, f"""
        agents:
          - id: sg
            backend:
              type: sglang
              model: sg-local
              base_url: {provider.openai_base_url}
              extra_body: {{repetition_penalty: 1.1, separate_reasoning: true,
                           model: not-this-one}}
          - id: claude
            backend: {{type: claude, model: claude-x, extra_body: {{a: 1}}}}
        """, env={"ANTHROPIC_API_KEY": "k"})
    # Sent on the OpenAI-compatible backend; still named as lost on Anthropic's.
    (warning,) = team.warnings
    assert "agents[1].backend.extra_body" in warning and "agents[0]" not in warning
    provider.script("sg-local", Text("ok"))
    backend = create_backend(team.agents[0])
    await backend.turn([user("hi")], [])
    await backend.aclose()
    raw = provider.requests_for("sg-local")[0].raw
    assert raw["repetition_penalty"] == 1.1 and raw["separate_reasoning"] is True
    assert raw["model"] == "sg-local"  # the request's own fields are not replaced


@pytest.mark.parametrize("level", sorted(VOTING_SENSITIVITY))
def test_every_massgen_voting_sensitivity_loads(tmp_path: Path, level: str) -> None:
    team = _load(tmp_path, f"""
        agents: [{{id: a, backend: {{type: openai, model: gpt-5}}}}]
        orchestrator: {{voting_sensitivity: {level}}}
        """)
    assert team.orchestrator.voting_sensitivity == VOTING_SENSITIVITY[level]
    if level in ("lenient", "balanced", "strict"):
        assert team.warnings == ()
    else:
        (warning,) = team.warnings
        assert f"voting_sensitivity '{level}' runs as '{VOTING_SENSITIVITY[level]}'" in warning


def test_an_unknown_voting_sensitivity_says_what_is_supported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        _load(tmp_path, """
            agents: [{id: a, backend: {type: openai, model: gpt-5}}]
            orchestrator: {voting_sensitivity: gated}
            """)
    text = str(e.value)
    assert "team.yaml: orchestrator.voting_sensitivity: 'gated' is not a voting_sensitivity" \
        in text
    assert "checklist_gated" in text and "implements lenient, balanced and strict" in text


def test_nvidia_nim_and_poe_presets_and_antigravity_refused(tmp_path: Path) -> None:
    team = _load(tmp_path, """
        agents:
          - {id: nim, backend: {type: nvidia_nim, model: meta/llama-3.3-70b-instruct}}
          - {id: poe, backend: {type: poe, model: Claude-Sonnet-4, base_url: "https://api.poe.com/v1"}}
        """)
    nim, poe = team.agents
    assert (nim.base_url, nim.api_key.get_secret_value()) == (
        "https://integrate.api.nvidia.com/v1", "k-ngc")
    assert poe.provider.wire == "openai_chat" and poe.api_key.get_secret_value() == "k-poe"
    with pytest.raises(ConfigError) as e:
        _load(tmp_path, """
            agents:
              - {id: poe, backend: {type: poe, model: m}}
              - {id: agy, backend: {type: antigravity_cli, model: gemini-3-pro}}
            """)
    lines = str(e.value).splitlines()
    assert any("agents[1].backend.type: backend type 'antigravity_cli' is not supported yet"
               in ln and "use type: gemini" in ln for ln in lines)
    with pytest.raises(ConfigError, match=r"agents\[0\].backend.base_url: type 'poe' needs"):
        _load(tmp_path, "agents: [{id: poe, backend: {type: poe, model: m}}]")


def test_cwd_placeholder_is_the_agents_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    team = _load(tmp_path, """
        agents:
          - id: browser
            backend:
              type: openai
              model: gpt-5
              cwd: workspace1
              mcp_servers:
                - name: playwright
                  type: stdio
                  command: npx
                  args: ["@playwright/mcp@latest", "--output-dir=${cwd}"]
        """)
    (server,) = team.agents[0].backend.servers()
    assert server.args[1] == f"--output-dir={(tmp_path / 'workspace1').resolve()}"
    (warning,) = team.warnings
    assert "agents[0].backend.cwd: agents get no workspace directory" in warning


def test_every_problem_of_a_file_is_reported_at_once(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        _load(tmp_path, """
            agents:
              - id: a
                backend: {type: opnai, model: gpt-5}
              - id: b
                backend: {type: claude, model: c, temperture: 0.2}
              - id: c
                backend: {type: gemini, model: g, api_key: "${GEMINI_KEY_X}"}
            orchestrator:
              max_new_answers_per_agent: 0
            """)
    lines = str(e.value).splitlines()
    assert all(ln.startswith("team.yaml: ") for ln in lines)
    expected = ["agents[0].backend.type: 'opnai' is not a known backend; did you mean 'openai'",
                "agents[1].backend.temperture: unknown field 'temperture'; did you mean "
                "'temperature'?",
                "agents[2].backend.api_key: environment variable GEMINI_KEY_X is not set",
                "orchestrator.max_new_answers_per_agent: Input should be greater than or equal "
                "to 1"]
    for want in expected:
        assert any(want in ln for ln in lines), (want, lines)


def test_every_missing_key_is_named_at_once(tmp_path: Path) -> None:
    with pytest.raises(MissingKeyError) as e:
        _load(tmp_path, """
            agents:
              - {id: a, backend: {type: openai, model: gpt-5}}
              - {id: b, backend: {type: claude, model: c}}
            """, env={})
    assert "OPENAI_API_KEY" in str(e.value) and "ANTHROPIC_API_KEY" in str(e.value)
    assert e.value.env_vars == ("OPENAI_API_KEY",)


MASSGEN_STYLE = """
    # A team as MassGen's examples write it.
    agents:
      - id: researcher
        backend:
          type: groq
          model: llama-3.3-70b
          enable_web_search: true
          custom_tools: [{name: calc, path: tools/calc.py}]
          enable_mcp_command_line: true
          command_line_execution_mode: docker
      - id: writer
        backend: {type: openai, model: gpt-5, enable_web_search: true, cwd: ws2}
        append_system_prompt: Be concise.
    orchestrator:
      snapshot_storage: snapshots
      agent_temporary_workspace: temp_workspaces
      voting_sensitivity: checklist_gated
      coordination: {enable_planning_mode: true}
      context_paths:
        - {path: ".", permission: write}
    timeout_settings:
      orchestrator_timeout_seconds: 900
      initial_round_timeout_seconds: 300
    ui: {display_type: rich_terminal, logging_enabled: true}
    """


def test_one_warning_per_file_names_keys_and_losses(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        team = _load(tmp_path, MASSGEN_STYLE)
    (warning,) = team.warnings
    records = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in records] == [warning]
    assert warning.startswith("team.yaml: accepted but not honoured: ")
    for part in ("agents[0].backend.custom_tools: agents do not get MassGen's custom tools",
                 "orchestrator.snapshot_storage, orchestrator.agent_temporary_workspace: "
                 "agents share no workspace snapshots",
                 "voting_sensitivity 'checklist_gated' runs as 'strict'",
                 "timeout_settings: round timeouts are not applied",
                 "agents[0].backend.enable_web_search: agents will have no web search "
                 "(not available on type groq)"):
        assert part in warning, part
    assert "ui" not in warning.split(": ", 1)[1].split()  # display settings: no word
    # The command line is honoured (sandboxed shell, tools/shell.py), and with it the
    # winner's changes to writable context paths are written back.
    assert "command_line" not in warning and "shell" not in warning
    assert "context_paths[0]" not in warning
    assert "agents[1].backend.enable_web_search" not in warning  # honoured on openai
    assert team.orchestrator.orchestrator_timeout_seconds == 900
    assert team.agents[1].system_message == "Be concise."


async def test_the_warning_is_in_the_runs_notes(provider: ScriptedProvider,
                                                tmp_path: Path) -> None:
    provider.script("m-notes", answer_then_vote("x"))
    team = _load(tmp_path, f"""
        agents:
          - id: a
            backend:
              type: chatcompletion
              model: m-notes
              base_url: {provider.openai_base_url}
              api_key: test-key
              max_retries: 0
              custom_tools: [{{name: calc}}]
        """)
    result = await run_team(team, tmp_path)
    assert result.status == "completed"
    assert result.notes == list(team.warnings) and "custom_tools" in result.notes[0]


def test_the_cli_prints_the_warning_once_on_stderr(provider: ScriptedProvider,
                                                   tmp_path: Path) -> None:
    provider.script("m-cli", answer_then_vote("cli", "agent1", final="DONE"))
    path = _file(tmp_path, f"""
        agents:
          - id: a
            backend:
              type: chatcompletion
              model: m-cli
              base_url: {provider.openai_base_url}
              api_key: test-key
              enable_image_generation: true
        """)
    done = subprocess.run([EXE, "run", "Which queue?", "--team", str(path)], cwd=tmp_path,
                          env=server_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "DONE"
    assert done.stderr.count("accepted but not honoured") == 1
    assert "agents[0].backend.enable_image_generation: agents cannot generate images" \
        in done.stderr


async def test_an_unset_variable_fails_only_the_agent_or_server_that_needs_it(
        tmp_path: Path, provider: ScriptedProvider) -> None:
    """As in MassGen: the agent whose key is unset is dropped (the run is `degraded` and says
    why), the MCP server whose variable is unset is not started, the rest runs."""
    team = _load(tmp_path, f"""
        agents:
          - id: a
            backend:
              type: chatcompletion
              model: m1
              base_url: {provider.openai_base_url}
              api_key: k
              mcp_servers:
                - {{name: needs_token, command: sh, args: [-c, "exit 1"],
                   env: {{TOKEN: "${{UNSET_SERVER_TOKEN}}"}}}}
          - id: b
            backend: {{type: chatcompletion, model: m2, base_url: {provider.openai_base_url},
                      api_key: k}}
          - id: c
            backend: {{type: chatcompletion, model: m3, base_url: {provider.openai_base_url},
                      api_key: "${{UNSET_AGENT_KEY}}"}}
        """, env={})
    assert [a.unavailable is None for a in team.agents] == [True, True, False]
    assert team.agents[0].backend.servers() == []
    assert any("mcp_servers[0]" in w and "UNSET_SERVER_TOKEN" in w and "not started" in w
               for w in team.warnings), team.warnings
    provider.script("m1", answer_then_vote("answer a", "agent1"))
    provider.script("m2", answer_then_vote("answer b", "agent1"))
    result = await Engine(tmp_path / ".massgen", Environment({})).prepare(team, "Q?").start()
    assert result.status == "degraded", result.error
    assert "UNSET_AGENT_KEY" in str(result.error) and "c" in str(result.error)
    dropped = {a.agent_id: a.error for a in result.agents}
    assert "agents[2].backend.api_key: environment variable UNSET_AGENT_KEY is not set" in str(
        dropped["c"])
    assert dropped["a"] is None and dropped["b"] is None
    assert any("UNSET_SERVER_TOKEN" in n for n in result.notes)
