#!/usr/bin/env python3
"""Where a node's CPU goes: reads a `perf record --call-graph dwarf` file of one node process
and puts each sample in the first category (in the order below) whose pattern appears in any
frame of its stack, after dropping generic arguments from the frame names (so a `Chain<DiskStore>`
in a type does not count as the store). Prints a Markdown table, largest share first.

    python3 bench/perf-categories.py perf.data
"""
import collections
import re
import subprocess
import sys

CATEGORIES = [
    ("signatures (batched Ed25519)", ["verify_ed25519_batch", "ed25519_zebra"]),
    ("store: memtable sealing and release", ["rotate_memtable"]),
    ("store: write batch (journal, memtable)", ["WriteBatch::commit"]),
    ("store: flush to tables", ["fjall::flush"]),
    ("store: other (compaction, reads, staging)", ["scalechain_store::", "fjall::", "lsm_tree::"]),
    ("block checks (Merkle, txids)", ["check_block", "merkle::"]),
    ("block connection (UTXO lookups)", ["connect_block", "connect::"]),
    ("UTXO set and owner index in memory", ["apply_to_memory"]),
    ("chain: reorg bookkeeping", ["try_reorg", "activate_best", "accept_one"]),
    ("mempool: block removal", ["remove_block", "Replica::accept", "accept_locked"]),
    ("mempool: admission (rules, placement)", ["Mempool::offer", "scalechain_mempool::"]),
    ("transaction verification (other)", ["txverify"]),
    ("decoding", ["Decode", "decode"]),
    ("libp2p (gossip, streams, noise)", ["libp2p", "gossipsub", "yamux", "noise"]),
    ("peer protocol machine", ["scalechain_p2p"]),
    ("API (HTTP)", ["hyper", "axum", "scalechain_node::api"]),
    ("miner", ["miner::", "block_template"]),
    ("node (other)", ["scalechain_node::"]),
    ("async runtime", ["tokio::"]),
]


def plain(frame: str) -> str:
    name = frame.split(" ", 1)[1] if " " in frame else frame
    while True:
        shorter = re.sub(r"(?<=\w)<[^<>]*>", "", name)
        if shorter == name:
            return name
        name = shorter


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: perf-categories.py PERF_DATA")
    out = subprocess.run(
        ["perf", "script", "-i", sys.argv[1], "-F", "comm,ip,sym"], capture_output=True, text=True, check=True
    ).stdout
    counts = collections.Counter()
    total = 0
    for sample in out.split("\n\n"):
        lines = [l.strip() for l in sample.strip().split("\n") if l.strip()]
        if not lines:
            continue
        total += 1
        frames = [plain(l) for l in lines[1:]]
        category = next(
            (name for name, pats in CATEGORIES if any(p in f for f in frames for p in pats)), "other"
        )
        counts[category] += 1
    if total == 0:
        sys.exit("no samples")
    print("| where | share of the node's CPU samples |")
    print("|---|---|")
    for name, n in counts.most_common():
        print(f"| {name} | {100 * n / total:.1f}% |")
    print(f"\n{total} samples")


if __name__ == "__main__":
    main()
