#!/usr/bin/env bash
# The main job: install, build, and run a numa02 VM (2 vCPUs, 512 MiB) on the
# bundled KVM VMM, printing its per-VM report.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
exec ./build/numavm run --payload numa02 --vcpus 2 --memory 512M --duration 5m "$@"
