#!/usr/bin/env bash
# Where a loaded node's CPU goes: a devnet (README defaults: 3 peers + 1 miner) offered RATE
# tx/s for 15 s; after 5 s of load, `perf` samples one peer process for 8 s with DWARF call
# graphs, and bench/perf-categories.py sorts the samples into the node's stages. Needs `perf`
# (Debian: linux-perf) and root or perf_event_paranoid ≤ 1. Bounded: the devnet ends by itself.
#
#   bash bench/devnet-profile.sh [path/to/scalechain] [RATE]   (default target/release/scalechain 12000)
set -euo pipefail
bin="${1:-target/release/scalechain}"
rate="${2:-12000}"
here="$(cd "$(dirname "$0")" && pwd)"
work=$(mktemp -d)
trap 'kill -INT "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
"$bin" devnet --duration 15 --tps "$rate" > "$work/devnet.out" 2>&1 &
pid=$!
deadline=$((SECONDS + 300))
until grep -q 't=   5' "$work/devnet.out" 2>/dev/null; do
  [ $SECONDS -lt $deadline ] || { echo "the load did not start"; cat "$work/devnet.out"; exit 1; }
  kill -0 "$pid" 2>/dev/null || { echo "devnet ended early"; cat "$work/devnet.out"; exit 1; }
  sleep 0.5
done
peer=$(pgrep -P "$pid" -f -- '--role peer' | head -1)
[ -n "$peer" ] || { echo "no peer process found"; exit 1; }
perf record -F 199 --call-graph dwarf,16384 -p "$peer" -o "$work/perf.data" -- sleep 8 2> "$work/perf.log"
wait "$pid" || true
grep -E 'TPS|latency ms|CPU over|signature bound' "$work/devnet.out" || true
echo
python3 "$here/perf-categories.py" "$work/perf.data"
