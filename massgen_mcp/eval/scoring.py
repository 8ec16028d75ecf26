"""Figures per arm: accuracy with a 95% Wilson interval, cost, tokens, calls, latency."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

Z95 = 1.959963984540054


def wilson(right: int, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of `right` out of `n` (well behaved at 0% and 100%)."""
    if n == 0:
        return (0.0, 1.0)
    p = right / n
    denom = 1 + Z95**2 / n
    centre = (p + Z95**2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100), None for no values."""
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


@dataclass
class ArmOutcome:
    """One arm on one item."""

    right: bool
    answer: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    latency_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"right": self.right, "answer": self.answer, "calls": self.calls,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cost_usd": _round(self.cost_usd), "latency_s": round(self.latency_s, 3)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ArmOutcome:
        return cls(bool(d["right"]), d.get("answer", ""), d.get("calls", 0),
                   d.get("input_tokens", 0), d.get("output_tokens", 0), d.get("cost_usd"),
                   d.get("latency_s", 0.0))


def summarize(outcomes: list[ArmOutcome]) -> dict[str, Any]:
    n = len(outcomes)
    right = sum(o.right for o in outcomes)
    lo, hi = wilson(right, n)
    costs = [o.cost_usd for o in outcomes]
    latencies = [o.latency_s for o in outcomes]
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    return {
        "items": n,
        "right": right,
        "accuracy": round(right / n, 4) if n else None,
        "ci95": [round(lo, 4), round(hi, 4)],
        "cost_usd": None if any(c is None for c in costs) else _round(sum(c or 0 for c in costs)),
        "calls": sum(o.calls for o in outcomes),
        "tokens": sum(o.input_tokens + o.output_tokens for o in outcomes),
        "latency_p50_s": None if p50 is None else round(p50, 3),
        "latency_p95_s": None if p95 is None else round(p95, 3),
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 6)
