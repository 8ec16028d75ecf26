"""What makes the server start fast changes nothing a client or a user sees.

The tool catalog (server/catalog.py): `tools/list` before the tools are built is what the
SDK generates from the real registration, and the tools it lists work. The CLI's fast path
(`serve_args`): a plain server start parses as the full parser parses it.

The server answers `tools/list` from the shipped `catalog.json` and builds its tools at the
first call (start-up time, bench/startup.py). These tests hold the file to the real tools: a
change to a tool, its arguments or a model in its result fails here until the file is
regenerated.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_harness import memory_client
from pydantic import BaseModel

from massgen_mcp.app import App
from massgen_mcp.cli.main import build_parser, serve_args
from massgen_mcp.config.env import Environment
from massgen_mcp.server import build_server, catalog, generate_catalog

REGENERATE = "python -m massgen_mcp.server.write_catalog"


def wire(items: Sequence[BaseModel]) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in items]


async def test_the_shipped_catalog_is_what_the_real_tools_generate() -> None:
    shipped = json.loads(catalog.CATALOG.read_text(encoding="utf-8"))
    assert shipped["versions"] == catalog.versions(), (
        f"catalog.json was generated with other pydantic / MCP SDK versions: {REGENERATE}")
    fresh = await generate_catalog()
    assert {p: shipped[p] for p in catalog.PARTS} == fresh, f"catalog.json is stale: {REGENERATE}"
    assert catalog.CATALOG.read_text(encoding="utf-8") == catalog.render(fresh), (
        f"catalog.json was edited by hand: {REGENERATE}")
    assert [t["name"] for t in fresh["tools"]][:2] == ["run_consensus", "get_run"]
    assert fresh["resourceTemplates"] and fresh["prompts"]


def _app(tmp_path: Path) -> App:
    return App(tmp_path / ".massgen", env=Environment({}, dotenv_dir=tmp_path), cwd=tmp_path)


async def _lists(client: Client) -> str:
    """Everything a client lists, as the wire has it."""
    return json.dumps({
        "tools": wire((await client.list_tools()).tools),
        "resources": wire((await client.list_resources()).resources),
        "templates": wire((await client.list_resource_templates()).resource_templates),
        "prompts": wire((await client.list_prompts()).prompts)})


async def test_listed_from_the_catalog_as_the_sdk_lists_the_built_ones(tmp_path: Path) -> None:
    """Over a real client, in both protocol eras: the same entries, byte for byte, before
    and after the tools, templates and prompts are built; each part is built by the first
    request that needs it, and only then."""
    for mode in ("legacy", "auto"):
        lazy, _ = build_server(_app(tmp_path))
        eager, _ = build_server(_app(tmp_path), catalog_tools=False)
        tools, templates, prompts = (lazy._tool_manager, lazy._resource_manager,
                                     lazy._prompt_manager)
        assert isinstance(tools, catalog.LazyTools)
        assert isinstance(templates, catalog.LazyTemplates)
        assert isinstance(prompts, catalog.LazyPrompts)
        assert not isinstance(eager._tool_manager, catalog.LazyTools)
        async with Client(eager, mode=mode) as client:
            expected = await _lists(client)
        async with Client(lazy, mode=mode) as client:
            assert await _lists(client) == expected
            index = await client.read_resource("massgen://runs")  # static: builds nothing
            assert json.loads(index.contents[0].text) == {"runs": []}  # type: ignore[union-attr]
            assert not (tools.built or templates.built or prompts.built)
            called = await client.call_tool("list_runs", {"limit": 5})
            assert tools.built and not (templates.built or prompts.built)
            prompt = await client.get_prompt("plan", {"goal": "ship it"})
            assert prompts.built and not templates.built
            with pytest.raises(MCPError, match="run_nope"):  # the template's own answer
                await client.read_resource("massgen://runs/run_nope/answer")
            assert templates.built
            assert await _lists(client) == expected
        assert not called.is_error and called.structured_content == {"runs": []}
        assert "ship it" in str(prompt.messages[0].content)


async def test_a_listed_tool_validates_its_arguments_when_called_first(tmp_path: Path) -> None:
    """The first call builds the tools, then is validated and run as with tools built at
    start: a bad argument is the SDK's validation error, a good call its result."""
    async with memory_client(tmp_path) as client:
        bad = await client.call_tool("list_runs", {"limit": 0})
        assert bad.is_error and "limit" in str(bad.content)
        unknown = await client.call_tool("get_run", {"run_id": "run_nope"})
        assert unknown.is_error and "run_nope" in str(unknown.content)


