"""AG2 members (MassGen's `type: ag2`, the optional extra massgen-mcp[ag2]).

MassGen 0.1.97's seven ag2 team files (tests/data/massgen_ag2, Apache-2.0) load or are
refused with the reason; teams with AG2 members run end to end against the scripted provider
through AG2's own (synchronous) OpenAI client, misbehaving models included. Loading needs no
AG2; the runs skip without the extra (and fail under CI, which installs it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from agents import answer_then_vote, best_label, has_answered, presenting
from helpers import run_team
from mcp.types import TextContent
from mcp_harness import EXE, memory_client, server_env
from scripted_provider import (
    TEST_KEY,
    Call,
    Error,
    Hang,
    Reply,
    ScriptedProvider,
    ScriptRequest,
    Text,
    ToolCalls,
    answer,
    raw_call,
)
from tiers import require, require_program

from massgen_mcp.backends.ag2 import ag2_installed
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import load_team_file
from massgen_mcp.config.team import Team
from massgen_mcp.config.trust import check_restricted
from massgen_mcp.errors import ConfigError, MissingKeyError

DATA = Path(__file__).parents[1] / "data" / "massgen_ag2"
KEYS = {"OPENAI_API_KEY": "k-openai", "ANTHROPIC_API_KEY": "k-anthropic",
        "GEMINI_API_KEY": "k-gemini"}
# The OpenAI SDK says in every request whether its client is the async one: ours is
# (backends/openai_chat.py); AG2's is the synchronous client.
SYNC_CLIENT = "false"


def require_ag2() -> None:
    require("ag2", ag2_installed(), "AG2 (the `autogen` package) is not installed")


def _load(path: Path, env: dict[str, str] | None = None) -> Team:
    return load_team_file(path, Environment(KEYS if env is None else env,
                                            dotenv_dir=path.parent))


def _file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "team.yaml"
    path.write_text(textwrap.dedent(body))
    return path


def _member(agent_id: str, model: str, url: str, *, kind: str = "assistant",
            api_type: str = "openai", extra: str = "") -> str:
    return f"""
          - id: {agent_id}
            backend:
              type: ag2
              max_retries: 0
              agent_config:
                type: {kind}
                name: {agent_id.upper()}_AG2
                system_message: You are AG2 agent {agent_id}.
                llm_config:
                  - api_type: {api_type}
                    model: {model}
                    base_url: {url}
                    temperature: 0.3{extra}
    """


# ---------------------------------------------------------------------------- MassGen's files

LOADS = {
    "ag2_case_study.yaml": [("ag2_assistant", "claude-sonnet-4-20250514", "ANTHROPIC_API_KEY"),
                            ("gemini2.5pro", "gemini-2.5-pro", "GEMINI_API_KEY")],
    "ag2_gemini.yaml": [("ag2_assistant", "claude-sonnet-4-20250514", "ANTHROPIC_API_KEY"),
                        ("gemini2.5flash", "gemini-2.5-flash", "GEMINI_API_KEY")],
    "ag2_coder.yaml": [("ag2_coder", "gpt-5", "OPENAI_API_KEY")],
    "ag2_coder_case_study.yaml": [("ag2_coder", "gpt-5", "OPENAI_API_KEY"),
                                  ("gemini2.5pro", "gemini-2.5-pro", "GEMINI_API_KEY")],
    "ag2_single_agent.yaml": [("ag2_assistant", "gpt-4o", "OPENAI_API_KEY")],
}
GROUP_CHATS = ["ag2_groupchat.yaml", "ag2_groupchat_gpt.yaml"]


def test_the_data_is_massgens_seven_ag2_files() -> None:
    assert sorted(p.name for p in DATA.glob("*.yaml")) == sorted([*LOADS, *GROUP_CHATS])
    assert "Apache License" in (DATA / "LICENSE").read_text()


@pytest.mark.parametrize("name", sorted(LOADS))
def test_massgens_single_agent_ag2_files_load(name: str) -> None:
    team = _load(DATA / name)
    assert [(a.id, a.model, a.key_source) for a in team.agents] == LOADS[name]
    ag2 = team.agents[0]
    assert ag2.provider.name == "ag2" and ag2.provider.wire == "ag2"
    assert ag2.api_key is not None and ag2.api_key.get_secret_value() == KEYS[ag2.key_source
                                                                              or ""]
    warning = "\n".join(team.warnings)
    if "cache_seed" in (DATA / name).read_text():
        assert ".cache_seed: AG2 replies are not cached on disk" in warning
    if "anthropic" in (DATA / name).read_text():
        assert "llm_config[0].api_type: runs on the provider's OpenAI-compatible endpoint" \
            in warning
        assert ag2.endpoint == "https://api.anthropic.com/v1/"  # what the run says it called
    assert "agent_config: ignored" not in warning and "not implemented by" not in warning


@pytest.mark.parametrize("name", GROUP_CHATS)
def test_massgens_group_chat_files_are_refused_saying_why(name: str) -> None:
    with pytest.raises(ConfigError) as e:
        _load(DATA / name)
    text = str(e.value)
    assert "backend.group_config: AG2 group chats are not supported" in text
    assert "give each AG2 agent its own member" in text
    assert "model: this field is required" not in text  # one reason, not noise


def test_a_code_executor_becomes_the_sandboxed_command_tool() -> None:
    team = _load(DATA / "ag2_coder.yaml")
    extra = team.agents[0].backend.model_extra or {}
    assert extra["enable_mcp_command_line"] is True and extra["command_line_timeout"] == 60
    warning = team.warnings[0]
    assert "agent_config.code_execution_config: AG2's code executor is replaced by the " \
        "execute_command tool, sandboxed" in warning
    assert "work_dir is not used" in warning


def test_every_problem_of_an_agent_config_is_named(tmp_path: Path) -> None:
    path = _file(tmp_path, """
        agents:
          - id: a
            backend: {type: ag2, agent_config: {type: groupchat, name: A}}
          - id: b
            backend:
              type: ag2
              agent_config:
                name: B
                llm_config: [{api_type: bedrock, model: m}]
          - id: c
            backend:
              type: ag2
              agent_config: {name: C, llm_config: {model: m, temperature: 5}}
          - id: d
            backend: {type: ag2}
          - id: e
            backend:
              type: ag2
              agent_config: {name: E, sytem_message: hi, llm_config: {model: m, temprature: 1}}
        """)
    with pytest.raises(ConfigError) as e:
        _load(path)
    text = str(e.value)
    for line in ["agents[0].backend.agent_config.type: 'groupchat' is not an AG2 agent type",
                 "agents[0].backend.agent_config.llm_config: required",
                 "agents[1].backend.agent_config.llm_config.api_type: 'bedrock' is not "
                 "supported in an ag2 member; use openai, anthropic, google",
                 "agents[2].backend.agent_config.llm_config.temperature: expected a number "
                 "from 0 to 2",
                 "agents[3].backend.agent_config: required",
                 "agents[4].backend.agent_config.sytem_message: unknown field "
                 "'sytem_message'; did you mean 'system_message'?",
                 "agents[4].backend.agent_config.llm_config.temprature: unknown field "
                 "'temprature'; did you mean 'temperature'?"]:
        assert line in text


def test_a_missing_key_names_the_entrys_provider_variable(tmp_path: Path) -> None:
    with pytest.raises(MissingKeyError) as e:
        _load(DATA / "ag2_case_study.yaml", {"GEMINI_API_KEY": "k-gemini"})
    assert "ANTHROPIC_API_KEY" in str(e.value) and "agents[0]" in str(e.value)


def test_a_restricted_file_may_not_redirect_an_ag2_member(tmp_path: Path) -> None:
    """A team file named by a tool call may not set where keys go, nor run code, even inside
    agent_config (config/trust.py)."""
    data = {"agents": [{"id": "a", "backend": {"type": "ag2", "agent_config": {
        "name": "A",
        "code_execution_config": {"executor": {"type": "LocalCommandLineCodeExecutor"}},
        "llm_config": {"api_type": "openai", "model": "m", "base_url": "https://evil.example/v1",
                       "api_key": "${OPENAI_API_KEY}"}}}}]}
    with pytest.raises(ConfigError) as e:
        check_restricted(data, "hostile.yaml")
    text = str(e.value)
    assert "agents[0].backend.agent_config.code_execution_config" in text
    assert "agents[0].backend.agent_config.llm_config[0].base_url" in text
    assert "agents[0].backend.agent_config.llm_config[0].api_key" in text


def test_without_the_extra_the_error_names_the_install_command(tmp_path: Path) -> None:
    """In a Python where `autogen` cannot be found (as without the extra), building an ag2
    member fails with the command that installs it, and doctor says the same."""
    path = _file(tmp_path, "agents:" + _member("a", "m", "http://127.0.0.1:9/v1"))
    code = textwrap.dedent(f"""
        import importlib.machinery as machinery
        found = machinery.PathFinder.find_spec
        def find_spec(name, path=None, target=None):  # as if ag2 were not installed
            if name == "autogen" or name.startswith("autogen."):
                return None
            return found(name, path, target)
        machinery.PathFinder.find_spec = staticmethod(find_spec)
        from massgen_mcp.backends import create_backend
        from massgen_mcp.backends.availability import provider_statuses
        from massgen_mcp.config.env import Environment
        from massgen_mcp.config.load import load_team_file
        from massgen_mcp.errors import ConfigError
        team = load_team_file({str(path)!r}, Environment({{}}))
        status = next(s for s in provider_statuses(Environment({{}}), {{}}) if s.provider == "ag2")
        print("doctor:", status.usable, status.fix)
        try:
            create_backend(team.agents[0])
        except ConfigError as e:
            print("error:", e)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    assert done.returncode == 0, done.stderr
    assert "doctor: False install the extra: pip install 'massgen-mcp[ag2]'" in done.stdout
    assert "error: type ag2 needs AG2: pip install 'massgen-mcp[ag2]'" in done.stdout


