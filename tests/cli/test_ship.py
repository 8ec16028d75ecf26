"""What a user installs: bundled teams, the /massgen skill, server.json, doctor and the CLI.

The skill and the team headers are documentation, so these tests check them against the
code: every tool call they show must name real tool arguments, and every `massgen-mcp`
command line they show must parse.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from mcp import Client

import massgen_mcp
from massgen_mcp.app import App
from massgen_mcp.cli.main import build_parser, main
from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import load_team, load_team_file
from massgen_mcp.config.providers import PROVIDERS
from massgen_mcp.config.shorthand import team_from_models
from massgen_mcp.errors import MissingKeyError
from massgen_mcp.paths import bundled_team_names
from massgen_mcp.server import build_server

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
SKILL_DIR = ROOT / "skills" / "massgen"
SKILL = SKILL_DIR / "SKILL.md"
SERVER_JSON = ROOT / "server.json"
SCHEMA = Path(__file__).parents[1] / "data" / "server.schema.json"
# The registry schema is a pinned, byte-for-byte copy (see tests/data/README.md).
SCHEMA_SHA256 = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0"
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY",
            "XAI_API_KEY")
FAKE_KEYS = {name: f"sk-test-{name.lower()}-0123456789abcdef" for name in KEY_VARS}
CLI = [sys.executable, "-m", "massgen_mcp.cli"]


def env_of(values: dict[str, str], tmp_path: Path) -> Environment:
    """An environment with exactly these variables (no process env, no stray .env)."""
    return Environment(values, dotenv_dir=tmp_path)


def header(path: Path) -> str:
    """The leading comment block of a YAML file, without the '#' markers."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return "\n".join(lines)


def command_lines(text: str, markdown: bool) -> list[list[str]]:
    """Every `massgen-mcp ...` command line shown in a text, as argv without the program
    name: lines of Markdown code blocks, or of a YAML comment header (after an optional
    `Label:`), that start with the command. Placeholder arguments (`...`) are skipped."""
    if markdown:
        text = "\n".join(re.findall(r"```[a-z]*\n(.*?)```", text, re.S))
    commands = []
    for raw in text.splitlines():
        line = re.sub(r"^(\w+:\s+)?(uvx\s+)?", "", raw.strip().lstrip("#").strip())
        if re.match(r"massgen-mcp(\s|$)", line):
            argv = shlex.split(line, comments=True)[1:]
            if "..." not in argv:
                commands.append(argv)
    return commands


def check_cli_parses(argv: list[str]) -> None:
    try:
        build_parser().parse_args(argv)
    except SystemExit as e:  # argparse exits 2 on an unknown option or bad value
        pytest.fail(f"`massgen-mcp {shlex.join(argv)}` does not parse (exit {e.code})")


# ---------------------------------------------------------------------------- team configs


def test_the_bundled_teams_exist() -> None:
    assert {"frontier", "openrouter", "local", "checkpoint", "plan", "demo"} <= set(
        bundled_team_names())


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_config_loads_by_path_and_by_name(path: Path, tmp_path: Path) -> None:
    env = env_of(FAKE_KEYS, tmp_path)
    by_path = load_team_file(path, env)
    by_name = load_team(path.stem, env)
    assert by_name.source == f"bundled:{path.stem}"
    assert by_name.name == by_path.name == path.stem
    assert [a.id for a in by_name.agents] == [a.id for a in by_path.agents]
    assert len(by_name.agents) >= 3, "a team of one or two cannot outvote a mistake"
    for agent in by_name.agents:
        assert agent.model, agent.id


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_every_config_header_says_what_it_is_which_keys_and_how_to_use_it(
        path: Path, tmp_path: Path) -> None:
    text = header(path)
    assert text.splitlines()[0].startswith(f"{path.stem} — "), "first line names the team"
    assert f"--team {path.stem}" in text
    assert "Keys:" in text
    team = load_team_file(path, env_of(FAKE_KEYS, tmp_path))
    for agent in team.agents:
        if agent.provider.key_env and not agent.provider.local:
            assert any(var in text for var in agent.provider.key_env), (
                f"{path.name} needs {agent.provider.key_env} but its header does not say so")
    for argv in command_lines(text, markdown=False):
        check_cli_parses(argv)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_a_keyed_config_without_keys_names_a_variable_its_header_mentions(
        path: Path, tmp_path: Path) -> None:
    team = load_team_file(path, env_of(FAKE_KEYS, tmp_path))
    if all(a.provider.local for a in team.agents):
        pytest.skip("a local team needs no key")
    if not any(a.provider.key_env for a in team.agents):
        pytest.skip("a team of coding-agent CLIs runs on their logins (configs/clis.yaml)")
    with pytest.raises(MissingKeyError) as err:
        load_team_file(path, env_of({}, tmp_path))
    assert any(var in header(path) for var in err.value.env_vars)


