"""The figures of an eval (its `--json` document), from the scored items: each arm's summary,
the oracle, the best member (chosen after the fact, and labelled so) and the selection gap."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from massgen_mcp.eval.scoring import ArmOutcome, summarize

if TYPE_CHECKING:
    from massgen_mcp.config.team import AgentSpec, Team
    from massgen_mcp.eval.suites import Suite

#: Item id -> {arm: the arm's outcome as JSON}, as kept in `items.jsonl`.
Records = dict[str, dict[str, dict[str, Any]]]


def best_member(team: Team, records: Records) -> AgentSpec:
    """The member right alone most often (of equals, the first in the configuration)."""
    def right(agent: AgentSpec) -> int:
        return sum(bool(r.get(f"solo:{agent.id}", {}).get("right")) for r in records.values())
    return max(team.agents, key=right)  # max keeps the first of equals: config order


def _oracle(records: Records, ids: list[str], solos: list[str]) -> list[ArmOutcome]:
    """Per item where every member answered alone: right if any member was right."""
    oracle = []
    for i in ids:
        rs = [ArmOutcome.from_json(records[i][s]) for s in solos if s in records[i]]
        if len(rs) == len(solos):
            oracle.append(ArmOutcome(any(r.right for r in rs), "",
                                     sum(r.calls for r in rs),
                                     sum(r.input_tokens for r in rs),
                                     sum(r.output_tokens for r in rs),
                                     None if any(r.cost_usd is None for r in rs)
                                     else sum(r.cost_usd or 0.0 for r in rs),
                                     max(r.latency_s for r in rs)))
    return oracle


def figures(suite: Suite, team: Team, chosen: set[str], records: Records, *, sc_k: int,
            stopped: str | None, notes: list[str]) -> dict[str, Any]:
    """The eval's document for the `chosen` arms over the items scored so far."""
    ids = [i.id for i in suite.items if i.id in records]
    per_arm: dict[str, list[ArmOutcome]] = {}
    for name in sorted({a for r in records.values() for a in r}):
        per_arm[name] = [ArmOutcome.from_json(records[i][name]) for i in ids
                         if name in records[i]]
    solos = [f"solo:{a.id}" for a in team.agents]
    if all(s in per_arm for s in solos) and chosen - {"team"}:
        if "oracle" in chosen:
            per_arm["oracle"] = _oracle(records, ids, solos)
        if "best-solo" in chosen:
            per_arm["best-solo"] = per_arm[f"solo:{best_member(team, records).id}"]
    arms: dict[str, Any] = {name: summarize(outcomes) for name, outcomes in per_arm.items()
                            if not name.startswith("solo:") or name in chosen}
    if "best-solo" in arms:
        arms["best-solo"]["member"] = best_member(team, records).id
        arms["best-solo"]["note"] = "the best member, chosen after the fact"
    if "self-consistency" in arms:
        arms["self-consistency"]["member"] = best_member(team, records).id
        arms["self-consistency"]["k"] = sc_k
    gap = None
    if "oracle" in arms and "team" in arms and arms["team"]["accuracy"] is not None:
        gap = round(arms["oracle"]["accuracy"] - arms["team"]["accuracy"], 4)
    items = [{"id": item.id, "level": item.level, "expected": item.expected,
              "arms": {a: records[item.id][a] for a in sorted(records[item.id])}}
             for item in suite.items if item.id in records]
    return {"suite": suite.name, "team": [a.label for a in team.agents],
            "arms": arms, "selection_gap": gap, "stopped": stopped,
            "items_total": len(suite.items), "items_scored": len(ids),
            "notes": notes, "items": items}
