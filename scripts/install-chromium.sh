#!/usr/bin/env bash
# Headless Chromium for the documentation and dashboard browser tests (Debian's package; no browser
# download of its own), and axe-core for the dashboard's accessibility test
# (scripts/install-axe-core.sh). Does nothing when they are already installed.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
  command -v chromium >/dev/null
fi
"$(dirname "$0")/install-axe-core.sh"
