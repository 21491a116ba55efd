#!/usr/bin/env bash
# Records numa01, numa02 and numa02_read on the bundled VMM (needs /dev/kvm)
# and replays each trace on the topology files (2 nodes, 4 nodes, the lab's
# 4 nodes of one CPU): the table of docs/replay.md, as Markdown rows.
# Usage: scripts/replay-figures.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d)}
mkdir -p "$out"
[ -x build/numavm ] || { ./scripts/install-deps.sh && ./scripts/build.sh; }
echo "| workload (vCPUs) | topology | samples | oracle locality | balancer, whole run | balancer, last 10 periods | ratio | oracle min moves | pages migrated | ratio | vCPU moves | re-migrations < 10 s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for w in numa01:4 numa02:2 numa02_read:2; do
  payload=${w%%:*} vcpus=${w##*:}
  trace="$out/$payload.trace"
  echo "recording $payload on $vcpus vCPUs ..." >&2
  build/numavm run --quiet-console --payload "$payload" --vcpus "$vcpus" --memory 64M \
    --scan-window 64M --scan-period 200ms --record "$trace" -- size=32M iterations=6 >/dev/null
  for topology in 2node 4node 4node-1cpu; do
    build/numavm replay "$trace" --topology "configs/topology-${topology}.toml" --report=json |
      python3 -c '
import json, sys
j = json.load(sys.stdin); b = j["balance"]; o = j["oracle"]; v = j["versus_oracle"]
print("| %s (%s) | %s | %d | %.1f%% | %.1f%% | %.1f%% | %.2f | %d | %d | %.2f | %d | %d |" % (
      sys.argv[1], sys.argv[3], sys.argv[2], j["trace"]["samples"], 100 * o["access_locality"],
      100 * b["access_locality"], 100 * b["window_access_locality"], v["window_locality_ratio"],
      o["min_page_moves"], b["pages_migrated"], v["page_moves_ratio"], b["vcpu_moves"],
      b["remigrations_within_10s"]))' "$payload" "$topology" "$vcpus"
  done
done
echo "traces in $out" >&2
