"""`massgen-mcp hook pre-tool-use`: hold a Claude Code agent to the safety policy and its plan.

Reads Claude Code's PreToolUse JSON on stdin; answers with Claude Code's hook JSON on
stdout (exit 0), or prints nothing for "no opinion":

0. A call on the hard line (`hardline.py`: deleting home, root, a system tree or `.git`,
   writing a device, touching the guard's key, state, settings or program, reading or
   sending a secret, the operator's additions) is denied, whatever the plan says.
1. With an active checkpoint plan for the workspace, a *gated* call (one matching a
   dangerous pattern, an MCP tool the plan approves, a Bash command of the same kind as
   an approved one, or a write to a file the plan approves writing) is allowed if it
   matches an approved action, rollback or compensation (placeholders
   `<executor-fills: ...>` match any value), and denied otherwise, naming the plan step
   to follow.
2. Without a plan, a call matching a dangerous pattern is denied (`--mode deny`, the
   default) or put to the user (`--mode ask`), with a reason that says to call the
   `checkpoint` MCP tool first and names the policy group.
3. Anything else: no output, exit 0.

Only a plan written by this user's massgen-mcp counts: it must carry a valid signature
(see `active.py`), so a `.massgen/` committed to a repository or written by the agent
cannot pre-approve anything.

Options (flags win over environment variables):
  --mode deny|ask         MASSGEN_HOOK_MODE       default deny
  --on-error deny|allow   MASSGEN_HOOK_ON_ERROR   default deny (fail closed)

Fail closed by default: a guard that waves calls through whenever its input or state is
unreadable would let `rm -rf ~` pass on the one day something is off. The decision is made
in a forked child that gets DEADLINE_S (2 s): a hang of any kind is a failure too. With `deny`, a
malformed input or internal error prints a deny decision with the cause (and the cause on
stderr). With `allow`, the hook prints the cause on stderr and exits 1, which Claude Code
shows as a non-blocking hook error: the call then goes through Claude Code's normal
permission rules. `allow` never grants a permission; it only withholds an opinion.

Standard library only (plus this package's stdlib-only modules): it runs before every
matched tool call, so it must not import pydantic, the server or any provider SDK.
"""

from __future__ import annotations

import json
import os
import sys

from massgen_mcp.hook.active import StateFileError, load_active_plan
from massgen_mcp.hook.hardline import RecordingScope, call_findings
from massgen_mcp.hook.matching import PLACEHOLDER, call_matches, same_tool, value_matches
from massgen_mcp.hook.patterns import WRITE_TOOLS, check_call
from massgen_mcp.hook.policy import Finding
from massgen_mcp.hook.scope import is_under
from massgen_mcp.hook.shell import command_head, simple_commands

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs the hook ~8 ms of start-up
    from collections.abc import Callable
    from typing import Any

MODE_ENV = "MASSGEN_HOOK_MODE"
ON_ERROR_ENV = "MASSGEN_HOOK_ON_ERROR"
MODES = ("deny", "ask")
ON_ERROR = ("deny", "allow")
_PREFIX = "massgen-mcp checkpoint guard"
#: A decision not made within this many seconds is a deny: Claude Code treats a hook that
#: times out as a non-blocking error, so a hanging hook would let the call through.
DEADLINE_S = 2.0


class HookInputError(ValueError):
    """The hook input is not a Claude Code PreToolUse event."""


def parse_input(raw: str) -> tuple[str, dict[str, Any], str]:
    """(tool_name, tool_input, cwd) from the PreToolUse JSON, or HookInputError."""
    if not raw.strip():
        raise HookInputError("stdin is empty; expected Claude Code's PreToolUse JSON")
    try:
        event = json.loads(raw)
    except json.JSONDecodeError as e:
        raise HookInputError(f"stdin is not JSON ({e.msg} at line {e.lineno} column "
                             f"{e.colno})") from None
    if not isinstance(event, dict):
        raise HookInputError("stdin JSON is not an object")
    name = event.get("hook_event_name", "PreToolUse")
    if name != "PreToolUse":
        raise HookInputError(f"hook_event_name is {name!r}; this hook handles PreToolUse")
    tool, tool_input = event.get("tool_name"), event.get("tool_input")
    if not isinstance(tool, str) or not tool:
        raise HookInputError("tool_name is missing or not a string")
    if not isinstance(tool_input, dict):
        raise HookInputError("tool_input is missing or not an object")
    cwd = event.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise HookInputError("cwd is not a string")
    return tool, tool_input, cwd or os.getcwd()


def _heads(command: str) -> set[str]:
    return {command_head(c) for c in simple_commands(PLACEHOLDER.sub("X", command))}


