"""One agent turn as a conversation: call the model until it makes a valid workflow call.

MCP tool calls loop inside the turn (run concurrently, results sent back). What real models
do wrong is read the way a careful human would, and noted on the agent:

- a tool call written as text (`{"tool": "vote", "arguments": {...}}`, in a code fence or in
  prose) is the call: models and servers without tool calling speak this, as the sampling
  backend does;
- a reply without any call gets one reminder. A text reply after the reminder never replaces
  an answer the agent already gave: from an agent with an answer it is "no change" (the
  caller's `standing` decision, e.g. a vote for its own answer); only from an agent with no
  answer yet may it become a first answer, and never when it is chatter ("Submitted.",
  "Done", "I have already answered": faithful.is_chatter);
- an invalid call gets the problems back as a tool error, up to `max_attempts_per_turn`.

Every provider call goes through `call_model`, which counts it against the run's `Budget`
(cancelled ones too, their prompt tokens estimated), redacts what it sends, and lets the run
refuse it when a budget is used up or the run is stopping.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

import anyio

from massgen_mcp.backends.sampling import parse_text_call
from massgen_mcp.coordination import prompts
from massgen_mcp.coordination.agent import AgentState
from massgen_mcp.coordination.budget import Budget
from massgen_mcp.coordination.faithful import is_chatter
from massgen_mcp.coordination.workflow import NEW_ANSWER, WORKFLOW_TOOLS, Decision
from massgen_mcp.errors import BackendError, TransientBackendError
from massgen_mcp.messages import (
    Message,
    Step,
    ToolCall,
    ToolSpec,
    Turn,
    Usage,
    at_step,
    new_call_id,
    tool_result,
    user,
)

#: A Decision, the problems to send back, or (str) why the turn gives no answer at all.
Check = Callable[[list[ToolCall]], "Decision | list[str] | str"]


def estimate_tokens(messages: list[Message], tools: list[ToolSpec]) -> int:
    """Prompt tokens of a request, about 4 characters each (for calls with no usage report)."""
    chars = sum(len(m.content) + sum(len(json.dumps(c.arguments, default=str))
                                     for c in m.tool_calls) for m in messages)
    chars += sum(len(t.description) + len(json.dumps(t.parameters)) for t in tools)
    return max(1, chars // 4)


def outgoing(messages: list[Message], redact: Callable[[str], str]) -> list[Message]:
    """`messages` as a provider may see them: every text redacted (the Redactor remembers
    long texts, so re-sending a conversation costs little)."""
    out = []
    for m in messages:
        text = redact(m.content) if m.content else m.content
        out.append(m if text == m.content else dataclasses.replace(m, content=text))
    return out


async def call_model(a: AgentState, messages: list[Message], tools: list[ToolSpec],
                     budget: Budget, step: Step | None = None) -> Turn:
    """One provider call, counted whatever happens to it; `step` is what function and test
    backends read as `current_step()`."""
    if not budget.starting_call(a):
        await anyio.lowlevel.checkpoint()  # the run is being cancelled: this raises
        raise BackendError("the run may make no more provider calls")
    deadline = budget.call_timeout_seconds
    if budget.redact is not None:
        messages = outgoing(messages, budget.redact)
    turn: Turn | None = None
    try:
        with anyio.move_on_after(deadline) as scope, at_step(step):
            turn = await a.backend.turn(messages, tools)
    except anyio.get_cancelled_exc_class():
        # The provider still computes (and bills) a call we stop listening to.
        estimate = estimate_tokens(messages, tools)
        budget.finished_call(a, Usage(input_tokens=estimate, calls=1, cancelled_calls=1,
                                     estimated_input_tokens=estimate))
        raise
    except BackendError as e:
        if e.status is not None or isinstance(e, TransientBackendError):
            budget.finished_call(a, Usage(calls=1))  # the provider was reached
        raise
    if turn is None or scope.cancelled_caught:
        # Past the deadline: a model that does not stop must not hold the whole team.
        estimate = estimate_tokens(messages, tools)
        budget.finished_call(a, Usage(input_tokens=estimate, calls=1, cancelled_calls=1,
                                     estimated_input_tokens=estimate))
        raise TransientBackendError(
            f"no reply within the {deadline:g}s deadline of one call (call_timeout_seconds; "
            "by default a third of the run's time limit)",
            provider=a.spec.provider.name, model=a.spec.model)
    a.add_native(turn.provider_data)
    u = turn.usage
    # A coding-agent CLI turn may make several model calls; it reports how many.
    budget.finished_call(a, Usage(u.input_tokens, u.output_tokens, calls=max(u.calls, 1),
                                 estimated_input_tokens=u.estimated_input_tokens))
    return turn


async def converse(
    a: AgentState,
    messages: list[Message],
    workflow_tools: list[ToolSpec],
    check: Check,
    budget: Budget,
    step: Step | None = None,
    standing: Decision | None = None,
) -> Decision | str:
    """Call the model until it makes a valid workflow call; MCP tool calls loop inside.

    Returns the Decision, or an error text when the agent used up its attempts. Provider
    errors propagate (`BackendError`). `standing`: what a text reply after the reminder
    means from an agent that already has an answer (None: nothing, the turn fails).
    """
    tool_calls_left = budget.max_tool_calls_per_turn
    invalid, reminded = 0, False
    workflow_names = {t.name for t in workflow_tools}
    while True:
        mcp_tools = a.toolbox.tools if a.toolbox and tool_calls_left > 0 else []
        offered = [*workflow_tools, *mcp_tools]
        turn = await call_model(a, messages, offered, budget, step)
        calls, native = list(turn.tool_calls), True
        if not calls and turn.text.strip():
            written = parse_text_call(turn.text, {t.name for t in offered})
            if written is not None:
                calls, native = [written], False
                a.note(f"read a {written.name} call written as text")
        if not calls:
            if not reminded:
                reminded = True
                budget.emit("reminder", agent=a.spec.id)
                messages = [*messages, turn.as_message(), user(prompts.reminder(workflow_tools))]
                continue
            text = turn.text.strip()
            if a.answers:  # text never replaces an answer the agent gave
                if standing is None:
                    return "replied with text instead of calling new_answer, even after a " \
                           "reminder (its answer stands)"
                a.note(f"replied with text and no tool call, even after a reminder "
                       f"({text[:60]!r}): counted as no change, a vote for its own answer")
                return standing
            if NEW_ANSWER not in workflow_names or not text:
                return "did not call new_answer or vote, even after a reminder"
            if is_chatter(text):
                return (f"replied {text[:60]!r} (no answer and no tool call), even after a "
                        "reminder")
            calls, native = [ToolCall(new_call_id(), NEW_ANSWER, {"content": turn.text})], False
            a.note("took a text reply (no tool call after a reminder) as its first answer")
        if any(c.name in WORKFLOW_TOOLS for c in calls):
            outcome = check(calls)
            if isinstance(outcome, str):
                return outcome
            if isinstance(outcome, Decision):
                if outcome.note:
                    a.note(outcome.note)
                return outcome
            problems = outcome
        else:
            unknown = [c for c in calls if not (a.toolbox and a.toolbox.owns(c.name))]
            # A malformed call (e.g. Gemini's MALFORMED_FUNCTION_CALL) may have lost its
            # name: say what was wrong with it rather than "unknown tool".
            problems = [f"your tool call was malformed: {c.arguments_error}"
                        if c.arguments_error else
                        f"unknown tool {c.name!r}; available: "
                        f"{', '.join(sorted(workflow_names))}" for c in unknown]
            if not problems:
                for c in calls:
                    if c.repaired:
                        a.note(f"{c.name} arguments: {c.repaired}")
                results = await _run_tools(a, calls, tool_calls_left, budget)
                tool_calls_left -= len(calls)
                messages = [*messages, *_replay(turn, calls, native, results)]
                continue
        invalid += 1
        budget.emit("invalid_call", agent=a.spec.id, problems=problems, attempt=invalid)
        if invalid >= budget.max_attempts_per_turn:
            return (f"no valid new_answer/vote after {invalid} attempts; last problem: "
                    f"{problems[0]}")
        error_text = "Not accepted: " + " | ".join(problems)
        skipped = "Not run: fix the problems reported for the other call first."
        results = [tool_result(c, skipped if a.toolbox and a.toolbox.owns(c.name) else error_text,
                               is_error=True) for c in calls]
        messages = [*messages, *_replay(turn, calls, native, results)]


def _replay(turn: Turn, calls: list[ToolCall], native: bool,
            results: list[Message]) -> list[Message]:
    """The reply and what came of its calls, as the next request's messages. Calls the model
    only wrote as text are answered in text: a server without tool calling cannot take
    tool messages."""
    if native:
        return [turn.as_message(), *results]
    text = "\n\n".join(f"Result of {r.name}{' (error)' if r.is_error else ''}: {r.content}"
                       for r in results)
    return [Message(role="assistant", content=turn.text), user(text)]


async def _run_tools(a: AgentState, calls: list[ToolCall], calls_left: int,
                     budget: Budget) -> list[Message]:
    """Run one reply's MCP tool calls concurrently; each becomes a tool result message."""
    assert a.toolbox is not None
    toolbox = a.toolbox
    results: list[Message | None] = [None] * len(calls)

    async def one(i: int, call: ToolCall) -> None:
        if i >= calls_left:
            results[i] = tool_result(call, "Not run: the tool-call limit for this turn is "
                                     "reached. Call new_answer or vote now.", is_error=True)
            return
        text, is_error = await toolbox.call(call)
        budget.emit("tool_call", agent=a.spec.id, tool=call.name, is_error=is_error)
        results[i] = tool_result(call, text, is_error=is_error)

    async with anyio.create_task_group() as tg:
        for i, call in enumerate(calls):
            tg.start_soon(one, i, call)
    return [r for r in results if r is not None]
