"""Checkpoints: reviewer-team safety plans for risky phases, and the hook that enforces them.

    policy.py    the built-in safety policy (eight groups) and criteria merging
    shell.py     a small shell-command lexer for the hook's Bash rules
    scope.py     where a path points (workspace, temp, home, secrets, guardrail files)
    patterns.py  machine-checkable dangerous patterns, each tied to a policy group
    plan.py      the checkpoint plan schema, its validation, and the `new_answer` format
    session.py   per-workspace sessions and the audit trail `ckpt_NNN/`
    active.py    the active plan of a workspace (written by session.py, read by the hook)
    prompt.py    the task text reviewers get
    hook.py      `massgen-mcp hook pre-tool-use` (Claude Code PreToolUse)
    setup.py     `massgen-mcp setup`: client registration, hook entry, instructions block

This package imports nothing on purpose: the hook runs before every matched tool call and
must not pay for pydantic, the server or any provider SDK. Import the submodules directly.
"""
