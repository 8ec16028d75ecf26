"""Default bounds on one provider call: an output cap per mode and a deadline from the run's limit.

Without them a model that does not stop generating holds its whole team: the run waits for
it until the run's own time limit. So every call has

- an output cap: the backend's `max_tokens` when the team file sets one, else the
  orchestrator's `max_output_tokens`, else a size that fits the mode's answers
  (`OUTPUT_TOKENS`, by the answer format's noun);
- a deadline: `call_timeout_seconds`, else a third of `orchestrator_timeout_seconds` (at
  least 30 s), so one stuck call leaves the run time to retry it and to go on without that
  agent.
"""

from __future__ import annotations

from massgen_mcp.config.orchestration import OrchestratorConfig

#: Output tokens per call by the kind of answer (the answer format's noun). A text answer
#: is an essay at most; a deep plan lists up to 200 tasks.
OUTPUT_TOKENS = {"answer": 4096, "plan": 16384, "checkpoint plan": 8192}
DEFAULT_OUTPUT_TOKENS = 8192
#: Unset call_timeout_seconds: this share of the run's limit, but never less than
#: MIN_CALL_SECONDS (a shorter deadline would cut real calls of slow models; a run whose
#: limit is that short ends at its own limit first).
CALL_SHARE = 1 / 3
MIN_CALL_SECONDS = 30.0


def output_cap(cfg: OrchestratorConfig, noun: str) -> int:
    """The output cap of calls whose backend sets no `max_tokens`."""
    if cfg.max_output_tokens is not None:
        return cfg.max_output_tokens
    return OUTPUT_TOKENS.get(noun, DEFAULT_OUTPUT_TOKENS)


def call_deadline(cfg: OrchestratorConfig) -> float:
    """Seconds one provider call may take before it is cancelled."""
    if cfg.call_timeout_seconds is not None:
        return cfg.call_timeout_seconds
    return max(cfg.orchestrator_timeout_seconds * CALL_SHARE, MIN_CALL_SECONDS)
