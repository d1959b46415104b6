#!/usr/bin/env bash
# Headless Chromium for the documentation and dashboard browser tests (Debian's package; no browser
# download of its own). Does nothing when it is already installed.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null
