"""Checkpoints: reviewer-team safety plans for risky phases, and the hook that enforces them.

    policy.py       the built-in safety policy (eight groups), `Finding`, criteria merging
    patterns.py     dangerous patterns of one tool call, each tied to a policy group:
      bash_rules.py   Bash commands (rm, SQL, secrets, network, pipes to a shell, ...)
      git_rules.py    git (force-push to shared branches, reset --hard, clean, ...)
      cli_rules.py    infrastructure, cloud, containers, GitHub, packages
      shell.py        a small shell lexer;  scope.py  where a path points
    matching.py     does a call match an approved action (placeholders, MCP names)
    plan.py         the checkpoint plan schema and `validate_checkpoint_plan`
    plan_format.py  `CheckpointAnswerFormat` (structured new_answer), rules, rendering
    session.py      per-workspace sessions and the audit trail `ckpt_NNN/`
    active.py       the active plan of a workspace (written by session.py, read by the hook)
    prompt.py       `review_task`: the task text reviewers get
    hook.py         `massgen-mcp hook pre-tool-use` (Claude Code PreToolUse)
    setup.py        `massgen-mcp setup`: client registration, hook entry, instructions block

The hook's modules (hook, active, matching, patterns and the rule modules, policy, scope,
shell) use the standard library only.

This package imports nothing on purpose: the hook runs before every matched tool call and
must not pay for pydantic, the server or any provider SDK. Import the submodules directly.
"""
