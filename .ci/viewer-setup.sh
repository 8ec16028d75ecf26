#!/usr/bin/env bash
# CI: the run viewer's tests drive Debian's Chromium (never a browser Playwright downloads).
set -euo pipefail
if [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
