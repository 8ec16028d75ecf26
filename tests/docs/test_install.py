"""The README's set-up as a new user runs it: a clean checkout in a fresh HOME, the README's
install commands, the README's registration from a project of the reader's own, then the
registration `setup` wrote started by clients whose PATH lacks that venv (a plain MCP
client, and the real Claude Code CLI's `claude mcp list`), and the
`/massgen` skill installed by the `skills` installer from npm.

Slow (a real `pip install`, ~1 min): it is the one test of the first ten minutes. The
install reaches no package index: pip gets `--no-index` and a wheelhouse packed from this
test environment (`tests/wheelhouse.py`), and the build backend from the test extras.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
import yaml
from agents import answer_then_vote
from doc_pages import README, ROOT, bash_blocks, commands, lines_of, section
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_harness import write_team
from test_quickstart import first_run
from test_ship import closed_port
from tiers import require_node_bin
from wheelhouse import build_wheelhouse, offline_pip_env

BIN = ROOT / "tests" / "js" / "node_modules" / ".bin"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


GITHUB = "https://github.com/massgen-mcp/massgen-mcp"


def readme_install_commands() -> list[str]:
    """The two commands of the README's Install section (its first bash block): the clone
    into ~/massgen-mcp, then the venv and the install."""
    lines = lines_of(bash_blocks(section(README, "## Install"))[0])
    assert len(lines) == 2, f"the install is two commands, found {lines}"
    return lines


def readme_register_commands() -> list[str]:
    """The README's registration, run from the reader's own project."""
    return commands(section(README, "## Use it from your coding agent"))


def without_venv() -> dict[str, str]:
    """This machine's environment as a fresh shell has it: no active venv, no keys."""
    venv = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")
           and not k.startswith("MASSGEN_MCP") and k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and p != venv)
    return env


def client_env(home: Path, **extra: str) -> dict[str, str]:
    """What a client launched from the desktop passes on: a system PATH, its own HOME."""
    env = {"PATH": SYSTEM_PATH, "HOME": str(home), "LANG": "C.UTF-8",
           "OLLAMA_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1"}
    env.update(extra)
    return env


def test_readme_installs_into_a_clone_and_registers_from_the_readers_own_project() -> None:
    clone, install = readme_install_commands()
    assert clone == f"git clone {GITHUB} ~/massgen-mcp"
    assert install.startswith(
        "cd ~/massgen-mcp && python3 -m venv .venv && .venv/bin/pip install -e ")
    cd, setup, check = readme_register_commands()
    assert cd == "cd ~/your-project"  # never the massgen-mcp clone itself
    assert setup == "~/massgen-mcp/.venv/bin/massgen-mcp setup --client claude"
    assert check == "~/massgen-mcp/.venv/bin/massgen-mcp doctor"


def test_readme_test_command_is_the_one_ci_runs() -> None:
    """.ci/run ends with "exactly the README's test command"; the README shows it in both
    forms (a fresh shell, and an activated venv)."""
    dev = commands(section(README, "## Development"))
    assert ".venv/bin/ruff check . && .venv/bin/python -m pytest" in dev
    assert "ruff check . && python -m pytest" in dev
    ci = (ROOT / ".ci" / "run").read_text().rstrip().splitlines()
    assert ci[-1] == "ruff check . && python -m pytest"


