#!/usr/bin/env bash
# Prints docs/simulate.md's table: today's balancer at its defaults (the
# scan flags left alone) in `numavm simulate`, every workload shape on the
# three large topology files, at 64 MiB (4 vCPUs, 120 s), 16 GiB (16 vCPUs,
# 600 s) and 256 GiB (64 vCPUs, 2400 s), seed 1. Deterministic: the same
# table on every run. Extra arguments go to every simulate call (e.g.
# --fault-cost 10us).
# Usage: scripts/simulate-figures.sh [SIMULATE-FLAGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
numavm=${NUMAVM:-build/numavm}
shapes=${SHAPES:-"numa01 numa01_read numa01_thread_alloc numa02 numa02_read numa02_smt shared phase idle groups handover drift hot"}
sizes=${SIZES:-"64M:4:120 16G:16:600 256G:64:2400"}
topologies=${TOPOLOGIES:-"2node-large 4node-large 8node-large"}
echo "| workload | topology | guest (vCPUs, s) | best | start | final / best | s to 90% of best | after changes (s) | best, vCPUs moved | final / it | s to 90% of it | pages moved / min | re-migrations | stall s (share) | balancer CPU s per s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for size in $sizes; do
  IFS=: read -r mem vcpus secs <<<"$size"
  for topo in $topologies; do
    for shape in $shapes; do
      "$numavm" simulate --workload "$shape" --vcpus "$vcpus" --memory "$mem" \
        --topology "configs/topology-$topo.toml" --duration "$secs" --report json "$@" |
        python3 -c '
import json, sys
j = json.load(sys.stdin)
shape, topo, mem, vcpus, secs = sys.argv[1:6]
def pct(x): return "-" if x is None else "%.0f%%" % (100 * x)
def num(x, f="%.0f"): return "never" if x is None else f % x
best = j["best_locality"]
ratio = "-" if j["final_vs_best"] is None else "%.2f" % j["final_vs_best"]
later = [p["seconds_to_90pct_of_best"] for p in j["phases"][1:]]
after = "-" if not later else " ".join(num(x) for x in later[:3]) + (" ..." if len(later) > 3 else "")
moved, least = j["pages_migrated"], j["min_page_moves"]
best_m = j["best_moving_vcpus_locality"]
ratio_m = "-" if j["final_vs_best_moving_vcpus"] is None else "%.2f" % j["final_vs_best_moving_vcpus"]
moves = "%d / %d" % (moved, least)
remig = "-" if moved == 0 else "%.1f%%" % (100.0 * j["remigrations"] / moved)
cpu = j["balancer_cpu_seconds"] / float(secs)
print("| %s | %s | %s (%s, %s) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f (%.2f%%) | %.5f |" % (
    shape, topo, mem, vcpus, secs, pct(best), pct(j["start_locality"]), ratio,
    num(j["seconds_to_90pct_of_best"]), after, pct(best_m), ratio_m,
    num(j["seconds_to_90pct_of_best_moving_vcpus"]), moves, remig, j["stall_seconds"],
    100 * j["stall_share"], cpu))
' "$shape" "$topo" "$mem" "$vcpus" "$secs"
    done
  done
done
