"""The demo team's agents: scripted, no key, no network, no model asked.

`massgen-mcp run "..." --team demo` shows a first-time user the whole flow of a run in about
a second: three answers, votes with reasons, one dissenting vote, the winner's final answer
and the run's record (viewer, report). Each agent plays a role named by its model::

    agents:
      - {id: brief, backend: {type: demo, model: brief}}
      - {id: careful, backend: {type: demo, model: careful}}
      - {id: contrarian, backend: {type: demo, model: contrarian}}

`brief` and `careful` vote for the careful answer, `contrarian` for its own (the dissent),
so `careful` wins 2 of 3. Every text says it is a demo, so no surface (CLI, viewer, tool
result) can pass it off as a model's answer. A short pause per turn lets the progress be
read as it happens. In a mode whose answer is not free text (a plan, a checkpoint plan) the
answer is generated from the mode's schema, as the test agent does.
"""

from __future__ import annotations

import re
from typing import Any

from massgen_mcp.backends.testing import SchemaAgentBackend, example
from massgen_mcp.messages import Message, Step, ToolSpec, Turn, current_step

#: What every demo text starts with.
LABEL = "demo: no model was asked"
#: Seconds each turn takes, so the progress lines come one by one: the answers arrive in
#: role order; the contrarian votes first, so its dissent is cast before the majority
#: decides the run (an early stop cancels the votes still outstanding).
ANSWER_PACE = {"brief": 0.1, "careful": 0.2, "contrarian": 0.3}
VOTE_PACE = {"contrarian": 0.05, "brief": 0.15, "careful": 0.25}
DEFAULT_PACE = 0.15

_ANSWERS = {
    "brief": "A short answer: the one-line version a fast model would give.",
    "careful": "A careful answer: the main point first, then the steps, then the caveats "
               "a reviewer would look for.",
    "contrarian": "A contrarian answer: it questions the premise of the task and proposes "
                  "a different approach.",
}
#: Whom each role votes for (by role), and why.
_VOTES = {
    "brief": ("careful", "it covers the steps and the caveats that my short answer leaves out"),
    "careful": ("careful", "it is the most complete; the short one skips the caveats"),
    "contrarian": ("contrarian", "the others accept the premise; mine questions it"),
}
_ROLE_OF_TEXT = {role: text.split(":")[0] for role, text in _ANSWERS.items()}
_SHOWN = re.compile(r"<(agent\d+)(?:\.\d+)?>\n(.*?)\n<end of ", re.DOTALL)


def demo_text(role: str, task: str, final: bool = False) -> str:
    """The text of a demo answer (or final answer) for `task`."""
    body = _ANSWERS.get(role, f"An answer from the '{role}' demo agent.")
    if final:
        body = ("The final answer, presented by the winner after the vote. "
                + body)
    return (f"({LABEL}: this is a scripted demo of a massgen-mcp run. Use a real team for a "
            f"real answer: --models, a provider key, a local server or --team clis.)\n\n"
            f"{body}\n\nThe task was: {' '.join(task.split())[:300]}")


class DemoBackend(SchemaAgentBackend):
    """One scripted demo agent; its model names its role. It makes the test agent's moves,
    paced, with its role's texts and votes."""

    name = "demo"

    async def turn(self, messages: list[Message], tools: list[ToolSpec]) -> Turn:
        import anyio

        step = current_step() or Step("coordinate")
        pace = VOTE_PACE if step.answered and not step.presenting else ANSWER_PACE
        await anyio.sleep(pace.get(self.model, DEFAULT_PACE))
        return await super().turn(messages, tools)

    def _no_tool_text(self) -> str:
        return f"({LABEL}) no workflow tool offered"

    def _answer(self, tool: ToolSpec, step: Step, prompt: str) -> dict[str, Any]:
        props = tool.parameters.get("properties", {})
        if set(props) == {"content"}:  # a free-text answer
            return {"content": demo_text(self.model, _task_of(prompt), step.presenting)}
        return dict(example(tool.parameters, f"{LABEL} {self.model}"))

    def _vote(self, step: Step, targets: list[str], prompt: str) -> dict[str, Any]:
        """The anonymous id of the answer this role votes for (found by the answer's
        opening words among the answers shown), else its own, else the first."""
        favourite, reason = _VOTES.get(self.model, (self.model, "it reads best to me"))
        # a free-text answer opens with its role's words; a structured one (a plan) carries
        # its role in its example text
        marks = [m for m in (_ROLE_OF_TEXT.get(favourite, ""), f"{LABEL} {favourite}") if m]
        own = (step.own_label or "").split(".")[0]
        target = own if own in targets else targets[0]
        for label, text in _SHOWN.findall(prompt):
            if any(m in text for m in marks) and label in targets:
                target = label
                break
        return {"agent_id": target, "reason": f"({LABEL}) {reason}"}


def _task_of(prompt: str) -> str:
    """The task as the coordination prompt states it (the prompt's first paragraph)."""
    match = re.search(r"<ORIGINAL MESSAGE>\n(.*?)\n</ORIGINAL MESSAGE>", prompt, re.DOTALL)
    return match.group(1) if match else prompt.split("\n\n", 1)[0]
