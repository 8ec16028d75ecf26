"""`massgen-mcp setup`: idempotent registration, hook entry and instructions block."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from massgen_mcp.cli.launch import launch_command
from massgen_mcp.cli.setup import GEMINI_TIMEOUT_MS, HOOK_MATCHER, MD_BEGIN, MD_END, run_setup
from massgen_mcp.errors import InputError

USER_SETTINGS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(pytest:*)"]},
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "my-linter-hook"}]}],
        "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "fmt"}]}]},
}
USER_TOML = 'model = "o3"\n\n[mcp_servers.other]\ncommand = "other-server"\n'


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file()}


def setup_all(project: Path, **kwargs: object) -> list[str]:
    kwargs.setdefault("command", ["massgen-mcp"])
    return run_setup(project, clients=["claude", "codex", "cursor"], hooks=True,
                     instructions="CLAUDE.md", **kwargs)  # type: ignore[arg-type]


def test_setup_twice_changes_nothing_and_keeps_user_content(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(USER_SETTINGS))
    (tmp_path / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"massgen": {"command": "old", "env": {"MASSGEN_MCP_HOME": "/s"}},
                        "other": {"command": "x"}}}))
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(USER_TOML)
    (tmp_path / "CLAUDE.md").write_text("# My project\n\nUse tabs.\n")

    changes = setup_all(tmp_path)
    assert sorted(changes) == sorted([
        "updated .mcp.json (mcpServers.massgen)",
        "updated .codex/config.toml ([mcp_servers.massgen])",
        "created .cursor/mcp.json (mcpServers.massgen)",
        "updated .claude/settings.json (PreToolUse hook and Bash sandbox)",
        "updated CLAUDE.md (checkpoint instructions)",
    ])
    after_first = snapshot(tmp_path)
    assert setup_all(tmp_path) == []
    assert snapshot(tmp_path) == after_first

    mcp = json.loads((tmp_path / ".mcp.json").read_text())
    assert mcp["mcpServers"]["massgen"] == {"command": "massgen-mcp", "args": [],
                                            "env": {"MASSGEN_MCP_HOME": "/s"}}
    assert mcp["mcpServers"]["other"] == {"command": "x"}
    cursor = json.loads((tmp_path / ".cursor" / "mcp.json").read_text())
    assert cursor["mcpServers"]["massgen"]["command"] == "massgen-mcp"

    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    # The user's rules are kept; the sandbox's deny rules for the file tools are added.
    assert settings["permissions"]["allow"] == USER_SETTINGS["permissions"]["allow"]
    assert "Read(~/.ssh/**)" in settings["permissions"]["deny"]
    assert settings["sandbox"]["enabled"] is True  # the OS sandbox comes with the hook
    assert settings["hooks"]["PostToolUse"] == USER_SETTINGS["hooks"]["PostToolUse"]
    pre = settings["hooks"]["PreToolUse"]
    assert pre[0] == USER_SETTINGS["hooks"]["PreToolUse"][0]
    assert pre[1] == {"matcher": HOOK_MATCHER, "hooks": [
        {"type": "command", "command": "massgen-mcp hook pre-tool-use", "timeout": 10}]}

    toml = tomllib.loads((tmp_path / ".codex" / "config.toml").read_text())
    assert toml["model"] == "o3" and toml["mcp_servers"]["other"]["command"] == "other-server"
    assert toml["mcp_servers"]["massgen"]["command"] == "massgen-mcp"
    assert toml["mcp_servers"]["massgen"]["tool_timeout_sec"] >= 600

    claude_md = (tmp_path / "CLAUDE.md").read_text()
    assert claude_md.startswith("# My project\n\nUse tabs.\n\n" + MD_BEGIN)
    assert claude_md.count(MD_BEGIN) == 1 and "checkpoint_init" in claude_md


def test_setup_in_an_empty_project_creates_files(tmp_path: Path) -> None:
    changes = run_setup(tmp_path, clients=["claude"], hooks=True, instructions="AGENTS.md",
                        command=["massgen-mcp"])
    assert changes == ["created .mcp.json (mcpServers.massgen)",
                       "created .claude/settings.json (PreToolUse hook and Bash sandbox)",
                       "created AGENTS.md (checkpoint instructions)"]
    assert (tmp_path / "AGENTS.md").read_text().startswith(MD_BEGIN)
    assert run_setup(tmp_path, clients=["claude"], hooks=True, instructions="AGENTS.md",
                     command=["massgen-mcp"]) == []


def test_changed_command_updates_in_place_never_duplicates(tmp_path: Path) -> None:
    setup_all(tmp_path)
    changes = setup_all(tmp_path, command=["uvx", "massgen-mcp"])
    assert len(changes) == 4  # every file but CLAUDE.md names the command
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    hooks = [h for e in settings["hooks"]["PreToolUse"] for h in e["hooks"]]
    assert [h["command"] for h in hooks] == ["uvx massgen-mcp hook pre-tool-use"]
    toml_text = (tmp_path / ".codex" / "config.toml").read_text()
    assert toml_text.count("[mcp_servers.massgen]") == 1
    assert tomllib.loads(toml_text)["mcp_servers"]["massgen"]["args"] == ["massgen-mcp"]


def test_edited_instructions_block_is_restored_between_user_text(tmp_path: Path) -> None:
    setup_all(tmp_path)
    path = tmp_path / "CLAUDE.md"
    text = path.read_text()
    start, end = text.index(MD_BEGIN), text.index(MD_END) + len(MD_END)
    path.write_text("Intro\n\n" + text[start:end].replace("checkpoint", "CHK") + "\n\nOutro\n")
    assert setup_all(tmp_path) == ["updated CLAUDE.md (checkpoint instructions)"]
    new = path.read_text()
    assert new.startswith("Intro\n\n" + MD_BEGIN) and new.endswith(MD_END + "\n\nOutro\n")
    assert "CHK" not in new


def test_malformed_json_is_not_overwritten_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    bad = tmp_path / ".claude" / "settings.json"
    bad.write_text('{"hooks": ')
    with pytest.raises(InputError, match=r"settings\.json is not valid JSON"):
        setup_all(tmp_path)
    assert bad.read_text() == '{"hooks": '
    assert snapshot(tmp_path) == {".claude/settings.json": '{"hooks": '}


def test_codex_table_outside_the_block_is_an_error(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    path = tmp_path / ".codex" / "config.toml"
    path.write_text('[mcp_servers.massgen]\ncommand = "mine"\n')
    with pytest.raises(InputError, match="without the massgen-mcp marker"):
        run_setup(tmp_path, clients=["codex"], hooks=False, instructions=None)
    assert path.read_text() == '[mcp_servers.massgen]\ncommand = "mine"\n'


@pytest.mark.parametrize("kwargs, message", [
    ({"clients": ["vscodium"]}, "unknown client 'vscodium'"),
    ({"instructions": "README.md"}, "instructions must be one of"),
])
def test_bad_arguments(tmp_path: Path, kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"clients": ["claude"], "hooks": False, "instructions": None}
    with pytest.raises(InputError, match=message):
        run_setup(tmp_path, **{**args, **kwargs})  # type: ignore[arg-type]


# ------------------------------------------------------------------ the command clients run

VENV_EXE = Path(sys.executable).parent / "massgen-mcp"
needs_script = pytest.mark.skipif(not VENV_EXE.is_file(), reason="massgen-mcp not installed")


@needs_script
def test_a_virtualenv_install_is_written_as_its_absolute_path(tmp_path: Path) -> None:
    """The venv's bin/ is on this PATH but not on a client's: the bare name would fail."""
    on_path = os.pathsep.join([str(VENV_EXE.parent), os.environ.get("PATH", "")])
    assert launch_command(path=on_path) == [str(VENV_EXE)]
    assert launch_command(path="/nonexistent") == [str(VENV_EXE)]
    run_setup(tmp_path, clients=["claude"], hooks=True, instructions=None)
    entry = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["massgen"]
    assert entry["command"] == str(VENV_EXE) and Path(entry["command"]).is_absolute()
    hooks = json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]
    (hook,) = [h for e in hooks["PreToolUse"] for h in e["hooks"]]
    assert hook["command"] == f"{VENV_EXE} hook pre-tool-use"


@needs_script
def test_a_name_on_a_shared_path_that_finds_this_program_stays_bare(tmp_path: Path) -> None:
    """Like `uv tool install` / pipx: ~/.local/bin/massgen-mcp links into the tool's venv."""
    shared = tmp_path / "local" / "bin"
    shared.mkdir(parents=True)
    (shared / "massgen-mcp").symlink_to(VENV_EXE)
    assert launch_command(path=str(shared)) == ["massgen-mcp"]
    other = tmp_path / "other" / "bin"
    other.mkdir(parents=True)
    (other / "massgen-mcp").write_text("#!/bin/sh\necho another program\n")
    (other / "massgen-mcp").chmod(0o755)
    assert launch_command(path=str(other)) == [str(VENV_EXE)]


