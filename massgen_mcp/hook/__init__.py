"""The Claude Code PreToolUse hook and the safety rules it applies (standard library only).

    main.py         `massgen-mcp hook pre-tool-use`: read the call, decide, print the verdict
    active.py       the signed active checkpoint plan of a workspace (written by the
                    checkpoint mode next to the key, read here; repository state only narrows;
                    sequence + nonce marks make a copied record worthless)
    statefile.py    safe reads of state files (regular, bounded, non-blocking) and atomic writes
    hardline.py     the hard line no plan can approve (system trees, devices, the guard
                    itself, secrets); hardline_paths.py: glob-aware path matching;
                    hardline_operator.py: the operator's additions
    policy.py       the built-in safety policy (eight groups), `Finding`, criteria merging
    patterns.py     dangerous patterns of one tool call, each tied to a policy group:
      bash_rules.py   Bash commands (SQL, secrets, network, pipes into interpreters, ...)
      file_rules.py   rm, mv, rsync --delete, shred, truncate, copying secrets
      interp_rules.py inline code of python -c, perl -e, node -e, ruby -e, awk, ...
                      (code_paths.py: the paths that code opens, folded or unknown)
      git_rules.py    git (force-push to shared branches, reset --hard, clean, ...)
      git_alias.py    what git runs through aliases and command-valued settings
      cli_rules.py    infrastructure, cloud, containers, GitHub, packages
      effect_rules.py sed scripts, environment dumps, find actions, devices, publishing,
                      credential printers
      capability.py   by capability, not name: wrappers and options that run a command,
                      (programs.py: the programs the hook knows)
                      unknown programs given code, package runners, scheduling
                      (editor_rules.py: editors run as scripts; registry_rules.py:
                      package sources switched by config, option or environment)
      sources.py      code from sources it cannot read: build files from <(..), URLs to
                      runners, pager/PS4 commands, cache ports, a remote DOCKER_HOST
      writers.py      programs that write through options or operands (sort -o, uniq OUT,
                      patch, ex scripts, awk print >, any --output, interpreter copies)
      reach_rules.py  by shape, whatever the program: command lines handed to unknown
                      programs, destructive verbs and task names, persistent places
                      (~/.bashrc, ~/.local/bin, /etc) as operands, HTTP DELETE, SQL files
      secret_search.py  searches and listings that print secrets (grep -r KEY over a
                      tree with .env files, find -name '.env*' -exec, xargs over ~/.config)
      lexer.py        shell lexing: quotes, substitutions, heredocs
      expand.py       the shell's expansions, done statically: braces, ~user, parameters,
                      fixed substitutions, globs (what stays unknown is gated)
      options.py      GNU long-option prefixes (`--rec`) resolved to the real options
      shell.py        shell analysis: keywords, pipelines, wrappers, `-c` strings, computed
                      program names, aliases;  command.py  what it produces
      channels.py     code reaching a shell another way: environment, written scripts, stdin
      scope.py        where a path points (workspace, private temp, links the line made)
    matching.py     does a call match an approved action (placeholders, MCP names)

This package imports nothing on purpose: the hook runs before every matched tool call and
must not pay for pydantic, the server or any provider SDK. Import the submodules directly.
"""
