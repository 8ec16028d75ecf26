"""How long each arm took on each item, kept with a recording so a replay reports them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from massgen_mcp.paths import open_private

if TYPE_CHECKING:
    from massgen_mcp.eval.scoring import ArmOutcome


class Latencies:
    """Latencies are measured live and kept with a recording, so a replay reports the
    recorded ones (a replay answers at once; its scores must be the recording's)."""

    def __init__(self, cassette: Path | None) -> None:
        self.path = cassette / "latency.jsonl" if cassette else None
        self.recorded: dict[tuple[str, str], float] = {}
        self.replaying = False

    def load_for_replay(self) -> None:
        self.replaying = True
        if self.path and self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                self.recorded[(row["item"], row["arm"])] = row["seconds"]

    def get(self, item: str, arm: str, measured: float) -> float:
        if self.replaying:
            return self.recorded.get((item, arm), 0.0)
        self.recorded[(item, arm)] = round(measured, 3)
        return round(measured, 3)

    def save(self, item: str, outcomes: dict[str, ArmOutcome]) -> None:
        if self.replaying or self.path is None:
            return
        with open_private(self.path) as f:
            for key, seconds in list(self.recorded.items()):
                if key[0].split("#", 1)[0] == item:
                    f.write(json.dumps({"item": key[0], "arm": key[1],
                                        "seconds": seconds}) + "\n")
                    del self.recorded[key]
