#!/usr/bin/env bash
# Replays the shipped traces (tests/data/*.trace, recorded on the bundled
# VMM by scripts/record-test-traces.sh) on the topology files: the table of
# docs/replay.md, as Markdown rows. Deterministic: the same table every run.
# With a directory argument, replays the traces in it instead (record fresh
# ones with scripts/record-test-traces.sh DIR).
# Usage: scripts/replay-figures.sh [TRACEDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-tests/data}
[ -x build/numavm ] || { ./scripts/install-deps.sh && ./scripts/build.sh; }
echo "| workload (vCPUs) | topology | samples | best | ground truth: start | end | end / best | s to 90% of best | best's min moves | pages migrated | ratio | vCPU moves | re-migrations <= 10 s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for trace in "$dir"/numa01.trace "$dir"/numa02.trace "$dir"/numa02_read.trace "$dir"/shared.trace; do
  [ -f "$trace" ] || continue
  for topology in 2node 4node 4node-1cpu 8node; do
    build/numavm replay "$trace" --topology "configs/topology-${topology}.toml" --report=json |
      python3 -c '
import json, sys
j = json.load(sys.stdin); b = j["balance"]; best = j["best"]; g = j["ground_truth"]; v = j["versus_best"]
t = g["seconds_to_90pct_of_best"]
print("| %s (%d) | %s | %d | %.1f%% | %.1f%% | %.1f%% | %.2f | %s | %d | %d | %.2f | %d | %d |" % (
      j["trace"]["payload"], j["trace"]["vcpus"], sys.argv[1], j["trace"]["samples"],
      100 * best["locality"], 100 * g["start_locality"], 100 * g["final_locality"],
      v["final_locality_ratio"], "never" if t is None else "%.1f" % t, best["min_page_moves"],
      b["pages_migrated"], v["page_moves_ratio"], b["vcpu_moves"], b["remigrations_within_10s"]))' "$topology"
  done
done
