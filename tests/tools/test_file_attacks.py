"""Attacks on the agents' file tools and on write-back: runaway regular expressions, protected
paths spelled every way (globs included), and VCS metadata smuggled into write-back."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from massgen_mcp.config.orchestration import ContextPath as TeamContextPath
from massgen_mcp.config.protected import is_protected, normalize, normalize_all
from massgen_mcp.coordination.result import RunResult, WinnerInfo
from massgen_mcp.messages import ToolCall
from massgen_mcp.runs.workspace import ContextPath, Workspaces
from massgen_mcp.tools.files import MAX_PATTERN_CHARS, READ, SEARCH, FileToolbox, roots_from

# ---------------------------------------------------------------- bounded regex search


@pytest.fixture
def haystack(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    # Lines built to make a backtracking engine take exponential time on these patterns.
    (root / "a.txt").write_text(("a" * 40 + "!\n") * 50 + "needle here\n")
    (root / "b.txt").write_text(("x" * 30 + "y\n") * 50)
    return root


def _box(root: Path, protected: list[str] | None = None) -> FileToolbox:
    roots, notes = roots_from([TeamContextPath(path=str(root), protected_paths=protected or [])])
    return FileToolbox(roots, notes)


async def _call(box: FileToolbox, name: str, **args: object) -> tuple[str, bool]:
    return await box.call(ToolCall("c1", name, dict(args)))


@pytest.mark.parametrize("pattern", [
    "(a+)+$", "(a|a)+$", "(a|aa)+$", "(a*)*b", "^(a+)+!x", "(x+x+)+z", "(.*a){20}$",
    "((a+)+)+c", "(\\w+\\s?)+$z"])
async def test_catastrophic_patterns_finish_and_the_loop_stays_responsive(
        haystack: Path, pattern: str) -> None:
    """Each of these patterns takes a backtracking engine (Python's `re`) minutes on these
    lines while it holds the GIL. The event loop must keep running while the search goes on:
    a ticker task counts loop turns, and the search must end with the loop having turned."""
    box = _box(haystack)
    ticks = 0
    done = anyio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        with anyio.fail_after(30):  # a backtracking engine would not finish at all
            text, err = await _call(box, SEARCH, pattern=pattern, regex=True)
        done.set()
    assert not err, text
    assert ticks > 0
    assert "no match" in text or "a.txt" in text or "b.txt" in text


async def test_regex_search_still_finds_what_it_should(haystack: Path) -> None:
    text, err = await _call(_box(haystack), SEARCH, pattern=r"need\w+\s+h(e|a)re$",
                            regex=True)
    assert not err and "a.txt:51: needle here" in text
    text, err = await _call(_box(haystack), SEARCH, pattern="(?i)NEEDLE", regex=True)
    assert not err and "a.txt:51:" in text


async def test_literal_search_treats_regex_characters_as_text(haystack: Path) -> None:
    (haystack / "c.txt").write_text("price (a+)+$ here\n")
    text, err = await _call(_box(haystack), SEARCH, pattern="(a+)+$")
    assert not err and "c.txt:1:" in text and "a.txt" not in text


@pytest.mark.parametrize(("pattern", "why"), [
    (r"(a)\1", "backreferences"), (r"(?=a)b", "lookaround"), (r"(?<!a)b", "lookaround"),
    ("a{5000}", "repetition"), ("((a{1000}){1000}){1000}", "repetition"), ("(", "invalid"),
    ("[z-a]", "invalid")])
async def test_patterns_the_engine_refuses_are_clear_tool_errors(
        haystack: Path, pattern: str, why: str) -> None:
    text, err = await _call(_box(haystack), SEARCH, pattern=pattern, regex=True)
    assert err
    assert "regular expression is invalid or not supported" in text and "RE2" in text
    assert why in text or why == "invalid"


async def test_patterns_too_large_for_memory_are_refused(haystack: Path) -> None:
    # Each piece is allowed on its own; together they exceed RE2's memory budget.
    pattern = "".join(f"(\\w{{1,1000}}x{i})?" for i in range(40))
    text, err = await _call(_box(haystack), SEARCH, pattern=pattern, regex=True)
    assert err and "not supported" in text


async def test_a_search_stops_at_its_time_budget_and_says_so(haystack: Path) -> None:
    box = _box(haystack)
    box.search_seconds = 0.0  # every line is past the budget: the stop path, deterministically
    text, err = await _call(box, SEARCH, pattern=".{1000}.{1000}.{1000}", regex=True)
    assert not err and "[stopped after 0 s" in text and "narrow path, glob or pattern" in text


async def test_very_long_lines_are_clipped_for_regex_only(haystack: Path) -> None:
    (haystack / "min.js").write_text("x" * 15_000 + "MARKER\n")
    box = _box(haystack)
    text, err = await _call(box, SEARCH, pattern="MARK(ER)", regex=True)
    assert not err and "min.js" not in text.split("[")[0] and "first part only" in text
    text, err = await _call(box, SEARCH, pattern="MARKER")
    assert not err and "min.js:1:" in text


@pytest.mark.parametrize("arg", ["pattern", "glob"])
async def test_huge_patterns_and_globs_are_refused(haystack: Path, arg: str) -> None:
    args: dict[str, object] = {"pattern": "x", arg: "a" * (MAX_PATTERN_CHARS + 1)}
    text, err = await _call(_box(haystack), SEARCH, **args)
    assert err and "limit is" in text


async def test_search_from_threads_does_not_serialize_on_the_gil(haystack: Path) -> None:
    """Four searches at once, each in a worker thread, all finish (RE2 never spins)."""
    box = _box(haystack)
    results: list[tuple[str, bool]] = []

    async def one() -> None:
        results.append(await _call(box, SEARCH, pattern="(a+)+$", regex=True))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(one)
    assert len(results) == 4 and not any(err for _, err in results)


# ---------------------------------------------------------------- protected paths


@pytest.mark.parametrize(("entry", "norm"), [
    ("./config/prod.yaml", "config/prod.yaml"), ("config//prod.yaml", "config/prod.yaml"),
    ("config\\prod.yaml", "config/prod.yaml"), ("config/prod.yaml/", "config/prod.yaml"),
    (" config/./sub/../prod.yaml ", "config/prod.yaml"), ("Config/Prod.YAML", "config/prod.yaml"),
    ("../outside", None), ("", None), ("/etc/passwd", None), (".", ".")])
def test_every_spelling_of_a_protected_path_is_one(entry: str, norm: str | None) -> None:
    assert normalize(entry, Path("/proj")) == norm


def test_absolute_entries_inside_the_root_are_made_relative() -> None:
    assert normalize_all(["/proj/a/b", "/other/x"], Path("/proj")) == ("a/b",)


@pytest.mark.parametrize(("rel", "patterns", "protected"), [
    ("poetry.lock", ["*.lock"], True), ("api/poetry.lock", ["*.lock"], True),
    ("api/poetry.LOCK", ["*.lock"], True), ("lockfile.txt", ["*.lock"], False),
    ("config/prod.yaml", ["config/*.yaml"], True), ("other/prod.yaml", ["config/*.yaml"], False),
    ("a/secrets/key.txt", ["secrets"], True), ("secrets", ["secrets"], True),
    ("secretsx/key.txt", ["secrets"], False), ("x/y.lock", ["**/*.lock"], True),
    ("y.lock", ["**/*.lock"], True), ("config/sub/z", ["config/*"], True),
    ("anything", ["."], True), (".git/config", [], True), ("sub/.git", [], True),
    ("sub/.GIT/hooks/pre-commit", [], True), (".gitignore", [], False),
    ("src/app.py", ["*.lock", "config/prod.yaml"], False)])
def test_protected_matching(rel: str, patterns: list[str], protected: bool) -> None:
    assert is_protected(rel, normalize_all(patterns)) is protected


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "api").mkdir(parents=True)
    (root / "config").mkdir()
    (root / "poetry.lock").write_text("top-lock-content\n")
    (root / "api" / "uv.lock").write_text("nested-lock-content\n")
    (root / "config" / "prod.yaml").write_text("prod-config-content\n")
    (root / "config" / "dev.yaml").write_text("dev-config-content\n")
    (root / "notes.txt").write_text("notes content\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("url = https://user:ghp_tok@github.com/x\n")
    os.symlink(root / "config" / "prod.yaml", root / "alias.txt")
    return root


@pytest.mark.parametrize("protected", [["*.lock", "./config/prod.yaml"],
                                       ["**/*.lock", "config\\prod.yaml"],
                                       ["*.LOCK", "config//prod.yaml/"]])
@pytest.mark.parametrize("path", ["poetry.lock", "api/uv.lock", "config/prod.yaml",
                                  "./config/prod.yaml", "config/../config/prod.yaml",
                                  "alias.txt", ".git/config"])
async def test_file_tools_protect_globs_and_every_spelling(
        project: Path, protected: list[str], path: str) -> None:
    box = _box(project, protected)
    text, err = await _call(box, READ, path=path)
    assert err and "protected" in text and "content" not in text
    hits, err = await _call(box, SEARCH, pattern="content")
    assert not err
    assert "lock-content" not in hits and "prod-config" not in hits and "ghp_" not in hits
    assert "dev-config-content" in hits and "notes content" in hits


@pytest.mark.parametrize("name", [".env", ".npmrc", "id_ed25519", "prod.tfstate",
                                  "deploy/.pypirc", "keys/server.pem"])
async def test_file_tools_never_show_secret_files(project: Path, name: str) -> None:
    target = project / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("secret-content-xyz\n")
    box = _box(project)  # nothing listed as protected: secrets are anyway
    text, err = await _call(box, READ, path=name)
    assert err and "protected" in text and "secret-content" not in text
    hits, err = await _call(box, SEARCH, pattern="secret-content")
    assert not err and "no match" in hits and f"{target}:" not in hits


# ---------------------------------------------------------------- write-back


def _winner(status: str = "completed") -> RunResult:
    return RunResult(run_id="r1", status=status,  # type: ignore[arg-type]
                     task="t", winner=WinnerInfo(agent_id="a", model="m", label="agent1.1",
                                                 votes=1))


def _workspaces(tmp_path: Path, project: Path, protected: list[str]) -> tuple[Workspaces, Path]:
    ws = Workspaces(tmp_path / "run", [ContextPath(project.resolve(), "write",
                                                   normalize_all(protected, project))])
    ws.prepare()
    return ws, ws.dir_for("a")


def test_write_back_honours_every_spelling_and_globs(tmp_path: Path, project: Path) -> None:
    ws, mine = _workspaces(tmp_path, project, ["./config/prod.yaml", "*.lock"])
    (mine / "config" / "prod.yaml").write_text("owned\n")
    (mine / "api" / "uv.lock").write_text("owned\n")
    (mine / "new.lock").write_text("owned\n")
    (mine / "notes.txt").write_text("edited\n")
    out = ws.finish(_winner())
    assert out is not None
    assert (project / "config" / "prod.yaml").read_text() == "prod-config-content\n"
    assert (project / "api" / "uv.lock").read_text() == "nested-lock-content\n"
    assert not (project / "new.lock").exists()
    assert (project / "notes.txt").read_text() == "edited\n"
    assert sorted(out.skipped) == ["api/uv.lock: protected", "config/prod.yaml: protected",
                                   "new.lock: protected"]


@pytest.mark.parametrize("where", [".git", "sub/.git", "api/.GIT", ".hg", "x/.svn"])
def test_write_back_never_copies_vcs_metadata(tmp_path: Path, project: Path,
                                              where: str) -> None:
    ws, mine = _workspaces(tmp_path, project, [])
    gitlink = mine / where
    gitlink.parent.mkdir(parents=True, exist_ok=True)
    gitlink.write_text("gitdir: /home/victim/other-repo/.git\n")  # a submodule's gitlink
    nested = mine / "vendor" / ".git"
    nested.mkdir(parents=True)
    (nested / "config").write_text("[core]\n\thooksPath = /tmp/evil\n")
    (mine / "notes.txt").write_text("edited\n")
    out = ws.finish(_winner())
    assert out is not None
    assert not (project / where).is_file()
    assert not (project / "vendor").exists()
    assert (project / ".git" / "config").read_text().startswith("url = ")
    assert out.applied == [str(project.resolve() / "notes.txt")]


def test_write_back_through_a_directory_symlink_into_a_protected_dir(
        tmp_path: Path, project: Path) -> None:
    os.symlink(project / "config", project / "cfg")
    ws, mine = _workspaces(tmp_path, project, ["config"])
    (mine / "cfg").mkdir()  # the seed has no symlinks: the agent makes a directory
    (mine / "cfg" / "prod.yaml").write_text("owned\n")
    out = ws.finish(_winner())
    assert out is not None
    assert (project / "config" / "prod.yaml").read_text() == "prod-config-content\n"
    assert out.skipped == ["cfg/prod.yaml: protected"]