def test_gemini_and_vscode_registrations(tmp_path: Path) -> None:
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "mcp.json").write_text(json.dumps(
        {"inputs": [{"id": "k"}], "servers": {"other": {"type": "http", "url": "http://x"}}}))
    changes = run_setup(tmp_path, clients=["gemini", "vscode"], hooks=False, instructions=None,
                        command=["/opt/mg/bin/massgen-mcp"])
    assert changes == ["created .gemini/settings.json (mcpServers.massgen)",
                       "updated .vscode/mcp.json (servers.massgen)"]
    gemini = json.loads((tmp_path / ".gemini" / "settings.json").read_text())
    assert gemini["mcpServers"]["massgen"] == {"command": "/opt/mg/bin/massgen-mcp", "args": [],
                                               "timeout": GEMINI_TIMEOUT_MS}
    vscode = json.loads((tmp_path / ".vscode" / "mcp.json").read_text())
    assert vscode["servers"]["massgen"] == {"type": "stdio", "command": "/opt/mg/bin/massgen-mcp",
                                            "args": []}
    assert vscode["servers"]["other"] == {"type": "http", "url": "http://x"}
    assert vscode["inputs"] == [{"id": "k"}]
    before = snapshot(tmp_path)
    assert run_setup(tmp_path, clients=["gemini", "vscode"], hooks=False, instructions=None,
                     command=["/opt/mg/bin/massgen-mcp"]) == []
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("theirs", [
    'mcp_servers.massgen.command = "mine"\n',                      # dotted keys
    'mcp_servers = { massgen = { command = "mine" } }\n',          # an inline table
    '[mcp_servers]\nmassgen = { command = "mine" }\n',             # inline table in a table
    '[mcp_servers."massgen"]\ncommand = "mine"\n',                 # a quoted key
], ids=["dotted", "inline", "inline-in-table", "quoted"])
def test_a_massgen_server_the_user_wrote_is_found_however_it_is_spelled(
        tmp_path: Path, theirs: str) -> None:
    (tmp_path / ".codex").mkdir()
    path = tmp_path / ".codex" / "config.toml"
    path.write_text(theirs)
    with pytest.raises(InputError, match=r"already defines the massgen server|inline table"):
        run_setup(tmp_path, clients=["codex"], hooks=False, instructions=None, command=["m"])
    assert path.read_text() == theirs