# ---------------------------------------------------------------------------- runs


def _ag2_requests(provider: ScriptedProvider, model: str) -> list[ScriptRequest]:
    requests = provider.requests_for(model)
    assert requests, f"no request for {model}"
    assert all(r.headers.get("x-stainless-async") == SYNC_CLIENT for r in requests)
    return requests


@pytest.mark.ag2
async def test_a_team_with_two_ag2_members_runs_over_mcp(provider: ScriptedProvider,
                                                         tmp_path: Path) -> None:
    """Two AG2 members (an AssistantAgent on api_type openai, a ConversableAgent on api_type
    anthropic) and a Chat Completions member answer, vote and report usage."""
    require_ag2()
    url = provider.openai_base_url
    provider.script("ag2-a", answer_then_vote("Kafka, for replay", best_label))
    provider.script("ag2-b", answer_then_vote("SQS, for zero ops", best_label))
    provider.script("plain", answer_then_vote("RabbitMQ", best_label))
    path = _file(tmp_path, "agents:" + _member("a", "ag2-a", url)
                 + _member("b", "ag2-b", url, kind="conversable", api_type="anthropic") + f"""
          - id: c
            backend: {{type: chatcompletion, model: plain, base_url: {url}, api_key: test-key}}
        """ + "\norchestrator: {early_stop: false, straggler_grace_seconds: null}\n")  # all vote
    async with memory_client(tmp_path, team=path) as client:
        result = await client.call_tool("run_consensus", {"task": "Which queue?"})
        assert not result.is_error, result.content
        data = result.structured_content
        assert data is not None
        full = await client.call_tool("get_run", {"run_id": data["run_id"], "detail": "agents"})
    assert data["status"] == "completed", data
    detail = full.structured_content
    assert detail is not None
    agents = {x["agent_id"]: x for x in detail["agent_details"]}
    assert {agents[i]["provider"] for i in "ab"} == {"ag2"}
    assert {v["voter"] for v in data["votes"]} == {"a", "b", "c"}
    for i in "ab":  # each AG2 member answered, voted and reported its tokens
        assert agents[i]["answers"] == 1 and agents[i]["status"] != "failed"
        assert agents[i]["usage"]["input_tokens"] > 0 and agents[i]["usage"]["output_tokens"] > 0
    for model, agent in (("ag2-a", "a"), ("ag2-b", "b")):
        requests = _ag2_requests(provider, model)
        first = requests[0]
        assert first.system.startswith(f"You are AG2 agent {agent}.\n\n")  # its agent_config
        assert first.raw["temperature"] == 0.3
        assert "new_answer" in first.tool_names
        assert any("vote" in r.tool_names for r in requests)
    assert all(r.headers.get("x-stainless-async") != SYNC_CLIENT
               for r in provider.requests_for("plain"))  # the other member: our own client


