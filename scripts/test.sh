#!/usr/bin/env bash
# Install, build and run every test (labels unit, kvm, integration, lab;
# kvm tests skip without
# /dev/kvm). Extra arguments go to ctest, e.g. -L unit.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 600 -j2 "$@"
