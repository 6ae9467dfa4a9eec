#!/usr/bin/env python3
"""Checks a node's /metrics with Prometheus' own Python client: the document must parse as
OpenMetrics (strictly: types, units, suffixes, the end marker), carry the served content type,
and hold the families a dashboard relies on, among them real latency histograms with buckets.

Usage: .ci/check-metrics.py HOST:PORT
Needs `pip install prometheus-client==0.23.1` (.ci/run installs it).
"""
import sys
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families

REQUIRED = {
    "scalechain_build": "info",
    "scalechain_process_cpu_seconds": "counter",
    "scalechain_process_resident_memory_bytes": "gauge",
    "scalechain_process_open_fds": "gauge",
    "scalechain_pipeline_verify_seconds": "histogram",
    "scalechain_block_accept_seconds": "histogram",
    "scalechain_api_request_seconds": "histogram",
    "scalechain_api_requests": "counter",
    "scalechain_chain_height": "gauge",
    "scalechain_mempool_txs": "gauge",
}


def main() -> int:
    api = sys.argv[1]
    with urllib.request.urlopen(f"http://{api}/metrics", timeout=10) as r:
        ctype = r.headers.get("Content-Type", "")
        text = r.read().decode("utf-8")
    if not ctype.startswith("application/openmetrics-text"):
        print(f"check-metrics: content type {ctype!r}, not OpenMetrics", file=sys.stderr)
        return 1
    families = {f.name: f for f in text_string_to_metric_families(text)}
    bad = [f"{n} ({t})" for n, t in REQUIRED.items() if n not in families or families[n].type != t]
    if bad:
        print(f"check-metrics: missing or mistyped: {', '.join(bad)}", file=sys.stderr)
        return 1
    api_hist = families["scalechain_api_request_seconds"]
    buckets = [s for s in api_hist.samples if s.name.endswith("_bucket")]
    count = next(s.value for s in api_hist.samples if s.name.endswith("_count"))
    if len(buckets) < 5 or buckets[-1].labels.get("le") != "+Inf" or buckets[-1].value != count or count < 1:
        print(f"check-metrics: the API latency histogram is not a histogram: {api_hist.samples}", file=sys.stderr)
        return 1
    print(f"check-metrics: {len(families)} families parse as OpenMetrics; {int(count)} API requests timed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
