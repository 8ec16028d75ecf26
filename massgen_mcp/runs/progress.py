"""One line of human text per run event, for MCP progress messages and the CLI's stderr."""

from __future__ import annotations

import json
from typing import Any

_QUIET = frozenset({"turn_started", "reminder"})


def describe_event(line: dict[str, Any]) -> str:
    """A short message such as `agent2 answered (2/3)`; "" for events not worth showing."""
    if line.get("message"):
        return str(line["message"])
    kind = line.get("kind", "")
    if kind in _QUIET:
        return ""
    if kind == "run_started":
        from massgen_mcp.config.providers import short_model

        agents = ", ".join(f"{a['agent']} ({a['provider']}/{short_model(str(a['model']))})"
                           for a in line.get("agents", []))
        return f"started: {agents}"
    if kind == "restart":
        return f"restart: {', '.join(line.get('agents', []))} look again at the new answer"
    if kind == "vote_ignored":
        return f"{line.get('agent')}: stale vote ignored"
    if kind == "invalid_call":
        return f"{line.get('agent')}: invalid call ({'; '.join(line.get('problems', []))[:200]})"
    if kind == "tool_call":
        return f"{line.get('agent')} used {line.get('tool')}" + (
            " (error)" if line.get("is_error") else "")
    if kind == "presentation_done":
        return "final answer presented" if line.get("presented") else (
            "the winner's last answer is the final answer (its final presentation did not "
            "come)")
    if kind == "timeout":
        return (f"time limit reached: the run stops after {float(line.get('seconds') or 0):g} s "
                "and keeps what the agents have so far")
    if kind == "run_finished":
        return f"finished: {line.get('status')}"
    details = {k: v for k, v in line.items() if k not in ("seq", "ts", "kind", "t")}
    return f"{kind.replace('_', ' ')}: {json.dumps(details, default=str)[:200]}"