@dataclass
class Installed:
    """A clean checkout installed the README's way in a fresh HOME, registered from a project."""

    home: Path
    checkout: Path
    project: Path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """A clean checkout of HEAD installed with the README's commands in a fresh HOME (the
    clone comes from this checkout instead of GitHub), then registered with Claude Code from a
    project of the reader's own, with the README's commands."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout")
    home = tmp_path_factory.mktemp("home")
    clone, install = readme_install_commands()
    env = without_venv()
    env["HOME"] = str(home)
    env.update(offline_pip_env(build_wheelhouse(tmp_path_factory.mktemp("wheelhouse"))))
    env["OPENAI_API_KEY"] = "k-readme-install-1234"  # doctor then has a team to report
    env["OLLAMA_BASE_URL"] = f"http://127.0.0.1:{closed_port()}/v1"
    for command in (clone.replace(GITHUB, f"--quiet --no-hardlinks {ROOT}"), install):
        done = subprocess.run(["bash", "-c", command], cwd=home, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    project = home / "your-project"
    project.mkdir()
    done = subprocess.run(["bash", "-c", " && ".join(readme_register_commands())], cwd=home,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"starts, \d+ tools", done.stdout), done.stdout  # doctor started it
    # the command to try next (its wording moves with the CLI's: `try:` / `Ready:`)
    assert re.search(r"(try|Ready): \S*massgen-mcp run [\"']", done.stdout), done.stdout
    checkout = home / "massgen-mcp"
    # setup wrote into the project, not the clone; the clone's .venv is ignored.
    assert (project / ".mcp.json").is_file()
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                            cwd=checkout, capture_output=True, text=True, check=True).stdout
    assert status == "", status
    return Installed(home, checkout, project)


def test_the_registration_starts_from_a_client_whose_path_lacks_the_venv(
        installed: Installed, tmp_path: Path) -> None:
    entry = json.loads((installed.project / ".mcp.json").read_text())["mcpServers"]["massgen"]
    exe = installed.checkout / ".venv" / "bin" / "massgen-mcp"
    assert entry["command"] == str(exe) and entry["args"] == []
    assert shutil.which("massgen-mcp", path=SYSTEM_PATH) is None or \
        Path(shutil.which("massgen-mcp", path=SYSTEM_PATH) or "").resolve() != exe.resolve()

    async def tools() -> list[str]:
        params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                       env=client_env(tmp_path), cwd=str(tmp_path))
        with anyio.fail_after(60):
            async with Client(params, mode="legacy") as c:
                return [t.name for t in (await c.list_tools()).tools]

    assert "run_consensus" in anyio.run(tools)


def test_the_installed_run_command_answers_on_a_team_this_machine_can_run(
        installed: Installed, provider, tmp_path: Path) -> None:
    provider.script("fresh1", answer_then_vote("Canberra", "agent1", final="Canberra."))
    provider.script("fresh2", answer_then_vote("Canberra too", "agent1", final="Canberra."))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "fresh1"),
                                                        ("b", "anthropic", "fresh2")])
    done = subprocess.run([str(installed.checkout / ".venv" / "bin" / "massgen-mcp"), "run",
                           "What is the capital of Australia?", "--team", str(team)],
                          cwd=tmp_path, env=client_env(tmp_path), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Canberra."


def test_the_readmes_first_run_works_in_the_fresh_install_with_no_key(
        installed: Installed) -> None:
    first_run(installed.home)


def claude_mcp_list(project: Path, home: Path) -> str:
    env = client_env(home, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
                     ANTHROPIC_API_KEY="k-not-used-1234", MCP_TIMEOUT="60000")
    done = subprocess.run([str(require_node_bin("claude")), "mcp", "list"], cwd=project, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def approve_project(project: Path, home: Path) -> None:
    """What answering Claude Code's two prompts records: the folder is trusted, and the
    project's `.mcp.json` server `massgen` is approved."""
    state = home / ".claude.json"
    data = json.loads(state.read_text()) if state.exists() else {}
    data.setdefault("projects", {}).setdefault(str(project), {})["hasTrustDialogAccepted"] = True
    state.write_text(json.dumps(data))
    local = project / ".claude" / "settings.local.json"
    local.parent.mkdir(exist_ok=True)
    local.write_text(json.dumps({"enabledMcpjsonServers": ["massgen"]}))


@pytest.mark.npm
def test_claude_code_health_check_on_the_readme_registration(installed: Installed,
                                                             tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(installed.project / ".mcp.json", project / ".mcp.json")
    home = tmp_path / "home"
    home.mkdir()
    assert "massgen: " in (pending := claude_mcp_list(project, home))
    assert "Pending approval" in pending  # the README's approval step is really needed
    approve_project(project, home)
    listed = claude_mcp_list(project, home)
    assert re.search(r"^massgen: .*massgen-mcp .*✔ Connected", listed, re.M), listed

    # What the old README registered, the bare name, fails from a client's PATH.
    bare = json.loads((project / ".mcp.json").read_text())
    bare["mcpServers"]["massgen"]["command"] = "massgen-mcp"
    (project / ".mcp.json").write_text(json.dumps(bare))
    listed = claude_mcp_list(project, home)
    assert re.search(r"^massgen: massgen-mcp .*✘ Failed to connect", listed, re.M), listed


@pytest.mark.npm
def test_the_skills_installer_installs_the_massgen_skill(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    env = client_env(home, DISABLE_TELEMETRY="1", DO_NOT_TRACK="1")
    env["PATH"] = f"{BIN}{os.pathsep}{SYSTEM_PATH}"
    done = subprocess.run([str(require_node_bin("skills")), "add", str(ROOT / "skills" / "massgen"),
                           "-a", "claude-code", "-a", "codex", "-y", "--copy"], cwd=project,
                          env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    source = sorted(p.relative_to(ROOT / "skills" / "massgen")
                    for p in (ROOT / "skills" / "massgen").rglob("*") if p.is_file())
    for target in (project / ".claude" / "skills" / "massgen",
                   project / ".agents" / "skills" / "massgen"):
        got = sorted(p.relative_to(target) for p in target.rglob("*") if p.is_file())
        assert got == source, target
        for rel in source:
            assert (target / rel).read_bytes() == (ROOT / "skills" / "massgen" / rel).read_bytes()
        front = (target / "SKILL.md").read_text().split("---\n")[1]
        assert yaml.safe_load(front)["name"] == "massgen"


def test_the_skills_compatibility_line_gives_install_commands_that_work() -> None:
    """The commands it names install from where the package really is (GitHub, not PyPI),
    and match the README's."""
    text = (ROOT / "skills" / "massgen" / "SKILL.md").read_text().split("---\n")[1]
    compat = " ".join(yaml.safe_load(text)["compatibility"].split())
    readme = README.read_text()
    assert 'pip install "git+https://github.com/massgen-mcp/massgen-mcp"' in compat
    assert "uvx --from git+https://github.com/massgen-mcp/massgen-mcp massgen-mcp" in compat
    assert 'pip install "git+https://github.com/massgen-mcp/massgen-mcp"' in readme
    assert 'uvx --from "git+https://github.com/massgen-mcp/massgen-mcp" massgen-mcp' in readme
    assert "pip install massgen-mcp" not in compat + readme