def test_frontier_is_one_model_from_each_of_three_vendors(tmp_path: Path) -> None:
    team = load_team("frontier", env_of(FAKE_KEYS, tmp_path))
    assert {(a.provider.name, a.model) for a in team.agents} == {
        ("openai", "gpt-5"), ("claude", "claude-sonnet-4-5"), ("gemini", "gemini-2.5-pro")}


def test_openrouter_needs_one_key_for_several_vendors(tmp_path: Path) -> None:
    only = {"OPENROUTER_API_KEY": FAKE_KEYS["OPENROUTER_API_KEY"]}
    team = load_team("openrouter", env_of(only, tmp_path))
    assert {a.provider.name for a in team.agents} == {"openrouter"}
    vendors = {a.model.split("/", 1)[0] for a in team.agents}
    assert len(vendors) == len(team.agents) >= 3
    assert {a.api_key.get_secret_value() for a in team.agents if a.api_key} == set(only.values())


def test_local_needs_no_key_and_follows_OLLAMA_BASE_URL(tmp_path: Path) -> None:
    team = load_team("local", env_of({}, tmp_path))
    assert all(a.provider.local and a.api_key is None for a in team.agents)
    assert {a.base_url for a in team.agents} == {PROVIDERS["ollama"].base_url}
    moved = load_team("local", env_of({"OLLAMA_BASE_URL": "http://10.1.2.3:11434/v1"}, tmp_path))
    assert {a.base_url for a in moved.agents} == {"http://10.1.2.3:11434/v1"}


def test_checkpoint_team_is_strict_reviewers_and_the_checkpoint_tool_picks_it(
        tmp_path: Path) -> None:
    team = load_team("checkpoint", env_of(FAKE_KEYS, tmp_path))
    assert len(team.agents) == 3
    assert len({a.provider.name for a in team.agents}) == 3
    for agent in team.agents:
        assert agent.system_message and "review" in agent.system_message.lower()
    assert team.orchestrator.voting_sensitivity == "strict"
    assert team.orchestrator.orchestrator_timeout_seconds <= 900
    keyed = App(tmp_path / "state", env=env_of(FAKE_KEYS, tmp_path), cwd=tmp_path)
    assert keyed.reviewer_team_name(None, None) == "checkpoint"
    keyless = App(tmp_path / "state", env=env_of({}, tmp_path), cwd=tmp_path)
    assert keyless.reviewer_team_name(None, None) is None  # falls back to the default team


def test_plan_team_has_planners_with_room_for_long_plans(tmp_path: Path) -> None:
    team = load_team("plan", env_of(FAKE_KEYS, tmp_path))
    assert len(team.agents) == 3
    assert all(a.system_message for a in team.agents)
    claude = [a for a in team.agents if a.provider.name == "claude"]
    assert claude and (claude[0].backend.max_tokens or 0) >= 16000


# ---------------------------------------------------------------------------- the skill


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    match = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.S)
    assert match, "SKILL.md must start with YAML front matter between --- lines"
    data = yaml.safe_load(match.group(1))
    assert isinstance(data, dict)
    return data, match.group(2)


