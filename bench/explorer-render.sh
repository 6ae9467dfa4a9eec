#!/usr/bin/env bash
# Server-side render times of the explorer's pages at the node's scale: a devnet whose miner
# makes a block every 15 s of at most 10,000 transactions while 12,000 tx/s are offered, so a
# 10,000-transaction block exists and the miner's mempool passes 100,000 entries. Each page is
# fetched 5 times from the miner (curl's total time: the request on loopback, the render, the
# transfer); the median is printed. Bounded: the devnet is stopped at the end or after 10 min.
#
#   bash bench/explorer-render.sh [path/to/scalechain]   (default target/release/scalechain)
set -euo pipefail
bin="${1:-target/release/scalechain}"
work=$(mktemp -d)
trap 'kill -INT "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
cat > "$work/node.toml" <<'TOML'
[chain]
target_block_ms = 15000
[miner]
max_block_txs = 10000
TOML
"$bin" devnet --tps 12000 --duration 12 --node-config "$work/node.toml" --converge-timeout 300 --stay \
  2> "$work/devnet.log" &
pid=$!
deadline=$((SECONDS + 600))
until url=$(grep -o 'http://[0-9.:]*/explorer' "$work/devnet.log" | head -1) && [ -n "$url" ]; do
  [ $SECONDS -lt $deadline ] || { echo "the devnet did not start"; exit 1; }
  sleep 1
done
api="${url%/explorer}"
echo "miner: $api"
big=""
until [ -n "$big" ]; do
  [ $SECONDS -lt $deadline ] || { echo "no 10,000-transaction block with 100,000 pooled within 10 min"; exit 1; }
  sleep 2
  pooled=$(curl -sf "$api/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["mempool_txs"])')
  height=$(curl -sf "$api/tip" | python3 -c 'import json,sys; print(json.load(sys.stdin)["height"])')
  [ "$pooled" -ge 100000 ] || continue
  for h in $(seq "$height" -1 1); do
    n=$(curl -sf "$api/blocks/$h/txids" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["txids"]))')
    if [ "$n" -ge 10000 ]; then big=$h; break; fi
  done
done
txid=$(curl -sf "$api/blocks/$big/txids" | python3 -c 'import json,sys; print(json.load(sys.stdin)["txids"][5000])')
echo "block $big holds 10,000 transactions; the mempool $(curl -sf "$api/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["mempool_txs"])')"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for page in "/explorer" "/explorer/block/$big" "/explorer/block/$big?page=100" "/explorer/tx/$txid" \
            "/explorer/mempool" "/explorer/mempool?page=2000" "/explorer/chain?top=$big" "/explorer/search?q=$txid"; do
  t=$(for _ in 1 2 3 4 5; do curl -s -o /dev/null -w '%{time_total}\n' "$api$page"; done | median)
  code=$(curl -s -o /dev/null -w '%{http_code}' "$api$page")
  printf '%-60s %s  %6.0f ms\n' "$page" "$code" "$(python3 -c "print($t*1000)")"
done
