#!/usr/bin/env bash
# axe-core, the accessibility engine the dashboard's browser tests run inside each page
# (tests/test_server_axe.py), from the npm registry at a pinned version and checksum, into
# .cache/axe-core/ of this checkout (untracked). Does nothing when that version is there.
set -euo pipefail
VERSION=4.14.1
INTEGRITY=sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/.cache/axe-core"
if [ -f "$DEST/axe.min.js" ] && [ "$(cat "$DEST/VERSION" 2>/dev/null)" = "$VERSION" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
(cd "$WORK" && npm pack --silent "axe-core@$VERSION" >/dev/null)
TARBALL="$WORK/axe-core-$VERSION.tgz"
GOT="sha512-$(python3 -c 'import base64, hashlib, sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$TARBALL")"
if [ "$GOT" != "$INTEGRITY" ]; then
  echo "axe-core $VERSION: checksum $GOT is not the pinned $INTEGRITY" >&2
  exit 1
fi
tar -xzf "$TARBALL" -C "$WORK" package/axe.min.js package/LICENSE
mkdir -p "$DEST"
mv "$WORK/package/axe.min.js" "$WORK/package/LICENSE" "$DEST/"
echo "$VERSION" > "$DEST/VERSION"