def _related(entry: dict[str, Any], tool: str, tool_input: dict[str, Any], base: str) -> bool:
    """Is the call the same kind of thing as an approved call (so the plan governs it)?"""
    if not same_tool(entry["tool"], tool):
        return False
    args = entry.get("args") or {}
    if tool == "Bash":
        approved, actual = args.get("command"), tool_input.get("command")
        return (isinstance(approved, str) and isinstance(actual, str)
                and bool(_heads(approved) & _heads(actual)))
    if tool in WRITE_TOOLS:
        key = WRITE_TOOLS[tool]
        return key in args and value_matches(args[key], tool_input.get(key), key=key, base=base)
    return True


def _workspace(cwd: str, planned: str | None) -> str:
    """The workspace the path rules use: Claude Code's project dir (else the cwd).

    A plan's workspace may only narrow it (a directory inside), never widen it: state a
    repository can write must not turn `rm -rf <project>` into ordinary work.
    """
    base = os.path.realpath(os.environ.get("CLAUDE_PROJECT_DIR") or cwd)
    if planned and is_under(planned, base):
        return planned
    return base


def _describe_call(entry: dict[str, Any]) -> str:
    args = entry.get("args") or {}
    if entry["tool"] == "Bash" and isinstance(args.get("command"), str):
        return f"Bash `{args['command']}`"
    return f"{entry['tool']} {json.dumps(args, ensure_ascii=False)[:300]}"


def _step_label(entry: dict[str, Any]) -> str:
    role = "" if entry["role"] == "action" else f"{entry['role']} of "
    goal = f", goal {entry['goal_id']}" if entry.get("goal_id") else ""
    return f"{role}step {entry['step']} ({entry['kind']}{goal})"


def _findings_text(findings: list[Finding]) -> str:
    return "; ".join(f.describe() for f in findings)


def decide(tool: str, tool_input: dict[str, Any], cwd: str, mode: str) -> tuple[str, str] | None:
    """(decision, reason) for one call, or None for no opinion."""
    workspace, plan, problem = load_active_plan(cwd)
    if problem:
        print(f"massgen-mcp hook: {problem}", file=sys.stderr)
    scope = RecordingScope.record(cwd, _workspace(cwd, workspace))
    findings = check_call(tool, tool_input, scope)
    root = (plan or {}).get("checkpoints_root")
    hard = call_findings(tool, tool_input, scope, findings,
                         (root,) if isinstance(root, str) else ())
    if hard:
        return "deny", (
            f"{_PREFIX}: {_findings_text(hard)}. This is on the hardline policy, which no "
            "checkpoint plan can approve; do not try another way to do it. If it truly must "
            "happen, ask the user to do it themselves.")
    approved = [e for e in (plan or {}).get("approved", []) if isinstance(e, dict)]
    if plan and approved:
        base = str(plan.get("workspace") or scope.workspace)  # approved paths are relative to it
        related = [e for e in approved if _related(e, tool, tool_input, base)]
        if findings or related:
            return _plan_decision(plan, approved, related, findings, tool, tool_input, base)
    if not findings:
        return None
    if mode == "ask":
        return "ask", (f"{_PREFIX}: {_findings_text(findings)}. No checkpoint plan approves "
                       "this call. Allow it?")
    return "deny", (
        f"{_PREFIX}: this call matches the safety policy: {_findings_text(findings)}. It "
        "needs a safety checkpoint "
        "first: call the massgen `checkpoint` MCP tool with your objective and this action "
        "as an action goal (call `checkpoint_init` first if this workspace has no "
        "checkpoint session), then follow the plan it returns. The approved call will be "
        "allowed.")


def _plan_decision(plan: dict[str, Any], approved: list[dict[str, Any]],
                   related: list[dict[str, Any]], findings: list[Finding], tool: str,
                   tool_input: dict[str, Any], base: str) -> tuple[str, str]:
    checkpoint = plan.get("checkpoint_id", "?")
    for entry in approved:
        if call_matches(entry["tool"], entry.get("args"), tool, tool_input, base=base):
            return "allow", (f"{_PREFIX}: approved by checkpoint {checkpoint}, "
                             f"{_step_label(entry)}: {entry.get('description', '')}")
    target = (related or [e for e in approved if same_tool(e["tool"], tool)]
              or [e for e in approved if e["role"] == "action"] or approved)[0]
    step: dict[str, Any] = next(
        (s for s in plan.get("steps", []) if s.get("step") == target["step"]), {})
    after = ", ".join(p.split(":", 1)[-1].split(".", 1)[0] for p in step.get("preconditions", []))
    why = f" Safety policy: {_findings_text(findings)}." if findings else ""
    return "deny", (
        f"{_PREFIX}: this call is not an approved action of the active checkpoint plan "
        f"{checkpoint} (objective: {plan.get('objective', '?')}).{why} Follow "
        f"{_step_label(target)}: {target.get('description', '')}; it approves "
        f"{_describe_call(target)}" + (f", after steps {after} succeeded" if after else "")
        + ". Make exactly that call (values written <executor-fills: ...> are yours to "
        "fill), or call `checkpoint` again if the plan no longer fits.")


def _output(decision: str, reason: str) -> str:
    return json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                              "permissionDecision": decision,
                                              "permissionDecisionReason": reason}})


