#!/usr/bin/env bash
# Records numa01, numa02 and numa02_read on the bundled VMM (needs /dev/kvm)
# and replays each trace on the 2- and 4-node topology files: the figures of
# docs/replay.md. Usage: scripts/replay-figures.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d)}
mkdir -p "$out"
[ -x build/numavm ] || { ./scripts/install-deps.sh && ./scripts/build.sh; }
printf '%-12s %-6s %-9s %9s %9s %9s %8s %8s %7s\n' workload nodes samples oracle \
  last10 ratio "min-mv" moved ratio
for w in numa01:4 numa02:2 numa02_read:2; do
  payload=${w%%:*} vcpus=${w##*:}
  trace="$out/$payload.trace"
  echo "recording $payload on $vcpus vCPUs ..." >&2
  build/numavm run --quiet-console --payload "$payload" --vcpus "$vcpus" --memory 64M \
    --scan-window 64M --scan-period 200ms --record "$trace" -- size=32M iterations=6 >/dev/null
  for nodes in 2 4; do
    build/numavm replay "$trace" --topology "configs/topology-${nodes}node.toml" --report=json |
      python3 -c '
import json, sys
j = json.load(sys.stdin); b = j["balance"]; o = j["oracle"]; v = j["versus_oracle"]
print("%-12s %-6s %-9d %8.1f%% %8.1f%% %9.2f %8d %8d %7.2f" % (sys.argv[1], sys.argv[2],
      j["trace"]["samples"], 100 * o["access_locality"], 100 * b["window_access_locality"],
      v["window_locality_ratio"], o["min_page_moves"], b["pages_migrated"],
      v["page_moves_ratio"]))' "$payload" "$nodes"
  done
done
echo "traces in $out" >&2
