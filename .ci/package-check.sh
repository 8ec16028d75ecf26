#!/usr/bin/env bash
# Publish-readiness: build the sdist and the wheel (the wheel from the sdist, as PyPI users
# get it) and check them: metadata and README rendering (`twine check --strict`), what the
# wheel carries (bundled teams, py.typed, no tests), and the console script of the built
# wheel in a fresh virtual environment, outside the source tree, with a bare environment:
# `--version`, `doctor` (bundled teams found) and spawn -> `tools/list` over stdio.
# Build tools live in their own throw-away venv. Usage: bash .ci/package-check.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

python3 -m venv "$work/tools"
"$work/tools/bin/python" -m pip install --quiet build twine
"$work/tools/bin/python" -m build --outdir "$work/dist" "$root" >"$work/build.log" 2>&1 \
  || { cat "$work/build.log" >&2; exit 1; }
"$work/tools/bin/python" -m twine check --strict "$work"/dist/*

version="$(python3 -c 'import re,sys; print(re.search(r"^version = \"(.+)\"", open(sys.argv[1]).read(), re.M)[1])' "$root/pyproject.toml")"
wheel="$(ls "$work"/dist/massgen_mcp-"$version"-py3-none-any.whl)"
sdist="$(ls "$work"/dist/massgen_mcp-"$version".tar.gz)"
python3 - "$wheel" "$sdist" <<'PY'
import sys, tarfile, zipfile
wheel, sdist = sys.argv[1:]
names = zipfile.ZipFile(wheel).namelist()
need = ["massgen_mcp/py.typed", "massgen_mcp/_configs/frontier.yaml",
        "massgen_mcp/_configs/local.yaml", "massgen_mcp/_configs/demo.yaml",
        "massgen_mcp/cli/main.py"]
missing = [n for n in need if n not in names]
assert not missing, f"wheel lacks {missing}"
assert not [n for n in names if n.startswith("tests/")], "tests in the wheel"
meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
for field in ("Name: massgen-mcp", "Requires-Python: >=3.11", "License-Expression: Apache-2.0",
              "Description-Content-Type: text/markdown", "Project-URL: "):
    assert field in meta, f"METADATA lacks {field!r}"
members = tarfile.open(sdist).getnames()
assert any(m.endswith("/README.md") for m in members), "sdist lacks README.md"
assert any("/configs/frontier.yaml" in m for m in members), "sdist lacks configs/"
print(f"package-check: {len(names)} files in the wheel, {len(members)} in the sdist")
PY

python3 -m venv "$work/fresh"
"$work/fresh/bin/python" -m pip install --quiet "$wheel"
exe="$work/fresh/bin/massgen-mcp"
mkdir "$work/home"
cd "$work/home"
bare=(env -i "PATH=/usr/bin:/bin" "HOME=$work/home")
got="$("${bare[@]}" "$exe" --version)"
[[ "$got" == "massgen-mcp $version" ]] || { echo "package-check: --version said '$got'" >&2; exit 1; }
"${bare[@]}" OPENAI_API_KEY=k-package-check "$exe" doctor --json --dir "$work/home" \
  | "$work/fresh/bin/python" -c '
import json, sys
report = json.load(sys.stdin)["report"]
assert {"frontier", "local", "checkpoint", "plan", "openrouter", "demo"} <= set(report["bundled_teams"]), report["bundled_teams"]'
"${bare[@]}" "$work/fresh/bin/python" - "$exe" <<'PY'
import sys
import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

async def main() -> None:
    with anyio.fail_after(60):
        async with Client(StdioServerParameters(command=sys.argv[1]), mode="legacy") as c:
            tools = [t.name for t in (await c.list_tools()).tools]
    assert "run_consensus" in tools, tools
    print(f"package-check: the built wheel's massgen-mcp answers tools/list ({len(tools)} tools)")

anyio.run(main)
PY
# The first run a new user makes: the demo team, no key, no network, from the wheel.
demo="$("${bare[@]}" "$exe" run "Which queue?" --team demo 2>&1)" \
  || { echo "package-check: --team demo failed: $demo" >&2; exit 1; }
[[ "$demo" == *"demo: no model was asked"* && "$demo" == *"view run_"* ]] \
  || { echo "package-check: --team demo said: $demo" >&2; exit 1; }
echo "package-check: --team demo runs from the wheel with no key"
echo "package-check: ok ($(basename "$wheel"), $(basename "$sdist"))"