def test_skill_front_matter_follows_the_agent_skills_format() -> None:
    meta, body = split_front_matter(SKILL.read_text(encoding="utf-8"))
    assert set(meta) <= {"name", "description", "license", "compatibility", "metadata",
                         "allowed-tools"}
    name = meta["name"]
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) and 1 <= len(name) <= 64
    assert name == SKILL_DIR.name
    description = meta["description"]
    assert isinstance(description, str) and 1 <= len(description) <= 1024
    assert "Use it for" in description and "Do not use" in description
    assert len(meta.get("compatibility", "")) <= 500
    metadata = meta.get("metadata", {})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    assert metadata.get("version") == massgen_mcp.__version__
    assert len(body.splitlines()) < 500


def skill_texts() -> dict[str, str]:
    files = [SKILL, *sorted((SKILL_DIR / "references").glob("*.md"))]
    return {p.relative_to(SKILL_DIR).as_posix(): p.read_text(encoding="utf-8") for p in files}


def test_skill_references_exist() -> None:
    text = SKILL.read_text(encoding="utf-8")
    linked = set(re.findall(r"`(references/[\w.-]+\.md)`", text))
    assert linked, "the skill points to its references"
    for rel in linked:
        assert (SKILL_DIR / rel).is_file(), rel


async def server_tools(tmp_path: Path) -> dict[str, dict[str, Any]]:
    app = App(tmp_path / "state", env=env_of({}, tmp_path), cwd=tmp_path)
    server, _ = build_server(app)
    async with Client(server) as client:
        return {t.name: t.input_schema for t in (await client.list_tools()).tools}


def example_calls(text: str, tools: set[str]) -> list[tuple[str, list[str]]]:
    """(tool, keyword names) for each tool call written in a code block or code span."""
    snippets = re.findall(r"```(?:python)?\n(.*?)```", text, re.S)
    snippets += re.findall(r"`([a-z_]+\([^`]*\))`", text)
    calls = []
    for snippet in snippets:
        try:
            tree = ast.parse(snippet)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in tools):
                calls.append((node.func.id, [k.arg for k in node.keywords if k.arg]))
    return calls


async def test_skill_tool_examples_use_real_tools_and_arguments(tmp_path: Path) -> None:
    tools = await server_tools(tmp_path)
    skill = SKILL.read_text(encoding="utf-8")
    for name in ("run_consensus", "plan", "checkpoint_init", "checkpoint", "get_run",
                 "cancel_run", "list_backends", "get_plan"):
        assert f"`{name}" in skill, f"SKILL.md does not mention the {name} tool"
    checked = 0
    for where, text in skill_texts().items():
        for tool, keywords in example_calls(text, set(tools)):
            schema = tools[tool]
            unknown = set(keywords) - set(schema.get("properties", {}))
            assert not unknown, f"{where}: {tool}() has no argument {sorted(unknown)}"
            if len(keywords) > 1:  # a full example gives every required argument
                missing = set(schema.get("required", [])) - set(keywords)
                assert not missing, f"{where}: {tool}() example misses {sorted(missing)}"
            checked += 1
    assert checked >= 10, f"only {checked} tool examples were found to check"


def test_skill_cli_examples_parse() -> None:
    commands = [argv for text in skill_texts().values()
                for argv in command_lines(text, markdown=True)]
    assert len(commands) >= 6
    assert {argv[0] for argv in commands if argv} >= {"run", "plan", "doctor", "setup"}
    for argv in commands:
        check_cli_parses(argv)


# ---------------------------------------------------------------------------- server.json


def server_json() -> dict[str, Any]:
    return json.loads(SERVER_JSON.read_text(encoding="utf-8"))


def test_server_json_is_valid_against_the_registry_schema() -> None:
    raw = SCHEMA.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == SCHEMA_SHA256, "the schema copy was edited"
    schema = json.loads(raw)
    data = server_json()
    assert data["$schema"] == SCHEMA_URL == schema["$id"]
    validator = jsonschema.Draft7Validator(
        schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in validator.iter_errors(data)]
    assert not errors, errors
    # The validator must be able to fail: the registry's own limits reject these.
    for broken in ({**data, "description": "x" * 101}, {**data, "name": "massgen-mcp"},
                   {**data, "packages": [{**data["packages"][0], "version": "latest"}]}):
        assert list(validator.iter_errors(broken))


