"""The `orchestrator:` section of a team file: how a run coordinates, and when it stops.

`OrchestratorConfig` holds the knobs (answer limits, voting, time and cost caps, the
straggler and early-stop rules; the big-team ones come from `team_scale.ScaleKnobs`), and
`ContextPath` the directories the agents may read. `team.py` holds the rest of the file.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from massgen_mcp.config.team_scale import ScaleKnobs

Level = Literal["lenient", "balanced", "strict"]
# MassGen's other voting_sensitivity values, run as the nearest level we implement.
VOTING_SENSITIVITY: dict[str, Level] = {
    "lenient": "lenient", "balanced": "balanced", "strict": "strict",
    "roi": "balanced", "roi_balanced": "balanced", "roi_conservative": "strict",
    "roi_aggressive": "lenient", "sequential": "balanced", "adversarial": "strict",
    "consistency": "balanced", "diversity": "balanced", "reflective": "balanced",
    "checklist": "balanced", "checklist_scored": "balanced", "checklist_gated": "strict",
}
# Upper bounds for every number a team file sets (a file named by a tool call included): a
# timeout of 1e300 s is a run that never ends, and a huge count overflows an SDK.
MAX_SECONDS = 86_400  # a day, for a run or one request
MAX_OUTPUT_TOKENS = 1_000_000
MAX_RUN_TOKENS = 1_000_000_000
MAX_PROMPT_CHARS = 200_000


class Lenient(BaseModel):
    """Accepts MassGen keys we do not implement (kept in `model_extra`, warned about by
    `massgen_keys.py`, which also turns a near-miss of a key we *do* implement into an
    error, so `temperture: 0.2` is not silently lost)."""

    # No infinite or NaN limits: `.inf` seconds overflows the SDKs long after loading.
    model_config = ConfigDict(extra="allow", populate_by_name=True, allow_inf_nan=False)

    @classmethod
    def known_keys(cls) -> set[str]:
        return set(cls.model_fields) | {f.alias for f in cls.model_fields.values() if f.alias}


class ContextPath(Lenient):
    """A directory (or file) the agents may read through the in-process file tools."""

    path: str = Field(min_length=1)
    permission: Literal["read", "write"] = "read"  # write is served read-only (warned)
    protected_paths: list[str] = Field(default_factory=list, max_length=1000)

    @model_validator(mode="before")
    @classmethod
    def _bare_path(cls, v: Any) -> Any:
        return {"path": v} if isinstance(v, str) else v


#: Default answer limit per agent. MassGen's is unlimited; a model that never votes would then
#: answer until the run's time limit. `null` in a team file restores "unlimited" (the run is
#: still bounded by `max_provider_calls`).
DEFAULT_MAX_NEW_ANSWERS = 3
#: Provider calls per agent allowed by the derived per-run cap (`max_provider_calls` unset);
#: an agent with MCP tools also gets two calls per allowed tool call of a turn.
CALLS_PER_AGENT = 20


class OrchestratorConfig(ScaleKnobs, Lenient):
    max_new_answers_per_agent: int | None = Field(default=DEFAULT_MAX_NEW_ANSWERS, ge=1,
                                                  le=100)
    answer_novelty_requirement: Level = "lenient"
    voting_sensitivity: Level = "lenient"
    skip_final_presentation: bool = False
    orchestrator_timeout_seconds: float = Field(default=1800, gt=0, le=MAX_SECONDS)
    # MassGen's name is fairness_lead_cap_answers; the short name is accepted too.
    fairness_lead_cap: int | None = Field(default=2, ge=1, le=100,
                                          alias="fairness_lead_cap_answers")
    fairness_enabled: bool = True
    context_paths: list[ContextPath] = Field(default_factory=list, max_length=100)
    max_total_tokens: int | None = Field(default=None, gt=0, le=MAX_RUN_TOKENS)
    max_attempts_per_turn: int = Field(default=3, ge=1, le=10)
    max_tool_calls_per_turn: int = Field(default=20, ge=0, le=200)
    tool_call_timeout_seconds: float = Field(default=60, gt=0, le=3600)
    tool_server_startup_timeout_seconds: float = Field(default=30, gt=0, le=600)
    #: Per-run cap on provider calls (cancelled ones included); unset: derived from the team
    #: (CALLS_PER_AGENT per agent, more for agents with tools). Reaching it stops the run
    #: with status budget_exceeded and the best answer so far.
    max_provider_calls: int | None = Field(default=None, ge=1, le=100_000)
    #: Stop the run (budget_exceeded) once its estimated cost passes this many US dollars.
    max_cost_usd: float | None = Field(default=None, gt=0, le=100_000)
    #: An agent that has answered waits up to this long for every live peer's first answer
    #: before its next turn (that turn would be cancelled by the peer's answer anyway); 0
    #: turns the wait off (MassGen's behaviour).
    first_answer_wait_seconds: float = Field(default=60, ge=0, le=3600)
    #: The winner needs at least this share of the votes (0-1); below it the run ends
    #: `no_consensus` with the candidates listed and no final answer. Set, it alone decides
    #: (e.g. 0.3 accepts a 1-1-1 split); unset: the `min_winner_votes` rule.
    min_agreement: float | None = Field(default=None, gt=0, le=1)
    #: Votes the winner needs when min_agreement is unset; unset: 2 in a team of three or
    #: more (a split is not a decision), else 1. Never more than the live agents. 1: any
    #: winner.
    min_winner_votes: int | None = Field(default=None, ge=1, le=1000)
    #: A member still working once every other live member has answered (or voted) gets
    #: max(straggler_grace_seconds, straggler_grace_factor x its peers' longest turn), then
    #: is cut off: the run goes on without it and ends `degraded`. null: never cut off.
    straggler_grace_seconds: float | None = Field(default=30, ge=0, le=86400)
    straggler_grace_factor: float = Field(default=2.0, ge=0, le=100)
    #: The deadline of one provider call; unset: a third of orchestrator_timeout_seconds.
    #: A call past it is cancelled and the turn fails (retried once, then the agent drops).
    call_timeout_seconds: float | None = Field(default=None, gt=0, le=86400)
    #: Output cap of every call whose backend sets no max_tokens; unset: sized per mode
    #: (coordination/limits.py).
    max_output_tokens: int | None = Field(default=None, gt=0, le=1_000_000)
    #: Present once the outstanding votes cannot change the winner (nor bring it below
    #: min_agreement): they run beside the presentation and count if they arrive before the
    #: final answer; turns still running then are cancelled and counted. A deviation from
    #: MassGen, which waits for every vote.
    early_stop: bool = True
    #: Show the answers in a seeded random order per voter and round (position bias);
    #: the seed is recorded in the result (`shuffle_seed`) and can be fixed here.
    shuffle_answers: bool = True
    shuffle_seed: int | None = Field(default=None, ge=0, le=2**63)
    #: Checkpoint teams: how many live reviewers must vote for the plan that is approved
    #: (a split or plurality approves nothing). The server's --checkpoint-approval may
    #: ask for more; the stricter wins.
    approval: Literal["majority", "unanimous"] = "majority"

    def provider_call_cap(self, agents: int, with_tools: int = 0) -> int:
        """The per-run provider-call cap for a team of `agents` (`with_tools` of them with
        MCP tools)."""
        if self.max_provider_calls is not None:
            return self.max_provider_calls
        return agents * CALLS_PER_AGENT + with_tools * 2 * self.max_tool_calls_per_turn

    @field_validator("voting_sensitivity", mode="before")
    @classmethod
    def _massgen_sensitivity(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        if v.strip().lower() in VOTING_SENSITIVITY:
            return VOTING_SENSITIVITY[v.strip().lower()]
        raise ValueError(
            f"'{v}' is not a voting_sensitivity; MassGen's values are "
            f"{', '.join(VOTING_SENSITIVITY)}; massgen-mcp implements lenient, balanced and "
            "strict, and runs the others as the nearest of those")

    @model_validator(mode="after")
    def _fairness(self) -> Self:
        if not self.fairness_enabled:
            self.fairness_lead_cap = None
        return self
