#!/usr/bin/env bash
# Claude Code's Bash sandbox on Linux needs bubblewrap and socat (tests/guard/test_guard_sandbox.py
# runs the real Claude Code CLI inside it). Debian packages; nothing else is downloaded.
set -euo pipefail
if command -v bwrap >/dev/null 2>&1 && command -v socat >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get install -y --no-install-recommends bubblewrap socat \
  || { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends bubblewrap socat; }
