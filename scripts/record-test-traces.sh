#!/usr/bin/env bash
# Records the access traces the replay tests ship with (tests/data/*.trace):
# guest-tools workloads on the bundled VMM, the whole guest armed every
# 500 ms so that every page is sampled in every pass. Recorded once and
# committed: the tests replay these files, never a fresh recording, so that
# their bounds do not move with the machine's load. Needs /dev/kvm.
# Usage: scripts/record-test-traces.sh [OUTDIR]   (default tests/data)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-tests/data}
numavm=${NUMAVM:-build/numavm}
mkdir -p "$out"
record() {  # NAME PAYLOAD VCPUS
  echo "recording $1 ($2, $3 vCPUs)" >&2
  "$numavm" run --quiet-console --duration 300s --payload "$2" --vcpus "$3" --memory 64M \
    --scan-window 64M --scan-period 500ms --record "$out/$1.trace" -- size=8M seconds=12 \
    >/dev/null
}
record numa01 numa01 4
record numa02 numa02 2
record numa02_read numa02_read 2
record shared shared 4
ls -l "$out"/*.trace >&2