def _choice(flag: str | None, env: str, allowed: tuple[str, ...]) -> str:
    if flag:
        return flag
    value = os.environ.get(env, "").strip().lower()
    if value and value not in allowed:
        print(f"massgen-mcp hook: ignoring {env}={value!r} (expected {' or '.join(allowed)})",
              file=sys.stderr)
        value = ""
    return value or allowed[0]


_USAGE = """usage: massgen-mcp hook pre-tool-use [--mode deny|ask] [--on-error deny|allow]

Claude Code PreToolUse hook: reads the event JSON on stdin, prints the decision JSON.
  --mode deny|ask         dangerous calls without an approving plan (MASSGEN_HOOK_MODE;
                          default deny)
  --on-error deny|allow   malformed input or internal error (MASSGEN_HOOK_ON_ERROR;
                          default deny = fail closed; allow = exit 1, no decision)
"""


def _parse_args(argv: list[str]) -> dict[str, str]:
    """Flags by hand: argparse costs the hook's hot path several milliseconds."""
    if argv[:1] == ["pre-tool-use"]:
        argv = argv[1:]  # `python -m ... pre-tool-use`; the CLI has consumed it already
    options: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            sys.stdout.write(_USAGE)
            raise SystemExit(0)
        name, _, value = arg.partition("=")
        if name not in ("--mode", "--on-error"):
            raise _usage_error(f"unknown argument {arg!r}")
        if not value:
            i += 1
            value = argv[i] if i < len(argv) else ""
        allowed = MODES if name == "--mode" else ON_ERROR
        if value not in allowed:
            raise _usage_error(f"{name} must be {' or '.join(allowed)}, not {value!r}")
        options[name] = value
        i += 1
    return options


def _usage_error(message: str) -> SystemExit:
    print(f"{_USAGE}massgen-mcp hook: error: {message}", file=sys.stderr)
    return SystemExit(2)  # exit 2 blocks the call in Claude Code: a broken setup is loud


def main(argv: list[str] | None = None) -> int:
    """Entry point of `massgen-mcp hook pre-tool-use [--mode ...] [--on-error ...]`.

    `argv` may start with `pre-tool-use` (as in `python -m massgen_mcp.hook.main
    pre-tool-use`) or hold only the options (as passed by the CLI). The decision is made
    within DEADLINE_S seconds or it is a failure (deny, by default).
    """
    options = _parse_args(sys.argv[1:] if argv is None else list(argv))
    mode = _choice(options.get("--mode"), MODE_ENV, MODES)
    on_error = _choice(options.get("--on-error"), ON_ERROR_ENV, ON_ERROR)
    code, out = _within_deadline(lambda: _run(mode, on_error), on_error)
    if out:
        sys.stdout.write(out)
    return code


def _run(mode: str, on_error: str) -> tuple[int, str]:
    """(exit code, stdout text) of one hook call."""
    try:
        tool, tool_input, cwd = parse_input(sys.stdin.read())
        result = decide(tool, tool_input, cwd, mode)
    except HookInputError as e:
        return _fail(on_error, f"malformed hook input: {e}")
    except StateFileError as e:
        return _fail(on_error, f"unusable checkpoint state: {e}")
    except Exception as e:  # the on-error policy must decide, never a traceback
        return _fail(on_error, f"internal error: {type(e).__name__}: {e}")
    return 0, (_output(*result) + "\n") if result is not None else ""


def _within_deadline(run: Callable[[], tuple[int, str]], on_error: str) -> tuple[int, str]:
    """`run()` in a forked child, given DEADLINE_S seconds: whatever hangs (a FIFO, a lock,
    a pathological pattern, stdin never closed), the parent answers in time."""
    if not hasattr(os, "fork"):
        return run()
    import select
    import time

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child decides; it must never return into the caller's code
        os.close(read_end)
        try:
            result = run()
            data = f"{result[0]}\n{result[1]}".encode()
            while data:
                data = data[os.write(write_end, data):]
        finally:
            sys.stderr.flush()
            os._exit(0)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    done = False
    try:
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([read_end], [], [], left)[0]:
                break
            chunk = os.read(read_end, 65536)
            if not chunk:
                done = True
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        if not done:
            import signal

            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    text = b"".join(chunks).decode("utf-8", errors="replace")
    status, sep, out = text.partition("\n")
    if not done or not sep or not status.isdigit():
        why = (f"no decision within {DEADLINE_S:g} s" if not done
               else "the deciding process ended without a decision")
        return _fail(on_error, why)
    return int(status), out


def _fail(on_error: str, message: str) -> tuple[int, str]:
    print(f"massgen-mcp hook: {message}", file=sys.stderr)
    if on_error == "allow":
        return 1, ""
    reason = (f"{_PREFIX} could not check this call ({message}), and it fails closed. Fix "
              "the cause, or run the hook with --on-error allow.")
    return 0, _output("deny", reason) + "\n"


if __name__ == "__main__":
    sys.exit(main())
