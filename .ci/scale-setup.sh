#!/usr/bin/env bash
# The scale-out tiers: Debian's redis-server (tests/redis_server.py starts it on a free
# loopback port for the Redis store's tests) and haproxy (round-robin over HTTP replicas).
# Debian packages; nothing else is downloaded.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1 && command -v haproxy >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get install -y --no-install-recommends redis-server haproxy \
  || { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends redis-server haproxy; }
