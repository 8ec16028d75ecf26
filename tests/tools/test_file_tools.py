"""Read-only file tools over context_paths: what they show, and what they refuse."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from agents import has_answered, presenting
from helpers import make_team, run_team
from scripted_provider import Call, Reply, ScriptRequest, ToolCalls, answer, vote

from massgen_mcp.config.env import Environment
from massgen_mcp.config.load import team_from_data
from massgen_mcp.config.orchestration import ContextPath
from massgen_mcp.messages import ToolCall
from massgen_mcp.tools.files import LIST, READ, SEARCH, FileToolbox, roots_from


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return 'queue'\n")
    (root / "README.md").write_text("# Project\nUses a queue.\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "token.txt").write_text("queue-token-123\n")
    (root / ".env").write_text("API=queue-secret\n")
    (root / "blob.bin").write_bytes(b"\x00\x01queue")
    outside = tmp_path / "outside.txt"
    outside.write_text("queue outside\n")
    os.symlink(outside, root / "link.txt")
    os.symlink(tmp_path, root / "up")
    return root


def _box(root: Path) -> FileToolbox:
    roots, notes = roots_from([ContextPath(path=str(root),
                                           protected_paths=["secrets", ".env"])])
    return FileToolbox(roots, notes)


async def _call(box: FileToolbox, name: str, **args: object) -> tuple[str, bool]:
    return await box.call(ToolCall("c1", name, dict(args)))


async def test_list_read_and_search_inside(tree: Path) -> None:
    box = _box(tree)
    assert [t.name for t in box.tools] == [LIST, READ, SEARCH]
    listing, err = await _call(box, LIST)
    assert not err and "src/" in listing and "README.md" in listing
    assert "secrets" not in listing and ".env" not in listing  # protected: not even listed
    text, err = await _call(box, READ, path="src/app.py")
    assert not err and "     2\t    return 'queue'" in text
    text, err = await _call(box, READ, path=str(tree / "README.md"), offset=2, limit=1)
    assert not err and "Uses a queue." in text and "# Project" not in text
    hits, err = await _call(box, SEARCH, pattern="queue")
    assert not err
    assert f"{tree / 'src' / 'app.py'}:2:" in hits and f"{tree / 'README.md'}:2:" in hits
    assert "token" not in hits and "secret" not in hits and "outside" not in hits
    assert "blob.bin" not in hits  # binary files are skipped


@pytest.mark.parametrize("path", ["../outside.txt", "link.txt", "up/outside.txt", "/etc/passwd",
                                  "src/../../outside.txt"])
async def test_paths_outside_are_refused_symlinks_included(tree: Path, path: str) -> None:
    text, err = await _call(_box(tree), READ, path=path)
    assert err and "outside the readable paths" in text
    assert "queue outside" not in text


@pytest.mark.parametrize("path", ["secrets/token.txt", ".env", "secrets"])
async def test_protected_paths_are_out_of_reach(tree: Path, path: str) -> None:
    box = _box(tree)
    for tool in (READ, LIST):
        text, err = await _call(box, tool, path=path)
        assert err and "protected" in text and "queue-" not in text
    text, err = await _call(box, SEARCH, pattern="queue", path=path)
    assert err and "protected" in text


@pytest.mark.parametrize(("args", "problem"), [
    ({"path": "blob.bin"}, "binary"), ({"path": "src"}, "is a directory"),
    ({"path": "nope.txt"}, "does not exist"), ({"path": 3}, "must be a string"),
    ({"path": "README.md", "offset": 0}, "positive integer"), ({}, "give a path")])
async def test_bad_reads_are_tool_errors(tree: Path, args: dict, problem: str) -> None:
    text, err = await _call(_box(tree), READ, **args)
    assert err and problem in text


async def test_loops_and_dangling_links_do_not_break_the_tools(tree: Path) -> None:
    os.symlink(tree / "loop", tree / "loop")
    os.symlink(tree / "gone.txt", tree / "dangling.txt")
    box = _box(tree)
    listing, err = await _call(box, LIST)
    assert not err and "README.md" in listing and "dangling.txt" not in listing
    hits, err = await _call(box, SEARCH, pattern="Uses a queue")
    assert not err and "README.md:2:" in hits
    text, err = await _call(box, READ, path="loop")
    assert err and "queue" not in text


async def test_bad_search_pattern_is_a_tool_error(tree: Path) -> None:
    text, err = await _call(_box(tree), SEARCH, pattern="(", regex=True)
    assert err and "regular expression is invalid" in text


def test_missing_and_write_context_paths_are_noted(tmp_path: Path) -> None:
    roots, notes = roots_from([ContextPath(path=str(tmp_path / "gone")),
                               ContextPath(path=str(tmp_path), permission="write")])
    assert [r.path for r in roots] == [tmp_path.resolve()]
    assert any("does not exist" in n for n in notes)
    assert any("served read-only" in n for n in notes)


def reads_then_answers(req: ScriptRequest) -> Reply:
    if presenting(req):
        return answer("FINAL")
    if has_answered(req):
        return vote("agent1")
    if not req.tool_results:
        return ToolCalls([Call(READ, {"path": "src/app.py"})])
    return answer("read: " + req.tool_results[-1]["content"].splitlines()[-1])


async def test_agents_get_the_file_tools_in_a_run(provider, tree: Path, tmp_path: Path) -> None:
    provider.script("reader", reads_then_answers)
    base = make_team(provider, [("a", "openai", "reader")])
    data = {"agents": [{"id": "a", "backend": {**base.agents[0].backend.model_dump(
        exclude_none=True), "api_key": "test-key"}}],
        "orchestrator": {"context_paths": [{"path": str(tree), "permission": "read",
                                            "protected_paths": ["secrets"]}]}}
    team = team_from_data(data, "t.yaml", Environment({}))
    result = await run_team(team, tmp_path)
    assert result.status == "completed"
    first = provider.requests_for("reader")[0]
    assert {READ, LIST, SEARCH} <= set(first.tool_names)
    assert result.answers[0].text == "read: " + "     2\t    return 'queue'"