@pytest.mark.ag2
def test_massgens_single_agent_file_runs_unchanged_on_the_cli(provider: ScriptedProvider,
                                                              tmp_path: Path) -> None:
    """ag2_single_agent.yaml as MassGen ships it, its OpenAI endpoint moved the way the OpenAI
    SDK allows (OPENAI_BASE_URL): stdout holds the answer and nothing of AG2's output."""
    require_ag2()
    provider.script("gpt-4o", answer_then_vote("Quantum computers use qubits.", "agent1"))
    done = subprocess.run(
        [EXE, "run", "what is quantum computing?", "--team",
         str(DATA / "ag2_single_agent.yaml")], cwd=tmp_path, capture_output=True, text=True,
        timeout=300, env=server_env({"OPENAI_BASE_URL": provider.openai_base_url,
                                     "OPENAI_API_KEY": TEST_KEY}))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "FINAL: Quantum computers use qubits."
    assert "cache_seed" in done.stderr  # the file's one warning, on stderr
    requests = _ag2_requests(provider, "gpt-4o")
    assert requests[0].system.startswith("You are a helpful AI assistant powered by AG2.")
    assert requests[0].headers.get("authorization") == f"Bearer {TEST_KEY}"
    assert not (tmp_path / ".cache").exists()  # cache_seed would have made AG2's disk cache


