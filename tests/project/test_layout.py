"""The package's import contract: data flows down the layers, nothing imports upward.

The layers and the ban on import cycles are import-linter contracts in `pyproject.toml`
(`[tool.importlinter]`, also run by `lint-imports`); lazy (function-level) and
`if TYPE_CHECKING:` imports count. What import-linter does not say is checked here, on every
module of `massgen_mcp` parsed (not imported), those same imports included:

- nothing imports a private (`_name`) module or name of another part;
- the PreToolUse hook imports the standard library and `massgen_mcp.paths`, nothing else;
- the package root imports nothing at start; only `App` reaches into the engine.

A part is a top-level module or package of `massgen_mcp` (`config`, `runs`, ...); the package
root (`massgen_mcp/__init__.py`, the Python API) is the part named "massgen_mcp".
"""

from __future__ import annotations

import ast
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "massgen_mcp"

#: What the hook may import of the package (it runs on every tool call of the client).
HOOK_MAY_IMPORT = {"massgen_mcp.paths", "massgen_mcp.regex"}  # standard library only, both


@dataclass(frozen=True)
class Import:
    source: str  # importing module, dotted
    target: str  # imported module, dotted (a name of a module resolved to that module)
    names: tuple[str, ...]
    line: int
    type_only: bool  # under `if TYPE_CHECKING:`

    def __str__(self) -> str:
        where = f"{self.source.replace('.', '/')}.py:{self.line}"
        return f"{where}: {self.source} -> {self.target} {list(self.names)}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def part_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(module: str, tree: ast.AST, type_only: bool = False) -> list[Import]:
    """Every import below `tree`, recursing into functions, classes and branches."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[Import] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                out += _imports(module, ast.Module(body=[child], type_ignores=[]), True)
            for child in node.orelse:
                out += _imports(module, ast.Module(body=[child], type_ignores=[]), type_only)
            continue
        if isinstance(node, ast.Import):
            out += [Import(module, a.name, (), node.lineno, type_only) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            names = tuple(a.name for a in node.names)
            submodules = [n for n in names if f"{target}.{n}" in MODULES]
            if submodules:  # `from massgen_mcp.runs import view`: an import of runs.view
                out += [Import(module, f"{target}.{n}", (), node.lineno, type_only)
                        for n in submodules]
                names = tuple(n for n in names if n not in submodules)
                if not names:
                    continue
            out.append(Import(module, target, names, node.lineno, type_only))
        out += _imports(module, node, type_only)
    return out


def all_imports() -> list[Import]:
    out = []
    for module, path in MODULES.items():
        out += _imports(module, ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return out


IMPORTS = all_imports()
OWN = [i for i in IMPORTS if i.target == "massgen_mcp" or i.target.startswith("massgen_mcp.")]


def test_the_import_linter_contracts_hold() -> None:
    """Layers (exhaustive: a new part needs its place) and no cycles at any depth. In a
    process of its own: import-linter configures logging, which other tests read."""
    import subprocess

    run = subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports; "
         "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))",
         str(PACKAGE.parent / "pyproject.toml")],
        cwd=PACKAGE.parent, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


def test_no_private_imports_across_parts() -> None:
    private = [str(i) for i in OWN if part_of(i.source) != part_of(i.target) and (
        any(p.startswith("_") and p != "__version__" for p in i.target.split(".")[1:])
        or any(n.startswith("_") and n != "__version__" for n in i.names))]
    assert private == [], "make the helper public where it belongs:\n" + "\n".join(private)


def test_the_hook_imports_the_standard_library_paths_and_regex_only() -> None:
    hook = [i for i in IMPORTS if part_of(i.source) == "hook" and not i.type_only]
    assert hook, "the hook's modules were not found"
    foreign = [str(i) for i in hook
               if not (i.target.split(".")[0] in sys.stdlib_module_names
                       or i.target in HOOK_MAY_IMPORT
                       or i.target.startswith("massgen_mcp.hook")
                       or i.target == "__future__")]
    assert foreign == [], "the hook must start fast with nothing but the standard library:\n" \
        + "\n".join(foreign)


def test_the_package_root_imports_nothing_at_start() -> None:
    """Importing `massgen_mcp.paths` runs the package's `__init__.py` first: on every tool
    call of the client, for the hook. Its API imports what it needs when called."""
    tree = ast.parse(MODULES["massgen_mcp"].read_text(encoding="utf-8"))
    at_start = [f"massgen_mcp/__init__.py:{node.lineno}" for node in tree.body
                if isinstance(node, ast.Import | ast.ImportFrom)
                and not (isinstance(node, ast.ImportFrom) and node.module == "__future__")]
    assert at_start == [], "import inside the function that needs it:\n" + "\n".join(at_start)


def test_the_contract_sees_lazy_and_type_only_imports() -> None:
    """The checks above read what they claim to read (a contract that parses nothing passes)."""
    lazy = ast.parse("def f():\n    from massgen_mcp.config.team import Team\n")
    guarded = ast.parse("if TYPE_CHECKING:\n    from massgen_mcp.app import App\n")
    [inner] = _imports("massgen_mcp.errors", lazy)
    [typed] = _imports("massgen_mcp.errors", guarded)
    assert (inner.target, inner.type_only) == ("massgen_mcp.config.team", False)
    assert (typed.target, typed.type_only) == ("massgen_mcp.app", True)
    assert len(OWN) > 300  # every module was read


def test_app_is_the_only_door() -> None:
    """The server, the CLI, the Python API and the evaluation call `App`: they never reach
    into its engine or the modes' stores (they may name a store's result types)."""
    callers = [m for m in MODULES if part_of(m) in ("server", "cli", "massgen_mcp", "eval")]
    reaches = [f"{m}:{node.lineno}: .engine" for m in callers
               for node in ast.walk(ast.parse(MODULES[m].read_text(encoding="utf-8")))
               if isinstance(node, ast.Attribute) and node.attr == "engine"]
    reaches += [str(i) for i in OWN if i.source in callers
                and ((i.target.startswith("massgen_mcp.modes.") and i.target.endswith(".store"))
                     or (i.target == "massgen_mcp.runs.engine" and not i.type_only))
                and not all(n[:1].isupper() for n in i.names)]
    assert reaches == [], "add the App method the caller needs:\n" + "\n".join(reaches)


def test_capabilities_are_asked_of_the_provider() -> None:
    """What a provider can do is an attribute of `Provider` (config/providers.py), not a
    comparison of its wire format spread over the package (the backend registry may still
    look a wire format up: that is what it maps)."""
    allowed = {"massgen_mcp.config.providers"}
    compared = []
    for module, path in MODULES.items():
        if module in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and any(
                    isinstance(side, ast.Attribute) and side.attr == "wire"
                    for side in [node.left, *node.comparators]):
                compared.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert compared == [], "add a capability to Provider and ask it:\n" + "\n".join(compared)


def test_every_test_lives_in_a_concept_folder() -> None:
    """tests/ holds shared helpers; each test file sits in the folder of what it tests, and
    that folder is on the import path pytest and mypy use (pyproject)."""
    tests = Path(__file__).resolve().parents[1]
    loose = sorted(p.name for p in tests.glob("test_*.py"))
    assert loose == [], f"move these into a concept folder (tests/<concept>/): {loose}"
    config = tomllib.loads((tests.parent / "pyproject.toml").read_text(encoding="utf-8"))
    pythonpath = config["tool"]["pytest"]["ini_options"]["pythonpath"]
    mypy_path = config["tool"]["mypy"]["mypy_path"].split(":")
    folders = sorted({p.parent.name for p in tests.glob("*/test_*.py")})
    missing = [f for f in folders if f"tests/{f}" not in pythonpath
               or f"tests/{f}" not in mypy_path]
    assert missing == [], f"add to pytest's pythonpath and mypy_path in pyproject: {missing}"
