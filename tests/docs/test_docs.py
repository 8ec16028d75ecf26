"""The documentation: a README a newcomer reads in minutes, a docs site that builds without a
warning, and generated reference pages that say what the code says.

The reference pages (docs/reference/) are written by `docs/gen_reference.py` from the
server's own tool schemas, the team file's pydantic models and the CLI's argument parser; a
committed page that differs from a fresh generation fails here, as `tests/server/test_startup.py`
does for the tool catalog.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from doc_pages import DOCS, README, ROOT, commands, section
from tiers import require

REGENERATE = "python docs/gen_reference.py"


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_a_newcomers_page() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move the detail to docs/"
    headings = [ln for ln in lines if ln.startswith("## ")]
    assert headings[:4] == ["## Install", "## A first run, with no key",
                            "## Use it from your coding agent", "## Your first real team"]


@pytest.mark.parametrize("page", ["tools.md", "team-file.md", "cli.md"])
def test_the_reference_pages_are_a_fresh_generation(page: str) -> None:
    fresh = generator().PAGES[page]()
    committed = (DOCS / "reference" / page).read_text(encoding="utf-8")
    assert committed == fresh, f"docs/reference/{page} is stale: {REGENERATE}"


def test_the_tools_reference_lists_every_tool_the_server_lists() -> None:
    from massgen_mcp.server.catalog import load

    listed = load()
    assert listed is not None
    page = (DOCS / "reference" / "tools.md").read_text(encoding="utf-8")
    for tool in listed["tools"]:
        assert f"\n## `{tool['name']}`\n" in page
        for argument in tool["inputSchema"].get("properties", {}):
            assert f"| `{argument}`" in page


def test_the_team_file_reference_covers_every_field_of_the_models() -> None:
    from massgen_mcp.config.orchestration import ContextPath, OrchestratorConfig
    from massgen_mcp.config.team import AgentConfig, BackendConfig, MCPServerConfig, TeamConfig

    page = (DOCS / "reference" / "team-file.md").read_text(encoding="utf-8")
    for model in (TeamConfig, AgentConfig, BackendConfig, MCPServerConfig, OrchestratorConfig,
                  ContextPath):
        part = section(DOCS / "reference" / "team-file.md", f"## {model.__name__}")
        for name, field in model.model_fields.items():
            assert f"| `{field.alias or name}` |" in part, (model.__name__, name)
    assert "`max_new_answers_per_agent` | integer or null | `3` | >= 1, <= 100" in page


def test_every_link_from_the_readme_reaches_a_page() -> None:
    """The README's relative links (GitHub renders them) point at files that exist."""
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\((docs/[^)#\s]+)", text)
    assert targets, "the README links to the docs pages"
    for target in targets:
        assert (ROOT / target).is_file(), target


@pytest.mark.docs
def test_the_docs_site_builds_strict(tmp_path: Path) -> None:
    """`mkdocs build --strict`: a broken link or anchor, or a page left out of the navigation,
    fails (docs/_incoming/, other work's drafts, is left out of the build)."""
    require("docs", importlib.util.find_spec("mkdocs") is not None
            and importlib.util.find_spec("material") is not None, "mkdocs-material is missing")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    built = tmp_path / "site"
    for page in ("getting-started", "clients", "operators", "guard", "reference/tools"):
        assert (built / page / "index.html").is_file(), page
    assert not (built / "_incoming").exists()


PAGES_WITH_COMMANDS = [README, *(DOCS / f"{name}.md" for name in (
    "getting-started", "cli", "clients", "operators", "guard", "eval", "coding-agents",
    "development"))]


def massgen_commands(page: Path) -> list[list[str]]:
    """Each `massgen-mcp ...` command of a page's bash blocks, as the argv after the program
    (environment assignments before it, `&&`-joined neighbours and `[optional]` parts split
    off; a shell variable stands for a number, which every option taking one accepts)."""
    found = []
    for line in commands(page.read_text(encoding="utf-8")):
        for part in line.split("&&"):
            part = re.sub(r"\[[^\]]*\]", "", part.strip().rstrip("&"))
            words = ["1" if w.startswith("$") else w for w in shlex.split(part, comments=True)]
            ends = [i for i, w in enumerate(words) if w in (">", ">>", "|", ";")]
            words = words[:ends[0]] if ends else words
            while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
                words = words[1:]
            if words and words[0].endswith("massgen-mcp") and words[0] != "npx":
                found.append(words[1:])
    return found


@pytest.mark.parametrize("page", PAGES_WITH_COMMANDS, ids=lambda p: p.name)
def test_every_massgen_command_a_page_shows_parses(page: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The options a page shows are options the CLI has (a renamed flag breaks the page)."""
    from massgen_mcp.cli.main import build_parser

    shown = massgen_commands(page)
    for argv in shown:
        try:
            build_parser().parse_args(argv)
        except SystemExit as exit:
            assert exit.code == 0, f"{page.name}: massgen-mcp {shlex.join(argv)}: " + \
                capsys.readouterr().err
    if page in (README, DOCS / "getting-started.md", DOCS / "cli.md"):
        assert shown, page.name
