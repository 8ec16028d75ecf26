"""Words a person reads: one vote wording, no "0/0 votes", no internal jargon, YAML errors
on the right line, a tool's text that opens with the answer."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mcp_harness import EXE, memory_client, server_env, write_team
from scripted_provider import Hang, answer, sequence

from massgen_mcp.runs.progress import describe_event


def test_a_run_without_votes_never_headlines_zero_of_zero(provider, tmp_path: Path) -> None:
    provider.script("first", sequence(answer("FIRST ANSWER"), Hang()))
    provider.script("mute", Hang())
    team = write_team(tmp_path / "team.yaml", provider, [("a", "anthropic", "first"),
                                                        ("b", "anthropic", "mute")])
    done = subprocess.run([EXE, "run", "x", "--team", str(team), "--timeout", "3"],
                          cwd=tmp_path, env=server_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 3, done.stderr
    assert done.stdout.strip() == "FIRST ANSWER"
    assert "0/0" not in done.stderr and "with 0 of 0" not in done.stderr
    assert "best answer so far" in done.stderr
    winner = [ln for ln in done.stderr.splitlines() if ln.startswith("— Winner")]
    assert all("no votes were cast" in ln for ln in winner), winner


def test_a_presentation_that_did_not_come_is_said_in_plain_words() -> None:
    text = describe_event({"kind": "presentation_done", "presented": False})
    assert "stored answer kept" not in text
    assert text == "the winner's last answer is the final answer (its final presentation " \
                   "did not come)"


@pytest.mark.parametrize(("body", "line", "noticed"), [
    ("agents:\n  - id: a\n    backend: {type: openai, model: x\n  - id: b\n", 3, 4),
    ('agents:\n  - id: a\n    backend: {type: "openai, model: x}\n  - id: b\n', 3, 5),
    ("agents:\n  - id: a\n    backend:\n      type: openai\n     model: x\n", 5, None),
])
def test_a_yaml_error_names_the_line_of_the_mistake(tmp_path: Path, body: str, line: int,
                                                    noticed: int | None) -> None:
    (tmp_path / "team.yaml").write_text(body)
    done = subprocess.run([EXE, "run", "x", "--team", "team.yaml"], cwd=tmp_path,
                          env=server_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert f"team.yaml: not valid YAML (line {line}," in done.stderr, done.stderr
    if noticed:
        assert f"(noticed at line {noticed}," in done.stderr


async def test_the_tool_text_opens_with_the_answer_and_says_votes_cast(provider,
                                                                       tmp_path: Path) -> None:
    from agents import answer_then_vote

    final = "\n".join(f"line {i} of the final answer" for i in range(1, 21))
    for name in ("w1", "w2"):
        provider.script(name, answer_then_vote("an answer", "agent1", final=final))
    team = write_team(tmp_path / "team.yaml", provider, [("a", "anthropic", "w1"),
                                                        ("b", "anthropic", "w2")])
    async with memory_client(tmp_path, team=team) as client:
        result = await client.call_tool("run_consensus", {"task": "x"})
    text = result.content[0].text  # type: ignore[union-attr]
    assert text.startswith("line 1 of the final answer\nline 2 of the final answer\n")
    assert "line 20 of the final answer" not in text  # the head only: the rest is structured
    assert "more characters: the whole answer is final_answer" in text
    assert "with 2 of 2 votes cast" in text
    assert result.structured_content["final_answer"] == final  # unchanged


def test_a_local_model_named_by_its_weights_path_reads_as_a_short_id(provider,
                                                                     tmp_path: Path) -> None:
    """llama.cpp's server names a model by its .gguf path: no line shows the path."""
    from agents import answer_then_vote

    weights = "/srv/models/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct-Q8_0.gguf"
    provider.script(weights, answer_then_vote("small answer", "agent1", final="SMALL"))
    done = subprocess.run([EXE, "run", "x", "--models", f"vllm/{weights},vllm/{weights}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=server_env({"VLLM_BASE_URL": provider.openai_base_url}))
    assert done.returncode == 0, done.stderr
    assert "/srv/models" not in done.stderr and ".gguf" not in done.stderr
    assert "SmolLM2-135M-Instruct-Q8_0 (vllm/SmolLM2-135M-Instruct-Q8_0)" in done.stderr
    assert "SmolLM2-135M-Instruct-Q8_0-2 (vllm/" in done.stderr  # two agents told apart


def test_eval_table_rows_stay_distinguishable() -> None:
    from massgen_mcp.cli.eval import table

    arm = {"accuracy": 0.5, "ci95": [0.1, 0.9], "cost_usd": None, "calls": 1, "tokens": 1,
           "latency_p50_s": None, "latency_p95_s": None}
    ids = ["SmolLM2-135M-Instruct-Q8_0", "SmolLM2-135M-Instruct-Q8_0-2",
           "SmolLM2-135M-Instruct-Q8_0-3"]
    text = table({"suite": "arith", "items_scored": 1, "items_total": 1, "team": ids,
                  "arms": {f"solo:{i}": arm for i in ids}})
    rows = [ln.split()[0] for ln in text.splitlines()[3:6]]
    assert len(set(rows)) == 3, rows
