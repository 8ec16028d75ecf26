"""Package-manager settings that point installs at another source (round 6).

Every later install fetches and runs code from wherever the package manager is told to
look, so changing that place is gated whatever the spelling: a config subcommand (`npm
set registry`, `conda config --add channels`, `gem sources --add`, `go env -w GOPROXY=`,
`bundle config mirror.X`, `composer config repositories.X`, `poetry source add`, `dotnet
nuget add source`), an install option naming a registry URL (`npm i --registry URL`,
`conda install -c https://..`), or an environment variable set for the command or exported
(`UV_INDEX_URL=.. uv pip install`, `export PIP_INDEX_URL=..`). `npm`/`yarn`/`pnpm config
set` and `pip config set|unset|edit` change user-wide settings whatever the key: they are a
supply-chain finding of their own (`config_switch`, reported by `cli_rules.py`), the rest
is code the hook cannot see (`switches_source`, reported by `capability.py`). Standard
library only.
"""

from __future__ import annotations

import re

from massgen_mcp.hook.command import SimpleCommand
from massgen_mcp.regex import lazy

#: Environment variables naming where packages (or their checksums) come from.
_SOURCE_VARS = lazy(
    r"^(PIP_(INDEX_URL|EXTRA_INDEX_URL|TRUSTED_HOST|FIND_LINKS)|UV_(INDEX_URL|EXTRA_INDEX_URL"
    r"|DEFAULT_INDEX|INDEX|FIND_LINKS|INSECURE_HOST)|(?i:npm_config_registry)"
    r"|(?i:npm_config_@[\w-]+:registry)|YARN_(NPM_REGISTRY_SERVER|REGISTRY)|GOPROXY|GOSUMDB"
    r"|GONOSUMDB|GONOSUMCHECK|GOINSECURE|CARGO_REGISTRIES_\w+"
    r"|CARGO_REGISTRY_\w+|CARGO_SOURCE_\w+|BUNDLE_MIRROR__\w+|GEM_SOURCE|CONDA_CHANNELS"
    r"|CONDA_CHANNEL_ALIAS|POETRY_REPOSITORIES_\w+|PDM_PYPI_URL|COMPOSER_REPOSITORIES"
    r"|NUGET_\w*SOURCE\w*|HEX_MIRROR|HEX_REPO_URL)$")
_GO_KEYS = lazy(r"^(GOPROXY|GOSUMDB|GONOSUMDB|GONOSUMCHECK|GOINSECURE)=")
_NODE = frozenset({"npm", "yarn", "pnpm", "bun"})
_CONDA = frozenset({"conda", "mamba", "micromamba"})
_PYPI = frozenset({"pip", "pip3", "uv", "uvx", "pipx", "pdm", "poetry", "hatch", "rye"})
_INDEX_OPTIONS = frozenset({"-i", "--index", "--index-url", "--default-index", "--extra-index-url",
                            "-f", "--find-links", "--trusted-host", "--pip-args"})
_ELSEWHERE = lazy(r"://|^[/~.]|^file:")


def switches_source(cmd: SimpleCommand) -> list[str]:
    """Why `cmd` changes where packages are installed from (empty: it does not)."""
    program, args = cmd.program, cmd.args
    pos = cmd.positionals()
    reasons = [f"{program} points installs at another source ({why})"
               for why in _why(program, args, pos)]
    env = [k for k in cmd.env if _SOURCE_VARS.match(k)]
    if program in ("export", "declare", "typeset", "setenv", "launchctl"):
        env += [a.split("=", 1)[0] for a in pos if _SOURCE_VARS.match(a.split("=", 1)[0])
                and ("=" in a or program == "setenv")]
    reasons += [f"{env[0]} changes where packages are installed from"] if env else []
    return reasons


def config_switch(program: str, pos: list[str]) -> str | None:
    """Why a package manager's own config command changes every project's installs (None:
    it does not). pip run as `python -m pip` is judged as pip (`SimpleCommand.python_module`)."""
    if program in ("npm", "yarn", "pnpm") and pos[:2] == ["config", "set"]:
        # the registry, the shell scripts run with, node's options: settings for every project
        return (f"{program} config set changes how every project's packages are fetched "
                "and their scripts run")
    if program in ("pip", "pip3") and pos[:1] == ["config"] and any(
            p in ("set", "unset", "edit") for p in pos[1:2]):
        return f"{program} config {pos[1]} changes where every project's packages come from"
    return None


def _why(program: str, args: list[str], pos: list[str]) -> list[str]:
    low = [a.lower() for a in args]
    if program in _NODE:
        if pos[:1] == ["set"] or pos[:2] in (["c", "set"], ["config", "edit"]):
            return [" ".join(pos[:2])]
        if any(a.split("=", 1)[0] in ("--registry", "--@registry") or re.match(
                r"--@[\w-]+:registry", a) for a in args):
            return ["--registry"]
    if program in _PYPI and (found := [a.split("=", 1)[0] for a in args if a.split("=", 1)[
            0] in _INDEX_OPTIONS and any(_ELSEWHERE.search(v) for v in _values(args, (a.split(
                "=", 1)[0],)))]):
        return [found[0]]
    if program in _CONDA and pos[:1] == ["config"] and (any(
            a.split("=", 1)[0] in ("--add", "--append", "--prepend", "--set", "--file")
            for a in low) or pos[1:2] in (["append"], ["prepend"], ["set"])) and any(
            ("channel" in a and "channel_priority" not in a) or a == "--file" for a in low):
        return ["conda config"]
    if program in _CONDA and any(_ELSEWHERE.search(v) for v in _values(args, ("-c", "--channel"))):
        return ["a channel outside the usual ones"]
    if program == "gem" and (pos[:1] == ["sources"] and any(
            a in ("-a", "--add") or a.startswith("--add=") for a in args)):
        return ["gem sources --add"]
    if program == "gem" and _values(args, ("-s", "--source", "--clear-sources")):
        return ["gem --source"]
    if program == "go" and pos[:1] == ["env"] and any(_GO_KEYS.match(p) for p in pos[1:]):
        return ["go env -w"]
    if program == "bundle" and pos[:1] == ["config"] and any(
            "mirror" in a or a.startswith(("source", "BUNDLE_MIRROR")) for a in low):
        return ["bundle config mirror"]
    if program == "composer" and pos[:1] == ["config"] and any(
            a.startswith(("repositories", "repo.", "secure-http")) for a in low):
        return ["composer config repositories"]
    if program in ("poetry", "pdm", "hatch") and (pos[:2] == ["source", "add"] or (
            pos[:1] == ["config"] and any(re.match(r"(repositories|pypi)\.", p) for p in pos))):
        return [" ".join(pos[:2])]
    if program == "cargo" and any(re.search(r"(registr|source\.|replace-with|net\.)", v)
                                  for v in _values(args, ("--config",))):
        return ["cargo --config"]
    if (program == "nuget" and pos[:2] == ["sources", "add"]) or (
            program == "dotnet" and pos[:3] in (["nuget", "add", "source"],
                                                ["nuget", "update", "source"])):
        return ["a NuGet source"]
    return []


def _values(args: list[str], names: tuple[str, ...]) -> list[str]:
    """Values of options (`-c X`, `--channel=X`); a flag without a value counts as ''."""
    out: list[str] = []
    for i, a in enumerate(args):
        if a in names:
            out.append(args[i + 1] if i + 1 < len(args) else "")
        elif "=" in a and a.split("=", 1)[0] in names:
            out.append(a.split("=", 1)[1])
    return out
