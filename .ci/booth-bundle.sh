#!/usr/bin/env bash
# The booth's bundle is reproducible: installs the locked npm packages of crates/explorer/booth,
# runs its unit tests, rebuilds crates/explorer/assets/booth.js and booth.js.map beside the
# committed ones, and fails if either differs (the binary embeds the committed files, so a
# source change without a rebuild, or a bundle no source explains, is caught here).
set -euo pipefail
cd "$(dirname "$0")/../crates/explorer/booth"
npm ci --no-audit --no-fund --loglevel=error
npm test
# A sibling of assets/, so that the source map's relative paths are the same.
out="$(mktemp -d ../.booth-check.XXXXXX)"
trap 'rm -rf "$out"' EXIT
node build.mjs --out "$out"
status=0
for f in booth.js booth.js.map; do
  if ! cmp -s "$out/$f" "../assets/$f"; then
    echo "crates/explorer/assets/$f differs from what crates/explorer/booth builds: run \`npm ci && npm run build\` there and commit it" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "booth bundle: crates/explorer/assets/booth.js and booth.js.map rebuild identically"
exit "$status"
