#!/usr/bin/env bash
# NATS server with JetStream for the event-bus tests and benchmark (Debian's package; no
# download of its own). Does nothing when it is already installed. The tests start their own
# server on 127.0.0.1 with a temporary store directory; this script starts none.
set -euo pipefail
if command -v nats-server >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends nats-server >/dev/null
command -v nats-server >/dev/null
