"""The Claude Code PreToolUse hook and the safety rules it applies (standard library only).

    main.py         `massgen-mcp hook pre-tool-use`: read the call, decide, print the verdict
    active.py       the signed active checkpoint plan of a workspace (written by the
                    checkpoint mode, read here)
    policy.py       the built-in safety policy (eight groups), `Finding`, criteria merging
    patterns.py     dangerous patterns of one tool call, each tied to a policy group:
      bash_rules.py   Bash commands (rm, SQL, secrets, network, pipes to a shell, ...)
      git_rules.py    git (force-push to shared branches, reset --hard, clean, ...)
      cli_rules.py    infrastructure, cloud, containers, GitHub, packages
      shell.py        shell analysis;  scope.py  where a path points
    matching.py     does a call match an approved action (placeholders, MCP names)

This package imports nothing on purpose: the hook runs before every matched tool call and
must not pay for pydantic, the server or any provider SDK. Import the submodules directly.
"""
