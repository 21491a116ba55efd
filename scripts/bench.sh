#!/usr/bin/env bash
# Builds and runs the benchmarks; figures go into docs/performance.md by hand,
# with the date and the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
./build/tests/bench/vmm_bench "$@"