def test_server_json_version_is_the_package_version() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data = server_json()
    version = pyproject["project"]["version"]
    assert data["version"] == massgen_mcp.__version__ == version
    assert [p["version"] for p in data["packages"]] == [version]
    assert re.fullmatch(r"\d+\.\d+\.\d+([.-]?[A-Za-z0-9.]+)?", version), "an exact version"


def test_server_json_package_is_the_pypi_stdio_server_with_optional_secret_keys() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data = server_json()
    assert re.fullmatch(r"io\.github\.[\w-]+/[\w.-]+", data["name"])
    owner = data["name"].split("/")[0].removeprefix("io.github.")
    assert data["repository"] == {"url": f"https://github.com/{owner}/massgen-mcp",
                                  "source": "github"}
    assert data["websiteUrl"].startswith("https://") and 1 <= len(data["title"]) <= 100
    (package,) = data["packages"]
    assert package["registryType"] == "pypi"
    assert package["identifier"] == pyproject["project"]["name"]
    assert package["transport"] == {"type": "stdio"}
    assert package["runtimeHint"] == "uvx"
    env = {v["name"]: v for v in package["environmentVariables"]}
    assert set(KEY_VARS) <= set(env)
    known_keys = {var for p in PROVIDERS.values() for var in p.key_env}
    for name, var in env.items():
        assert var["description"] and var["isRequired"] is False, name
        if name.endswith("_API_KEY"):
            assert name in known_keys and var["isSecret"] is True, name
    assert env["MASSGEN_MCP_HOME"]["isSecret"] is False


def test_readme_carries_the_registry_ownership_marker() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"mcp-name: {server_json()['name']}" in readme


# ---------------------------------------------------------------------------- CLI


@pytest.mark.parametrize("argv", [["--help"], ["serve", "--help"], ["run", "--help"],
                                  ["plan", "--help"], ["hook", "--help"],
                                  ["hook", "pre-tool-use", "--help"], ["setup", "--help"],
                                  ["doctor", "--help"]], ids=" ".join)
