"""The orchestrator knobs for big teams and for how independent a decision must be.

Mixed into `OrchestratorConfig` (orchestration.py), so a team file sets them under `orchestrator:`:

    orchestrator:
      reviewers_per_agent: 4        # above all_to_all_max_agents, each agent reads 4 answers
      all_to_all_max_agents: 5      # teams up to this size: every agent reads every answer
      min_agreement: {share: 0.5, independent_share: 0.5}

`min_agreement` keeps its plain form (a share, e.g. 0.67); the mapping form also asks for
`independent_share` (coordination/families.py: each model family's votes count once), and
is stored as `min_agreement` plus `min_independent_share`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator

#: The largest team a file may hold (MassGen ships a 50-agent file).
MAX_AGENTS = 64
#: Teams up to this size review all-to-all (MassGen's own semantics); bigger teams read
#: `reviewers_per_agent` answers each: all-to-all prompts grow with N² (issue 31).
ALL_TO_ALL_MAX_AGENTS = 5
REVIEWERS_PER_AGENT = 4

_AGREEMENT_KEYS = {"share", "independent_share"}


class ScaleKnobs(BaseModel):
    #: Each agent of a team bigger than `all_to_all_max_agents` reads this many other
    #: answers (chosen by a seeded rotation, so every answer is read by exactly this many
    #: agents) and votes among them and its own.
    reviewers_per_agent: int = Field(default=REVIEWERS_PER_AGENT, ge=1, le=MAX_AGENTS - 1)
    #: Teams of up to this many agents review all-to-all.
    all_to_all_max_agents: int = Field(default=ALL_TO_ALL_MAX_AGENTS, ge=1, le=MAX_AGENTS)
    #: The winner's votes, counting each model family's once, over the families that voted
    #: must reach this share, else the run ends `no_consensus` (unset: not required).
    min_independent_share: float | None = Field(default=None, gt=0, le=1)

    @model_validator(mode="before")
    @classmethod
    def _agreement_mapping(cls, data: Any) -> Any:
        """`min_agreement: {share: 0.5, independent_share: 0.5}` -> the two flat keys."""
        if not isinstance(data, dict) or not isinstance(data.get("min_agreement"), dict):
            return data
        wanted = dict(data["min_agreement"])
        unknown = set(wanted) - _AGREEMENT_KEYS
        if unknown:
            raise ValueError(
                f"min_agreement: unknown key(s) {', '.join(sorted(map(str, unknown)))}; "
                "give a share (e.g. 0.67) or a mapping of share and/or independent_share")
        out = {k: v for k, v in data.items() if k != "min_agreement"}
        if wanted.get("share") is not None:
            out["min_agreement"] = wanted["share"]
        if wanted.get("independent_share") is not None:
            out["min_independent_share"] = wanted["independent_share"]
        return out
