"""A first run with no key: the bundled demo team, what `run` suggests, hints that paste.

Every test runs the real `massgen-mcp` program in a subprocess, with the environment of a
fresh shell (no key, a private HOME, local model servers moved to a closed port) and a PATH
that does not contain the program, as after `pip install` into a virtual environment that
was never activated.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from cli_agents import cli_path
from mcp_harness import EXE
from test_ship import clean_env

BARE_PATH = "/usr/bin:/bin"


def cli(cwd: Path, *args: str, exe: list[str] | None = None, **env: str
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*(exe or [EXE]), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=clean_env(cwd, PATH=BARE_PATH, **env))


def test_the_demo_team_shows_a_whole_run_with_no_key_and_says_it_is_a_demo(tmp_path: Path):
    done = cli(tmp_path, "run", "Which queue should we use?", "--team", "demo")
    assert done.returncode == 0, done.stderr
    err = done.stderr
    # labelled a demo before it starts, and in the answer itself
    assert "massgen-mcp: demo: no model was asked" in err.split("started:")[0]
    assert done.stdout.startswith("(demo: no model was asked")
    assert "Which queue should we use?" in done.stdout
    # the whole flow: three answers, votes with reasons, one dissent, the final answer
    assert len(re.findall(r"^\[.*\] \w+ answered", err, re.M)) == 3
    assert "contrarian voted for contrarian" in err and "brief voted for careful" in err
    assert "careful wins" in err and "final answer presented" in err
    assert "— Dissent: contrarian (1 vote: contrarian)" in err
    assert "— Winner: careful (careful), with 2 of 3 votes cast (majority)" in err
    assert "— Watch: " in err
    # the record holds the votes' reasons
    (run_dir,) = (tmp_path / ".massgen" / "runs").iterdir()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    reasons = [e["reason"] for e in events if e.get("kind") == "vote"]
    assert len(reasons) == 3 and all(r.startswith("(demo: no model was asked)") for r in reasons)


def test_the_demo_answers_a_plan_too(tmp_path: Path) -> None:
    done = cli(tmp_path, "plan", "Ship the release", "--team", "demo", "--depth", "shallow")
    assert done.returncode == 0, done.stderr
    assert "demo: no model was asked" in done.stdout + done.stderr


def test_run_without_a_key_says_what_can_run_now_demo_first(tmp_path: Path) -> None:
    done = cli(tmp_path, "run", "Is 17 prime?")
    assert done.returncode == 2
    err = done.stderr
    assert "What can run now" in err
    demo = err.index("--team demo")
    assert demo < err.index("set a provider key")
    # no team whose keys are all missing, no local server that does not answer
    for never in ("--team frontier", "--team openrouter", "ollama/", "--team clis"):
        assert never not in err, err
    assert "sampling" not in err and "models=" not in err
    # the suggestion is the user's own command, ready to paste
    line = next(ln.strip() for ln in err.splitlines() if ln.strip().endswith("--team demo"))
    pasted = subprocess.run(line, shell=True, cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, env=clean_env(tmp_path, PATH=BARE_PATH))
    assert pasted.returncode == 0, pasted.stderr
    assert "Is 17 prime?" in pasted.stdout


@pytest.mark.npm
def test_run_suggests_the_logged_in_clis_after_the_demo(tmp_path: Path) -> None:
    """The real Claude Code CLI (the npm tier) with a login file in HOME: `--team clis`
    comes after the demo and before the keys."""
    claude = Path(cli_path("claude"))
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_text("{}")
    env = clean_env(home, PATH=f"{claude.parent}:{BARE_PATH}")
    done = subprocess.run([EXE, "run", "x"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 2
    err = done.stderr
    assert err.index("--team demo") < err.index("--team clis") < err.index("set a provider key")
    assert "(claude_code)" in err


def test_models_sampling_on_the_command_line_is_a_cli_error(tmp_path: Path) -> None:
    done = cli(tmp_path, "run", "x", "--models", "sampling")
    assert done.returncode == 2
    assert "--models sampling uses the model of the MCP client" in done.stderr
    assert "--team demo" in done.stderr
    assert "models=" not in done.stderr and "pass models" not in done.stderr


def test_the_footer_is_a_command_that_works_when_pasted(tmp_path: Path) -> None:
    """`massgen-mcp` is not on PATH: the footer names the program by the path it was
    started by, and that line, pasted into a shell, writes the report."""
    done = cli(tmp_path, "run", "x", "--team", "demo")
    assert done.returncode == 0, done.stderr
    watch = next(ln for ln in done.stderr.splitlines() if ln.startswith("— Watch: "))
    share = watch.split("share: ", 1)[1]
    assert share.startswith(shlex.quote(str(Path(EXE).absolute())) + " report run_")
    pasted = subprocess.run(share, shell=True, cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, env=clean_env(tmp_path, PATH=BARE_PATH))
    assert pasted.returncode == 0, pasted.stderr
    run_id = share.rsplit(" ", 1)[1]
    assert (tmp_path / f"{run_id}.html").is_file()


def test_hints_name_python_m_when_started_that_way_and_the_bare_name_when_on_path(
        tmp_path: Path) -> None:
    module = cli(tmp_path, "run", "x", "--team", "demo",
                 exe=[sys.executable, "-m", "massgen_mcp.cli"])
    watch = next(ln for ln in module.stderr.splitlines() if ln.startswith("— Watch: "))
    # the interpreter's console script exists in this install: that is the path named
    assert "massgen-mcp view run_" in watch and " view " in watch
    on_path = subprocess.run([EXE, "run", "x", "--team", "demo"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120,
                             env=clean_env(tmp_path, PATH=f"{Path(EXE).parent}{os.pathsep}"
                                                          f"{BARE_PATH}"))
    watch = next(ln for ln in on_path.stderr.splitlines() if ln.startswith("— Watch: "))
    assert watch.startswith("— Watch: massgen-mcp view run_"), watch