def test_a_catalog_from_other_versions_is_not_used(tmp_path: Path) -> None:
    """Another pydantic or SDK may generate other schemas: then the tools are built at start."""
    data = json.loads(catalog.CATALOG.read_text(encoding="utf-8"))
    data["versions"] = {**data["versions"], "pydantic": "0.0.1"}
    other = tmp_path / "catalog.json"
    other.write_text(json.dumps(data))
    assert catalog.load(other) is None
    assert catalog.load(tmp_path / "missing.json") is None
    (tmp_path / "broken.json").write_text("{")
    assert catalog.load(tmp_path / "broken.json") is None
    assert catalog.load() == {p: data[p] for p in catalog.PARTS}


@pytest.mark.parametrize("argv", [
    [], ["--team", "review", "--transport", "streamable-http", "--port", "9000"],
    ["--team-dir", "a", "--team-dir", "b", "--allow-team-path"],
    ["--allow-team-path", "full", "--log-level", "debug", "--allow-cli-agents"],
    ["--checkpoint-team", "x", "--checkpoint-approval", "unanimous", "--state-dir", "s"],
])
def test_server_options_parse_as_the_full_parser_parses_them(argv: list[str]) -> None:
    fast = serve_args(argv)
    assert fast is not None
    assert vars(fast) == vars(build_parser().parse_args(argv))


@pytest.mark.parametrize("argv", [
    ["serve"], ["serve", "--port", "1"], ["--team", "x", "serve"], ["-h"], ["--help"],
    ["--version"], ["--transport", "bogus"], ["--port", "x"], ["--team"], ["run", "task"],
    ["hook", "pre-tool-use"], ["--no-such-option"],
])
def test_anything_else_goes_to_the_full_parser(argv: list[str]) -> None:
    """Subcommands, help and errors: the full parser answers (and words the error)."""
    assert serve_args(argv) is None


def test_the_sdk_version_is_the_installed_one() -> None:
    """The catalog's fast lookup (the dist-info next to the SDK) agrees with importlib."""
    from importlib.metadata import version

    assert catalog.versions()["mcp"] == version("mcp")


def test_a_build_that_fails_leaves_the_listing_and_is_tried_again() -> None:
    tries: list[int] = []

    def broken() -> None:
        tries.append(1)
        raise RuntimeError("the tools could not be built")

    listed = catalog.load()
    assert listed is not None
    tools = catalog.LazyTools(listed["tools"], broken)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="could not be built"):
            tools.get_tool("run_consensus")
        assert not tools.built
        assert [t.name for t in tools.list_tools()] == [t["name"] for t in listed["tools"]]
    assert len(tries) == 2


RUN_ONLY = ("massgen_mcp.runs.engine", "massgen_mcp.coordination.orchestrator",
            "massgen_mcp.coordination.result", "massgen_mcp.config.team",
            "massgen_mcp.config.orchestration", "massgen_mcp.config.choose",
            "massgen_mcp.config.trust", "massgen_mcp.runs.quota", "massgen_mcp.inputs",
            "massgen_mcp.server.tools", "massgen_mcp.server.mode_tools", "openai", "anthropic",
            "google.genai", "yaml")
LIST_ONLY = f"""
import sys, tempfile, anyio
from pathlib import Path
from mcp import Client
from massgen_mcp.app import App
from massgen_mcp.server import build_server

async def main():
    with tempfile.TemporaryDirectory() as d:
        app = App(Path(d), cwd=Path(d))
        app.keep_cli_standbys(6)
        mcp, _ = build_server(app)
        async with Client(mcp) as client:
            assert len((await client.list_tools()).tools) >= 10
            await client.list_resource_templates()
            await client.list_prompts()
            await client.list_resources()
            app.shut_down("the test is over")
anyio.run(main)
print(",".join(m for m in {RUN_ONLY!r} if m in sys.modules))
"""


def test_a_server_that_only_lists_imports_nothing_a_run_needs(tmp_path: Path) -> None:
    """Start-up contract (bench/startup.py measures the time): the lists and a shut-down
    load no engine, orchestrator, result or team model, team choice, team policy, quota,
    input reader, tool module, provider SDK or PyYAML."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", LIST_ONLY], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_what_the_app_was_told_before_its_engine_existed_applies_to_it(tmp_path: Path) -> None:
    app = _app(tmp_path)
    app.keep_cli_standbys(3)
    app.shut_down("stopping")
    engine = app.engine  # made now, at first use
    assert engine.pool.standbys.size == 3
    assert engine.runner.shutdown_reason == "stopping"
    assert app.state == engine.state == tmp_path / ".massgen"