def test_a_file_from_an_older_setup_is_converted_and_the_users_text_kept(
        tmp_path: Path) -> None:
    """Older versions wrote the table between marker comments; the block becomes our marked
    table, every byte of the user's text around it stays."""
    from massgen_mcp.cli.setup import TOML_BEGIN, TOML_END

    (tmp_path / ".codex").mkdir()
    path = tmp_path / ".codex" / "config.toml"
    mine = '# mine\nmodel = "o3"  # kept\n'
    path.write_text(f'{mine}\n{TOML_BEGIN}\n[mcp_servers.massgen]\ncommand = "old"\n'
                    f'args = []\n{TOML_END}\n')
    run_setup(tmp_path, clients=["codex"], hooks=False, instructions=None, command=["m", "x"])
    text = path.read_text()
    assert text.startswith(mine) and TOML_BEGIN not in text and TOML_END not in text
    assert tomllib.loads(text)["mcp_servers"]["massgen"]["args"] == ["x"]
    assert run_setup(tmp_path, clients=["codex"], hooks=False, instructions=None,
                     command=["m", "x"]) == []


def test_codex_dotted_keys_and_inline_tables_of_other_servers(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    path = tmp_path / ".codex" / "config.toml"
    dotted = '# my settings\nmodel = "o3"  # the one I like\nmcp_servers.other.command = "x"\n'
    path.write_text(dotted)
    run_setup(tmp_path, clients=["codex"], hooks=False, instructions=None, command=["m"])
    text = path.read_text()
    assert text.startswith(dotted)  # every byte of theirs kept, comments included
    data = tomllib.loads(text)
    assert data["mcp_servers"]["other"] == {"command": "x"} and data["model"] == "o3"
    assert data["mcp_servers"]["massgen"]["command"] == "m"
    # A table the user adds after the block stays theirs; a second run changes no byte.
    path.write_text(text + '\n[profiles.fast]\nmodel = "o4-mini"\n')
    before = path.read_text()
    assert run_setup(tmp_path, clients=["codex"], hooks=False, instructions=None,
                     command=["m"]) == []
    assert path.read_text() == before

    inline = 'mcp_servers = { other = { command = "x" } }\n'
    path.write_text(inline)
    with pytest.raises(InputError, match="inline table"):
        run_setup(tmp_path, clients=["codex"], hooks=False, instructions=None, command=["m"])
    assert path.read_text() == inline
    path.write_text("model = \n")
    with pytest.raises(InputError, match="not valid TOML"):
        run_setup(tmp_path, clients=["codex"], hooks=False, instructions=None, command=["m"])


# ------------------------------------------------------------------ the Bash sandbox


def test_sandbox_is_merged_into_the_users_settings_once(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("MASSGEN_MCP_KEY_FILE", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    (tmp_path / ".claude").mkdir()
    mine = {"permissions": {"deny": ["Bash(curl:*)"]},
            "sandbox": {"filesystem": {"denyRead": ["~/private"]}, "excludedCommands": ["docker"]}}
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(mine))
    changes = run_setup(tmp_path, ["claude"], hooks=True, instructions=None,
                        command=["massgen-mcp"], sandbox=True, allow_domains=["pypi.org"])
    assert any("PreToolUse hook and Bash sandbox" in c for c in changes)
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    sandbox = settings["sandbox"]
    assert sandbox["enabled"] is True and sandbox["failIfUnavailable"] is True
    assert sandbox["allowUnsandboxedCommands"] is False
    assert sandbox["excludedCommands"] == ["docker"]  # the user's keys are kept
    assert sandbox["filesystem"]["denyRead"][:2] == ["~/private", "~/.config/massgen-mcp"]
    assert "~/.ssh" in sandbox["filesystem"]["denyRead"]
    assert "./.massgen/checkpoints" in sandbox["filesystem"]["denyWrite"]
    assert sandbox["network"] == {"allowedDomains": ["pypi.org"]}
    deny = settings["permissions"]["deny"]
    assert deny[0] == "Bash(curl:*)" and "Read(~/.config/massgen-mcp/**)" in deny
    assert "Read" in settings["hooks"]["PreToolUse"][0]["matcher"]
    before = snapshot(tmp_path)
    assert run_setup(tmp_path, ["claude"], hooks=True, instructions=None,
                     command=["massgen-mcp"], sandbox=True, allow_domains=["pypi.org"]) == []
    assert snapshot(tmp_path) == before


def test_the_hook_comes_with_the_sandbox_unless_told_otherwise(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]
                                                                ) -> None:
    """The hook alone is advisory: `setup --hooks` turns the OS sandbox on; `--no-sandbox`
    is the explicit way to leave Bash unconfined; `--sandbox` is accepted and changes
    nothing."""
    from massgen_mcp.cli.main import main

    base = ["setup", "--client", "claude", "--hooks", "--command", "massgen-mcp"]
    default, bare, alias = (tmp_path / n for n in ("default", "bare", "alias"))
    for d in (default, bare, alias):
        d.mkdir()
    assert main([*base, "--dir", str(default)]) == 0
    assert "PreToolUse hook and Bash sandbox" in capsys.readouterr().out
    assert main([*base, "--no-sandbox", "--dir", str(bare)]) == 0
    assert main([*base, "--sandbox", "--dir", str(alias)]) == 0
    read = [json.loads((d / ".claude" / "settings.json").read_text())
            for d in (default, bare, alias)]
    assert read[0]["sandbox"]["enabled"] is True and read[0]["sandbox"]["failIfUnavailable"]
    assert "sandbox" not in read[1] and "permissions" not in read[1]
    assert read[1]["hooks"] == read[0]["hooks"]
    assert read[2] == read[0]


def test_sandbox_is_claude_codes_and_a_bad_sandbox_section_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--client claude"):
        run_setup(tmp_path, ["codex"], hooks=False, instructions=None, command=["m"],
                  sandbox=True)
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text('{"sandbox": true}')
    with pytest.raises(InputError, match="'sandbox' must be an object"):
        run_setup(tmp_path, ["claude"], hooks=False, instructions=None, command=["m"],
                  sandbox=True)
    assert json.loads((tmp_path / ".claude" / "settings.json").read_text()) == {"sandbox": True}


def test_setup_sandbox_from_the_command_line(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from massgen_mcp.cli.main import main

    args = ["setup", "--client", "claude", "--sandbox", "--allow-domain", "pypi.org",
            "--command", "massgen-mcp", "--dir", str(tmp_path)]
    assert main(args) == 0
    assert "Bash sandbox" in capsys.readouterr().out
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    assert settings["sandbox"]["network"]["allowedDomains"] == ["pypi.org"]
    assert "hooks" not in settings  # --sandbox alone adds no hook
    assert main(args) == 0 and "nothing to change" in capsys.readouterr().out
