"""No key reaches a sink: every file a run or plan writes, tool-server logs, and every byte
the MCP client receives. Redaction covers the exact key, its URL-encoded forms and any piece
of 8 or more characters."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import yaml
from agents import has_answered, presenting
from mcp import Client
from scripted_provider import Call, ScriptedProvider, ScriptRequest, ToolCalls, answer, vote

from massgen_mcp.app import App
from massgen_mcp.config.env import Environment
from massgen_mcp.redaction import Redactor
from massgen_mcp.server import build_server

SERVER = str(Path(__file__).parents[1] / "tool_server.py")
TEAM_KEY = "Zq8vT3kL/m9Xw2Rb7+Yc4Nd6Hf1Jg5Ps0AeWu=="  # in the team file (api_key)
ENV_KEY = "sk-proj-Hq2Wn7Vb4Xc9Zl1Mk6Jd3Fs8Ga5Pt0Ry"  # in the operator's environment
LEAKS = [TEAM_KEY, quote(TEAM_KEY, safe=""), quote_plus(TEAM_KEY), TEAM_KEY[3:15],
         TEAM_KEY[20:28], ENV_KEY, ENV_KEY[10:30], quote(ENV_KEY[5:25], safe="")]
SAYS = (f"key {TEAM_KEY} encoded {quote(TEAM_KEY, safe='')} plus {quote_plus(TEAM_KEY)} "
        f"piece {TEAM_KEY[3:15]} other {ENV_KEY[10:30]} url ?k={quote(ENV_KEY[5:25], safe='')}")


def test_redactor_forms_and_pieces() -> None:
    r = Redactor([TEAM_KEY])
    for leak in LEAKS[:5]:
        out = r.text(f"before {leak} after")
        assert leak not in out and out.startswith("before ***") and out.endswith("*** after")
    assert r.text(TEAM_KEY[:7]) == TEAM_KEY[:7]  # 7 characters are not a piece
    assert r.text("x\ud800y") == "x\ufffdy"
    assert "sk-" not in Redactor().text("a key sk-abcdefghijklmnop")


def task(tid: str, chunk: str, deps: list[str] | None = None) -> dict[str, Any]:
    return {"id": tid, "chunk": chunk, "description": f"do {tid}; {SAYS}",
            "depends_on": deps or [], "priority": "high", "task_type": "deterministic",
            "success_criteria": [f"{tid} done"], "verification": f"check {tid}"}


PLAN = {"summary": f"Ship it. {SAYS}", "tasks": [
    task("schema", "1-design"), task("api", "1-design", ["schema"]),
    task("worker", "2-build", ["api"]), task("tests", "2-build", ["worker"]),
    task("docs", "3-ship", ["tests"]), task("deploy", "3-ship", ["docs"])]}


def talker(req: ScriptRequest) -> Any:
    """Says the keys in its answer, its vote reason and its final answer."""
    planning = any(t["name"] == "new_answer" and "plan" in (t.get("parameters") or {}).get(
        "properties", {}) for t in req.tools)
    if presenting(req):
        return ToolCalls([Call("new_answer", {"plan": PLAN})]) if planning \
            else answer(f"FINAL {SAYS}")
    if not has_answered(req):
        return ToolCalls([Call("new_answer", {"plan": PLAN})]) if planning \
            else answer(f"Kafka. {SAYS}")
    return vote("agent1", f"best; {SAYS}")


async def test_no_sink_holds_a_key(provider: ScriptedProvider, tmp_path: Path,
                                   monkeypatch: Any) -> None:
    monkeypatch.setenv("MASSGEN_MCP_KEY_FILE", str(tmp_path / "keys" / "plan.key"))
    provider.script("m1", talker)
    # A tool server that prints its environment (its config names the key) to stderr.
    echo = {"name": "echo", "command": "/bin/sh",
            "args": ["-c", f"env >&2; echo \"enc=$ENC\" >&2; exec '{sys.executable}' '{SERVER}'"],
            "env": {"LEAK": "${OPENAI_API_KEY}", "ENC": quote(TEAM_KEY, safe="")}}
    backend = {**provider.backend("openai", "m1", max_retries=0), "api_key": TEAM_KEY,
               "mcp_servers": [echo]}
    team = tmp_path / "team.yaml"
    team.write_text(yaml.safe_dump({"agents": [{"id": "a", "backend": backend}]}))
    app = App(tmp_path / ".massgen", env=Environment({"OPENAI_API_KEY": ENV_KEY},
                                                     dotenv_dir=tmp_path),
              cwd=tmp_path, default_team=str(team))
    server, _ = build_server(app)
    received: list[str] = []
    async with Client(server) as c:
        for tool, args in (("run_consensus", {"task": f"Which queue? {SAYS}"}),
                           ("plan", {"goal": "Add a job queue", "depth": "shallow"})):
            r = await c.call_tool(tool, args)
            received.append(r.model_dump_json())
            assert not r.is_error, r.content
        run_id = r.structured_content["consensus"]["run_id"]
        for tool, args in (("get_run", {"run_id": run_id}), ("list_runs", {}),
                           ("get_plan", {}), ("list_plans", {})):
            received.append((await c.call_tool(tool, args)).model_dump_json())
        received.append((await c.read_resource(f"massgen://runs/{run_id}")).model_dump_json())
        received.append((await c.read_resource(f"massgen://runs/{run_id}/events"))
                        .model_dump_json())
    # The agent wrote the keys in its replies; what went back to the provider was redacted
    # (issue 30: every message is redacted before a provider call) ...
    assert not any(TEAM_KEY[3:15] in req.text for req in provider.requests)
    files = [p for p in (tmp_path / ".massgen").rglob("*") if p.is_file()]
    logs = [p for p in files if p.name.endswith(".stderr.log")]
    assert logs and "LEAK=***" in logs[0].read_text()
    assert any(p.parent.parent.name == "plans" for p in files)
    # ... but no file and no byte the client got holds one, in any form.
    for p in files:
        text = p.read_text(encoding="utf-8")
        for leak in LEAKS:
            assert leak not in text, (p, leak)
    for blob in received:
        for leak in LEAKS:
            assert leak not in blob and quote(leak, safe="") not in blob, leak
