"""What an eval runs with, settled before any item: the arms, where scored items are kept,
the team (from the configuration, or from a recording when replaying) and its prices."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from massgen_mcp.errors import InputError

if TYPE_CHECKING:
    from massgen_mcp.config.team import Team
    from massgen_mcp.eval.suites import Suite

ARMS = ("solo", "best-solo", "self-consistency", "team", "oracle")


@dataclass
class EvalOptions:
    """What `massgen-mcp eval` takes (see its --help)."""

    suite: str
    models: str | None = None
    team: str | None = None
    arms: list[str] | None = None
    limit: int | None = None
    max_cost_usd: float | None = None
    concurrency: int = 2
    record: Path | None = None
    replay: Path | None = None
    seed: int = 0
    checker: str | None = None
    state_dir: Path | None = None
    fresh: bool = False
    levels: tuple[int, ...] | None = None


def choose_arms(asked: list[str] | None, team: Team) -> set[str]:
    ids = [a.id for a in team.agents]
    if not asked:
        return {*(f"solo:{i}" for i in ids), "best-solo", "self-consistency", "team", "oracle"}
    chosen: set[str] = set()
    for name in asked:
        if name == "solo":
            chosen |= {f"solo:{i}" for i in ids}
        elif name.startswith("solo:"):
            if name[5:] not in ids:
                raise InputError(f"--arms: {name}: the team has no agent {name[5:]!r} "
                                 f"(its agents: {', '.join(ids)})")
            chosen.add(name)
        elif name in ARMS:
            chosen.add(name)
        else:
            raise InputError(f"--arms: unknown arm {name!r}; the arms are solo, "
                             "solo:<agent_id>, best-solo, self-consistency, team, oracle")
    return chosen


def eval_dir(options: EvalOptions, suite: Suite, team: Team, arms: set[str],
              cassette: Path | None) -> Path:
    """Where scored items are kept: inside the recording, a fresh temporary place for a
    replay (a replay always re-scores), else under the state directory by fingerprint."""
    import tempfile

    if options.replay:
        return Path(tempfile.mkdtemp(prefix="massgen-eval-replay-"))
    if options.record:
        home = options.record
    else:
        from massgen_mcp.paths import state_dir

        ident = json.dumps([suite.name, [i.id for i in suite.items],
                            [(a.id, a.provider.name, a.model) for a in team.agents],
                            sorted(arms)])
        digest = hashlib.sha256(ident.encode()).hexdigest()[:12]
        home = (options.state_dir or state_dir()) / "evals" / f"{suite.name}-{digest}"
    if options.fresh and (home / "items.jsonl").exists():
        (home / "items.jsonl").unlink()
    home.mkdir(parents=True, exist_ok=True)
    return home


def write_team(cassette: Path, team: Team) -> None:
    from massgen_mcp.config.prices import FREE, agent_price
    from massgen_mcp.paths import write_atomic

    data = {"name": team.name, "source": team.source,
            "orchestrator": team.orchestrator.model_dump(mode="json"),
            "agents": [{"id": a.id, "provider": a.provider.name, "model": a.model,
                        "system_message": a.system_message,
                        "local": agent_price(a) == FREE} for a in team.agents]}
    write_atomic(cassette / "team.json", json.dumps(data, indent=2, sort_keys=True))


def team_from_cassette(cassette: Path) -> Team:
    from massgen_mcp.config.orchestration import OrchestratorConfig
    from massgen_mcp.config.providers import PROVIDERS, Provider
    from massgen_mcp.config.team import AgentSpec, BackendConfig
    from massgen_mcp.config.team import Team as TeamType

    data = json.loads((cassette / "team.json").read_text(encoding="utf-8"))
    agents = []
    for a in data["agents"]:
        provider = PROVIDERS.get(a["provider"]) or Provider(a["provider"], "function")
        if a.get("local"):  # priced as it was recorded: free (a server on that machine)
            provider = dataclasses.replace(provider, local=True)
        agents.append(AgentSpec(a["id"], provider, a["model"],
                                BackendConfig.model_validate({"type": "function",
                                                              "model": a["model"]}),
                                None, None, a.get("system_message")))
    return TeamType(data["name"], tuple(agents),
                    OrchestratorConfig.model_validate(data["orchestrator"]),
                    f"replay:{cassette}")


def prices_of(team: Team, budget: float | None) -> dict[str, Any]:
    from massgen_mcp.config.prices import agent_price

    prices = {a.id: agent_price(a) for a in team.agents}
    unknown = [a.label for a in team.agents if prices[a.id] is None]
    if budget is not None and unknown:
        raise InputError(f"--max-cost-usd cannot be enforced: no price is known for "
                         f"{', '.join(unknown)} (see list_backends for the price table)")
    return prices
