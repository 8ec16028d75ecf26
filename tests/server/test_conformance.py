"""The official MCP conformance suite against `massgen-mcp --transport streamable-http`.

`@modelcontextprotocol/conformance` (pinned in tests/js) acts as the client; it needs
Node >= 22, which the `node` npm package in tests/js provides. The suite's CLI takes one
scenario or a whole suite per run, and most of a run is Node loading the suite, so it runs
the active suite once and each test checks one scenario's recorded checks. Only the
scenarios that apply to any server are asserted: the others exercise the fixture tools,
resources and prompts of the suite's own reference server (they call names massgen-mcp does
not have and get a tool error), or logging and completions, which massgen-mcp does not
declare.

The pinned suite (0.1.16) has server scenarios for 2025-06-18 and 2025-11-25 only (`conformance
list --server --spec-version 2026-07-28` is refused as an unknown version, and it has no Tasks
scenario); the server here also carries the Tasks and Apps extensions, which these scenarios
must not notice. The 2026-07-28 wire and the Tasks extension are tested with the SDK's clients
(tests/server/test_server.py, tests/server/test_tasks.py) and the real Claude Code
(tests/coding_agents/test_tasks_claude_code.py).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_harness import http_server, server_env
from tiers import require_node_bin

pytestmark = pytest.mark.npm

SCENARIOS = ["server-initialize", "ping", "tools-list", "resources-list", "prompts-list",
             "server-sse-multiple-streams", "dns-rebinding-protection"]


class SuiteRun:
    def __init__(self, out_dir: Path, output: str, server_alive: bool, server_log: str) -> None:
        self.out_dir, self.output = out_dir, output
        self.server_alive, self.server_log = server_alive, server_log

    def checks(self, scenario: str) -> list[dict[str, Any]]:
        """The checks recorded for `scenario` (the suite names its folder server-<name>-<time>)."""
        found = sorted(self.out_dir.glob(f"server-{scenario}-20*/checks.json"))
        assert len(found) == 1, f"no single result for {scenario}: {found}\n{self.output}"
        return json.loads(found[0].read_text())


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SuiteRun]:
    """Start one server and run the suite's active scenarios against it, once."""
    node, conformance = require_node_bin("node"), require_node_bin("conformance")
    work = tmp_path_factory.mktemp("conformance")
    out_dir = work / "results"
    with http_server(work) as server:
        cmd = [str(node), str(conformance), "server", "--url", server.url,
               "--suite", "active", "--output-dir", str(out_dir)]
        # Its exit code counts the scenarios that cannot apply here, so it is not used.
        proc = subprocess.run(cmd, cwd=work, env=server_env(), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=300)
        alive = server.proc.poll() is None
        yield SuiteRun(out_dir, proc.stdout[-6000:] + proc.stderr[-3000:], alive,
                       "".join(server.stderr))


def test_the_server_survives_the_whole_suite(suite: SuiteRun) -> None:
    assert suite.server_alive, "the server died during the suite:\n" + suite.server_log
    assert "=== SUMMARY ===" in suite.output, suite.output


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scenario(suite: SuiteRun, scenario: str) -> None:
    checks = suite.checks(scenario)
    failed = [c for c in checks if c["status"] != "SUCCESS"]
    assert checks, f"the suite recorded no check for {scenario}"
    assert not failed, json.dumps(failed, indent=1)
