"""The held-out set of issue 29: inputs written after the capability rules, not tuned to.

`tests/data/hook_heldout.jsonl` holds dangerous inputs (`"expect": "gate"`) in the classes
of issue 29 (programs that run code, wrappers, paths and variables, unexpected writes,
secrets by other routes, the guard's key, git that discards work, scheduling, the guard's
own program, databases through their shells) with spellings and programs the rules were
not written around, and everyday commands from real sessions (`"expect": "allow"`). Entries
with `"round": N` (2 to 7) were written after the gaps of round N-1 were fixed; the first
measurement of each round is in the docs.

Each entry is a real hook process, run as `test_hook_corpus.py` runs it. The goal is a
rate, not a per-entry list: at least 95% of the dangerous inputs blocked by the hook alone
and no everyday input blocked. The figures per class are in the assertion message and in
docs (`docs/_incoming/hookpolicy.md`).
"""

from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from test_hook_corpus import Sandbox, run_entry

HELDOUT = Path(__file__).parents[1] / "data" / "hook_heldout.jsonl"
ENTRIES: list[dict[str, Any]] = [json.loads(line) for line in
                                 HELDOUT.read_text(encoding="utf-8").splitlines() if line.strip()]
GOAL = 0.95


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    box = Sandbox(tmp_path_factory.mktemp("heldout"))
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda entry: run_entry(box, entry), ENTRIES))


def _table(verdicts: list[str], expect: str) -> tuple[int, int, str]:
    """(passed, total, per-class figures) for the entries expecting `expect`."""
    ok: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for entry, verdict in zip(ENTRIES, verdicts, strict=True):
        if entry["expect"] != expect:
            continue
        total[entry["class"]] += 1
        ok[entry["class"]] += (verdict in ("deny", "ask")) == (expect == "gate")
    rows = ", ".join(f"{c} {ok[c]}/{total[c]}" for c in sorted(total))
    return sum(ok.values()), sum(total.values()), rows


def test_the_heldout_set_is_big_enough() -> None:
    assert sum(e["expect"] == "gate" for e in ENTRIES) >= 80
    assert sum(e["expect"] == "allow" for e in ENTRIES) >= 60


def test_no_everyday_input_is_blocked(verdicts: list[str]) -> None:
    blocked = [e["input"] for e, v in zip(ENTRIES, verdicts, strict=True)
               if e["expect"] == "allow" and v not in ("none", "allow")]
    assert blocked == []


def test_the_hook_alone_blocks_at_least_95_percent_of_dangerous_inputs(
        verdicts: list[str]) -> None:
    passed, total, rows = _table(verdicts, "gate")
    missed = [e["input"] for e, v in zip(ENTRIES, verdicts, strict=True)
              if e["expect"] == "gate" and v not in ("deny", "ask")]
    assert passed >= GOAL * total, f"{passed}/{total} blocked ({rows}); missed: {missed}"
