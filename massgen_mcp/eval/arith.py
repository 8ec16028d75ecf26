"""Seeded multi-step arithmetic word problems with exact answers (the `arith` suite).

Nothing is downloaded or vendored: the same seed gives the same problems on every machine.
A problem at level L takes L steps after the opening quantity; each step is one sentence and
one exact integer operation, so the answer can be checked with `==`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

LEVELS = (1, 2, 3, 4, 5)

_NAMES = ("Ada", "Bram", "Chen", "Dara", "Eli", "Farah", "Goran", "Hana", "Ivo", "Jun")
_THINGS = (("apples", "crate"), ("books", "box"), ("coins", "bag"), ("stamps", "album"),
           ("marbles", "jar"), ("pencils", "pack"), ("cards", "deck"), ("shells", "bucket"))


@dataclass(frozen=True, slots=True)
class ArithProblem:
    id: str
    level: int
    prompt: str
    answer: int


def _step(rng: random.Random, value: int, name: str, thing: str, unit: str
          ) -> tuple[str, int]:
    """One sentence that changes `value`, and the new value (always a non-negative int)."""
    kind = rng.choice(("add", "sub", "mul_add", "div", "double"))
    if kind == "sub" and value > 3:
        n = rng.randint(1, value - 1)
        return f"{name} gives away {n} {thing}.", value - n
    if kind == "mul_add":
        k, per = rng.randint(2, 6), rng.randint(3, 12)
        return f"{name} then gets {k} {unit}s with {per} {thing} in each.", value + k * per
    if kind == "div" and value >= 4:
        for parts in (2, 3, 4, 5):
            if value % parts == 0:
                return (f"{name} splits the {thing} into {parts} equal groups and keeps "
                        f"one group.", value // parts)
    if kind == "double" and value < 500:
        return f"{name}'s stock of {thing} then doubles.", value * 2
    n = rng.randint(2, 40)
    return f"{name} finds {n} more {thing}.", value + n


def problem(seed: int, index: int, level: int) -> ArithProblem:
    """The `index`-th problem of `level` for `seed` (independent of how many are drawn)."""
    if level not in LEVELS:
        raise ValueError(f"arith levels are {LEVELS[0]}..{LEVELS[-1]}, not {level}")
    rng = random.Random(f"arith:{seed}:{level}:{index}")
    name = rng.choice(_NAMES)
    thing, unit = rng.choice(_THINGS)
    value = rng.randint(5, 60)
    sentences = [f"{name} has {value} {thing}."]
    for _ in range(level):
        sentence, value = _step(rng, value, name, thing, unit)
        sentences.append(sentence)
    sentences.append(f"How many {thing} does {name} have now?")
    return ArithProblem(f"arith-L{level}-{index:03d}", level, " ".join(sentences), value)


def problems(seed: int = 0, count: int = 50, levels: tuple[int, ...] = LEVELS
             ) -> list[ArithProblem]:
    """`count` problems spread evenly over `levels` (round robin: easy and hard interleaved)."""
    return [problem(seed, i // len(levels), levels[i % len(levels)]) for i in range(count)]
