"""The capability rules fail closed: inputs they were not written for are decided or denied,
never waved through by an error, and a verdict comes within the hook's deadline.

Each input goes to the real hook process (see `test_hook_corpus.run_entry`): Grep arguments
of the wrong type, a line deep or long enough to strain the analysis, options at the end of
a line with their value missing, a wrapper wrapping itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from test_hook_corpus import Sandbox, run_entry

ODD: list[tuple[str, dict[str, Any]]] = [
    ("Grep", {"pattern": "x", "path": ["~/.ssh"], "glob": 7}),
    ("Grep", {"pattern": "x", "glob": ""}),
    ("Bash", {"command": "ssh -o"}),
    ("Bash", {"command": "tar --to-command"}),
    ("Bash", {"command": "cmake -E"}),
    ("Bash", {"command": "git bisect run"}),
    ("Bash", {"command": "watch -n"}),
    ("Bash", {"command": "npx"}),
    ("Bash", {"command": "trap"}),
    ("Bash", {"command": "env -C"}),
    ("Bash", {"command": "unshare unshare unshare unshare unshare unshare unshare unshare"}),
    ("Bash", {"command": "patch -p <<'EOF'\n+++ \nEOF"}),
    ("Bash", {"command": "awk '{print >'"}),
    ("Bash", {"command": "cd mass*p && cd [ && cat *"}),
    # the shape rules (reach_rules.py, secret_search.py) with their values missing
    ("Bash", {"command": "fd -x"}),
    ("Bash", {"command": "curl -X"}),
    ("Bash", {"command": "psql -f"}),
    ("Bash", {"command": "sqlite3 db '.output'"}),
    ("Bash", {"command": "docker exec"}),
    ("Bash", {"command": "kubectl exec --"}),
    ("Bash", {"command": "git apply --directory"}),
    ("Bash", {"command": "chmod"}),
    ("Bash", {"command": "echo $(printf '\\')"}),
    ("Bash", {"command": "grep -r -e"}),
    ("Bash", {"command": "x eval"}),
    ("mcp__k8s__kubectl", {"args": [None, 3, {"a": 1}]}),
]
#: Dangerous lines wrapped in what strains the analysis: each must still be gated.
STRAINED = [
    "true | " * 400 + "rm -rf ~",
    "$(" * 30 + "echo" + ")" * 30 + "; rm -rf ~",
    "fakeroot " * 60 + "rm -rf ~",
    "x=" + "a" * 50_000 + "; rm -rf ~",
]


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return Sandbox(tmp_path_factory.mktemp("capability"))


def _hook(box: Sandbox, tool: str, tool_input: dict[str, Any]) -> tuple[int, str, str]:
    """(exit code, verdict, stderr) of one real hook process."""
    event = {"session_id": "s1", "cwd": str(box.project), "hook_event_name": "PreToolUse",
             "tool_name": tool, "tool_input": box.fill(tool_input), "tool_use_id": "t1"}
    proc = subprocess.run([sys.executable, "-m", "massgen_mcp.hook.main", "pre-tool-use"],
                          input=json.dumps(event), capture_output=True, text=True, timeout=60,
                          env=box.env(), cwd=box.project)
    verdict = (json.loads(proc.stdout)["hookSpecificOutput"]["permissionDecision"]
               if proc.stdout.strip() else "none")
    return proc.returncode, verdict, proc.stderr


@pytest.mark.parametrize("tool, tool_input", ODD, ids=[str(i) for i in range(len(ODD))])
def test_odd_inputs_are_decided_without_an_error(box: Sandbox, tool: str,
                                                 tool_input: dict[str, Any]) -> None:
    """No traceback, no internal error: the rules decide these (an error would deny)."""
    code, verdict, err = _hook(box, tool, tool_input)
    assert code == 0 and "internal error" not in err and "Traceback" not in err, err
    assert verdict in ("none", "deny")


@pytest.mark.parametrize("command", STRAINED, ids=["pipes", "nesting", "wrappers", "long"])
def test_strained_dangerous_lines_stay_gated(box: Sandbox, command: str) -> None:
    assert run_entry(box, {"tool": "Bash", "input": {"command": command}}) == "deny"


def test_a_tool_named_after_a_program_runs_its_argument_list(box: Sandbox) -> None:
    """`mcp__k8s__kubectl {"args": [...]}` is `kubectl ...`: judged as that command line."""
    dangerous = {"args": ["delete", "namespace", "prod"]}
    assert run_entry(box, {"tool": "mcp__k8s__kubectl", "input": dangerous}) == "deny"
    everyday = {"args": ["get", "pods", "-n", "dev"]}
    assert run_entry(box, {"tool": "mcp__k8s__kubectl", "input": everyday}) == "none"


def test_a_sql_file_a_database_shell_runs_is_read_and_judged(box: Sandbox) -> None:
    """`psql -f F` runs what F holds: DROP in it is gated, a SELECT is not; a FIFO named
    like a SQL file is not waited on (the hook answers, and fails closed)."""
    (box.project / "q_drop.sql").write_text("DROP TABLE users;\n", encoding="utf-8")
    (box.project / "q_read.sql").write_text("SELECT 1;\n", encoding="utf-8")
    assert run_entry(box, {"tool": "Bash", "input": {"command": "psql -f q_drop.sql"}}) == "deny"
    assert run_entry(box, {"tool": "Bash", "input": {"command": "psql -f q_read.sql"}}) == "none"
    import os

    os.mkfifo(box.project / "q_fifo_drop.sql")
    code, verdict, err = _hook(box, "Bash", {"command": "sqlite3 db < q_fifo_drop.sql"})
    assert code == 0 and verdict == "deny" and "Traceback" not in err, err
