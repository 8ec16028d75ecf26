"""The held-out corpus: the real hook process, run the way Claude Code runs it.

`tests/data/hook_corpus.jsonl` holds dangerous tool inputs (`"expect": "gate"`: the hook
must answer deny or ask) and everyday ones (`"expect": "allow"`: no opinion, or allow), in
classes that follow the adversarial review of issue 20. It was written before the rules it
exercises, so its forms are not the ones the rules were designed around. Each entry is one
subprocess: event JSON on stdin, `CLAUDE_PROJECT_DIR` set, no plan active.

Placeholders in tool inputs: `{P}` the project, `{H}` the home directory, `{K}` the guard's
key file, `{T}` the operator's private temp dir (`$TMPDIR` here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

CORPUS = Path(__file__).parents[1] / "data" / "hook_corpus.jsonl"
ENTRIES: list[dict[str, Any]] = [json.loads(line) for line in
                                 CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
PASSTHROUGH = ("PATH", "LANG", "LC_ALL", "PYTHONPATH", "SYSTEMROOT")


class Sandbox:
    """A home, a project with everyday content, and a private temp dir, all under tmp."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.project = root / "proj"
        self.tmp = root / "private-tmp"
        self.key = self.home / ".config" / "massgen-mcp" / "plan.key"
        for d in (self.home / ".ssh", self.key.parent, self.tmp, self.project / ".git",
                  self.project / ".claude", self.project / "src", self.project / "tests",
                  self.project / "subdir", self.project / "config", self.project / "docs",
                  self.project / "build", self.project / "dist", self.project / "node_modules",
                  self.project / ".pytest_cache"):
            d.mkdir(parents=True, exist_ok=True)
        files = {
            self.home / ".bashrc": "# rc\n",
            self.home / ".ssh" / "id_rsa": "PRIVATE\n",
            self.key: "k" * 64,
            self.project / ".git" / "HEAD": "ref: refs/heads/feature/login\n",
            self.project / ".git" / "config": '[remote "origin"]\n\turl = https://x.example/r\n',
            self.project / ".claude" / "settings.json": "{}\n",
            self.project / ".env": "SECRET=1\n",
            self.project / ".env.example": "SECRET=\n",
            self.project / "config" / ".env.production": "SECRET=2\n",
            self.project / "README.md": "# proj\n",
            self.project / "script.py": "print('hi')\n",
            self.project / "build.sh": "echo build\n",
            self.project / "src" / "app.py": "x = 1\n",
            self.project / "tests" / "test_app.py": "def test(): pass\n",
            self.project / "subdir" / "notes.txt": "n\n",
            self.project / "notes.txt": "n\n",
            self.project / "package.json": "{}\n",
            self.project / "Makefile": "all:\n\ttrue\n",
        }
        for path, text in files.items():
            path.write_text(text, encoding="utf-8")
        # Symlinks that already point out of the project.
        (self.project / "docs" / "latest").symlink_to("/etc")
        (self.project / "out.log").symlink_to(self.home / ".bashrc")

    def fill(self, value: Any) -> Any:
        if isinstance(value, str):
            return (value.replace("{P}", str(self.project)).replace("{H}", str(self.home))
                    .replace("{K}", str(self.key)).replace("{T}", str(self.tmp)))
        if isinstance(value, list):
            return [self.fill(v) for v in value]
        if isinstance(value, dict):
            return {k: self.fill(v) for k, v in value.items()}
        return value

    def env(self) -> dict[str, str]:
        env = {k: os.environ[k] for k in PASSTHROUGH if k in os.environ}
        env.update(HOME=str(self.home), CLAUDE_PROJECT_DIR=str(self.project),
                   MASSGEN_MCP_KEY_FILE=str(self.key), TMPDIR=str(self.tmp))
        return env


def run_entry(box: Sandbox, entry: dict[str, Any]) -> str:
    """The hook's verdict for one corpus entry: deny, ask, allow, or none (no opinion)."""
    event = {"session_id": "s1", "transcript_path": str(box.project / "t.jsonl"),
             "cwd": str(box.project), "hook_event_name": "PreToolUse",
             "tool_name": entry["tool"], "tool_input": box.fill(entry["input"]),
             "tool_use_id": "toolu_1"}
    proc = subprocess.run([sys.executable, "-m", "massgen_mcp.hook.main", "pre-tool-use"],
                          input=json.dumps(event), capture_output=True, text=True, timeout=60,
                          env=box.env(), cwd=box.project)
    if not proc.stdout.strip():
        return "none"
    out = json.loads(proc.stdout)
    return str(out["hookSpecificOutput"]["permissionDecision"])


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Every entry's verdict, four hook processes at a time (each is independent)."""
    box = Sandbox(tmp_path_factory.mktemp("corpus"))
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda entry: run_entry(box, entry), ENTRIES))


def test_the_corpus_is_big_enough() -> None:
    gate = [e for e in ENTRIES if e["expect"] == "gate"]
    allow = [e for e in ENTRIES if e["expect"] == "allow"]
    assert len(gate) >= 120 and len(allow) >= 80
    assert {e["tool"] for e in gate} >= {"Bash", "Write", "Edit", "Read"}
    assert any(e["tool"].startswith("mcp__") for e in gate)


def _id(entry: dict[str, Any]) -> str:
    return f"{entry['class']}:{entry['tool']}:{json.dumps(entry['input'])[:60]}"


@pytest.mark.parametrize("index", range(len(ENTRIES)), ids=[_id(e) for e in ENTRIES])
def test_corpus_entry(verdicts: list[str], index: int) -> None:
    entry, verdict = ENTRIES[index], verdicts[index]
    if entry["expect"] == "gate":
        assert verdict in ("deny", "ask"), f"not gated: {entry['input']}"
    else:
        assert verdict in ("none", "allow"), f"false positive ({verdict}): {entry['input']}"