def test_help_of_every_command_exits_0(argv: list[str], capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code in (0, None)
    out = capsys.readouterr().out
    assert out.startswith("usage: massgen-mcp")
    assert " ".join(a for a in argv if a != "--help") in out.splitlines()[0]


def entry_point() -> list[str]:
    """The installed `massgen-mcp` script when there is one, else `python -m`."""
    script = Path(sys.executable).parent / "massgen-mcp"
    return [str(script)] if script.is_file() else CLI


def test_version_prints_the_package_version(tmp_path: Path) -> None:
    done = subprocess.run([*entry_point(), "--version"], capture_output=True, text=True,
                          timeout=30, cwd=tmp_path, env=clean_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"massgen-mcp {massgen_mcp.__version__}"


# ---------------------------------------------------------------------------- doctor


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


LOCAL_URL_VARS = [f"{p.name.upper()}_BASE_URL" for p in PROVIDERS.values() if p.local]


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """What a fresh shell has: no keys, a private HOME, every local model server moved to a
    closed port (so a server that happens to run on this machine cannot change the result)."""
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    env.update({var: dead for var in LOCAL_URL_VARS})
    env.update(extra)
    return env


def doctor(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "doctor", "--dir", str(tmp_path), *args],
                          capture_output=True, text=True, encoding="utf-8", timeout=60,
                          cwd=tmp_path, env=clean_env(tmp_path, **env))


def test_doctor_without_keys_exits_0_with_a_warning_and_says_what_to_set(tmp_path: Path) -> None:
    """No key yet is a normal state (sampling, local servers, keys later), not a broken
    install: the README's first command must not fail on it."""
    done = doctor(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    # the verdict first, in the command line's own syntax: what can run now
    lines = out.splitlines()
    assert lines[0].startswith("no team can run without naming one"), out
    assert lines[1].strip().endswith("run 'What is the capital of Australia?' --team demo")
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"):
        assert var in "\n".join(lines[:6])
    assert "models='" not in out and "team='" not in out
    # the providers without a key are one line, not one each
    (no_key,) = [ln for ln in lines if "no key for" in ln]
    assert "openai, claude, gemini" in no_key and not any(
        ln.split()[1:3] == ["openai", "no"] for ln in lines if ln.strip())
    assert "setup --client claude" in out
    assert "doctor" not in lines[-1]  # it never ends by telling the user to run doctor
    for name in ("frontier", "local", "checkpoint", "demo"):
        assert name in out.split("Bundled teams:", 1)[1].splitlines()[0]


def test_doctor_with_a_key_exits_0_and_never_prints_the_key(tmp_path: Path) -> None:
    key = FAKE_KEYS["OPENAI_API_KEY"]
    done = doctor(tmp_path, OPENAI_API_KEY=key)
    assert done.returncode == 0, done.stdout + done.stderr
    assert key not in done.stdout + done.stderr
    (line,) = [ln for ln in done.stdout.splitlines() if ln.strip().split()[1:2] == ["openai"]]
    assert line.lstrip().startswith("ok") and f"…{key[-4:]}" in line
    assert done.stdout.startswith("Ready: ") and "(auto: openai/gpt-5" in \
        done.stdout.splitlines()[0]

    as_json = doctor(tmp_path, "--json", OPENAI_API_KEY=key)
    assert as_json.returncode == 0
    assert key not in as_json.stdout + as_json.stderr
    report = json.loads(as_json.stdout)
    assert report["can_run"] is True
    openai = next(p for p in report["report"]["providers"] if p["provider"] == "openai")
    assert openai["key_present"] and openai["usable"]


class _Models(BaseHTTPRequestHandler):
    """A local OpenAI-compatible server as doctor sees it: GET /v1/models."""

    models = ("qwen3:8b", "llama3.1:8b")
    seen: list[str]

    def do_GET(self) -> None:
        self.seen.append(self.path)
        if self.path.rstrip("/") != "/v1/models":
            self.send_error(404)
            return
        body = json.dumps({"object": "list", "data": [
            {"id": m, "object": "model", "owned_by": "library"} for m in self.models]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass


@pytest.fixture
def local_model_server() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    handler = type("Handler", (_Models,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_doctor_finds_a_local_model_server(tmp_path: Path,
                                           local_model_server: tuple[str, list[str]]) -> None:
    url, seen = local_model_server
    done = doctor(tmp_path, OLLAMA_BASE_URL=url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "/v1/models" in seen, "doctor did not ask the server for its models"
    (line,) = [ln for ln in done.stdout.splitlines() if ln.strip().split()[1:2] == ["ollama"]]
    assert line.lstrip().startswith("ok") and "(2 models)" in line
    assert "(auto: ollama/qwen3:8b, ollama/llama3.1:8b" in done.stdout.splitlines()[0]

    report = json.loads(doctor(tmp_path, "--json", OLLAMA_BASE_URL=url).stdout)
    ollama = next(p for p in report["report"]["providers"] if p["provider"] == "ollama")
    assert ollama["usable"] and ollama["models"] == list(_Models.models)
    others = [p for p in report["report"]["providers"] if p["local"] and p is not ollama]
    assert others and not any(p["usable"] for p in others)


async def test_a_moved_local_server_is_reported_and_used_where_it_is(
        tmp_path: Path, local_model_server: tuple[str, list[str]]) -> None:
    from massgen_mcp.backends.availability import backends_report

    url, _ = local_model_server
    env = env_of({"OLLAMA_BASE_URL": url}, tmp_path)
    team = team_from_models(["ollama/qwen3:8b"], env)  # how the auto team is built
    report = await backends_report(env)
    ollama = next(p for p in report.providers if p.provider == "ollama")
    assert ollama.usable  # found it...
    assert ollama.endpoint == url  # ...but says it is elsewhere
    assert {a.base_url for a in team.agents} == {url}