@pytest.mark.ag2
async def test_an_ag2_member_that_writes_text_or_broken_json_is_set_right(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    require_ag2()
    url = provider.openai_base_url

    def talker(req: ScriptRequest) -> Reply:  # text instead of a tool call, then the call
        if presenting(req) or has_answered(req):
            return answer_then_vote("talked", "agent1")(req)
        if "You did not call a tool" not in req.last_user_text:
            return Text("I would use Kafka.")
        return answer("Kafka after the reminder")

    def breaker(req: ScriptRequest) -> Reply:  # arguments that are not JSON, then good ones
        if presenting(req) or has_answered(req):
            return answer_then_vote("broken", "agent1")(req)
        if not req.tool_results:
            return raw_call("new_answer", '{"content": "SQS')
        return ToolCalls([Call("new_answer", {"content": "SQS once the JSON is whole"})])

    provider.script("talker", talker)
    provider.script("breaker", breaker)
    team = _load(_file(tmp_path, "agents:" + _member("t", "talker", url)
                       + _member("k", "breaker", url)), {})
    result = await run_team(team, tmp_path)
    assert result.status == "completed", result.error
    texts = {a.agent_id: a.text for a in result.answers}
    assert texts == {"t": "Kafka after the reminder", "k": "SQS once the JSON is whole"}
    reminded = _ag2_requests(provider, "talker")
    assert any("You did not call a tool" in r.last_user_text for r in reminded)
    errors = [t for r in _ag2_requests(provider, "breaker") for t in r.tool_results
              if t["is_error"]]
    assert errors and "not valid JSON" in errors[0]["content"]


@pytest.mark.ag2
async def test_the_llm_config_list_is_ags_fallbacks(provider: ScriptedProvider,
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """As in AG2: when the first entry fails, the next one answers, with its own key; the
    environment's key of its api_type is not sent to a server on this machine."""
    require_ag2()
    monkeypatch.setenv("OPENAI_API_KEY", "k-from-the-environment")
    url = provider.openai_base_url
    provider.script("down", Error(500, "overloaded"))
    provider.script("up", answer_then_vote("from the fallback", "agent1"))
    team = _load(_file(tmp_path, f"""
        agents:
          - id: a
            backend:
              type: ag2
              max_retries: 0
              agent_config:
                name: A
                llm_config:
                  - {{api_type: openai, model: down, base_url: {url}}}
                  - {{api_type: anthropic, model: up, base_url: {url}, api_key: k-second-entry}}
        """), {})
    result = await run_team(team, tmp_path)
    assert result.status == "completed", result.error
    assert result.final_answer == "FINAL: from the fallback"
    assert provider.requests_for("down") and _ag2_requests(provider, "up")
    assert provider.requests_for("up")[0].headers["authorization"] == "Bearer k-second-entry"
    assert provider.requests_for("down")[0].headers["authorization"] == "Bearer not-needed"


@pytest.mark.ag2
async def test_a_hanging_ag2_call_does_not_hold_up_the_run(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    """AG2's client is synchronous (a worker thread): the run does not wait for a cut-off
    call, which the thread finishes on its own (here when the server stops; in general within
    request_timeout_seconds)."""
    require_ag2()
    url = provider.openai_base_url
    provider.script("fast1", answer_then_vote("Use Kafka", "agent1"))
    provider.script("fast2", answer_then_vote("Use SQS", "agent1"))
    provider.script("stuck", Hang())
    team = _load(_file(tmp_path, f"""
        agents:
          - id: a
            backend: {{type: chatcompletion, model: fast1, base_url: {url}, api_key: k}}
          - id: b
            backend: {{type: chatcompletion, model: fast2, base_url: {url}, api_key: k}}
        """ + _member("slow", "stuck", url) + """
        orchestrator: {straggler_grace_seconds: 0.5, straggler_grace_factor: 0}
        """), {})
    with anyio.fail_after(120):  # a hang guard: the request timeout is 600 s
        result = await run_team(team, tmp_path)
    assert result.status == "degraded" and "slow: cut off" in (result.error or "")
    slow = next(a for a in result.agents if a.agent_id == "slow")
    assert slow.status == "failed" and slow.usage.cancelled_calls >= 1
    assert len(_ag2_requests(provider, "stuck")) == 1  # one call, not retried


@pytest.mark.ag2
async def test_a_refused_key_names_the_variable_and_never_the_key(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    require_ag2()
    secret = "sk-proj-AG2secretValue1234567890abcdef"
    provider.script("locked", Error(401, f"Incorrect API key provided: {secret}"))
    provider.script("fine", answer_then_vote("the other answer", best_label))
    url = provider.openai_base_url
    team = _load(_file(tmp_path, f"""
        agents:
          - id: a
            backend:
              type: ag2
              max_retries: 0
              agent_config:
                name: A
                llm_config: {{api_type: openai, model: locked, base_url: {url},
                              api_key: "${{AG2_TEST_KEY}}"}}
          - id: b
            backend: {{type: chatcompletion, model: fine, base_url: {url}, api_key: test-key}}
        """), {"AG2_TEST_KEY": secret})
    result = await run_team(team, tmp_path)
    assert result.status in ("completed", "degraded"), result.error
    failed = next(a for a in result.agents if a.agent_id == "a")
    assert failed.status == "failed" and failed.error is not None
    assert "authentication failed (HTTP 401)" in failed.error
    assert "backend.api_key in the team file" in failed.error
    assert secret not in result.model_dump_json()
    assert _ag2_requests(provider, "locked")[0].headers["authorization"] == f"Bearer {secret}"


@pytest.mark.bubblewrap
@pytest.mark.ag2
async def test_an_ag2_coder_runs_its_code_in_the_sandbox(provider: ScriptedProvider,
                                                         tmp_path: Path) -> None:
    """ag2_coder.yaml's code executor as the sandboxed execute_command tool: real Python runs
    in bubblewrap in the agent's workspace, its output reaches the model."""
    require_ag2()
    require_program("bubblewrap", "bwrap")
    outside = tmp_path / "escaped"

    def coder(req: ScriptRequest) -> Reply:
        if presenting(req) or has_answered(req):
            return answer_then_vote("8! = 40320", "agent1")(req)
        results = [t for t in req.tool_results if t["name"] == "execute_command"]
        if not results:
            return ToolCalls([Call("execute_command", {
                "command": "python3 -c 'import math; print(math.factorial(8))'; "
                           f"touch {outside}"})])
        return answer(f"8! = {results[-1]['content'].splitlines()[1]}")  # after "exit code 0"

    provider.script("coder", coder)
    body = (DATA / "ag2_coder.yaml").read_text().replace(
        'model: "gpt-5"', f'model: "coder"\n          base_url: "{provider.openai_base_url}"')
    team = _load(_file(tmp_path, body), {})
    result = await run_team(team, tmp_path)
    assert result.status == "completed", result.error
    assert result.answers[0].text == "8! = 40320"
    outputs = [t for r in _ag2_requests(provider, "coder") for t in r.tool_results
               if t["name"] == "execute_command"]
    assert outputs and "40320" in outputs[0]["content"]
    assert not outside.exists()  # writes only inside the workspace


async def test_list_backends_reports_the_ag2_type(tmp_path: Path) -> None:
    async with memory_client(tmp_path) as client:
        result = await client.call_tool("list_backends", {})
    assert not result.is_error
    data: dict[str, Any] | None = result.structured_content
    if data is None:  # text only
        text = result.content[0]
        assert isinstance(text, TextContent)
        data = json.loads(text.text)
    ag2 = next(p for p in data["providers"] if p["provider"] == "ag2")
    assert ag2["usable"] is ag2_installed()
    assert ag2["fix"] == ("" if ag2_installed() else
                          "install the extra: pip install 'massgen-mcp[ag2]'")
