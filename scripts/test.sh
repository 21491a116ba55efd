#!/usr/bin/env bash
# Install, build and run every test (labels unit, kvm, integration, lab;
# kvm tests skip without /dev/kvm), then the format check
# (scripts/check-format.sh) and the sanitizer and fuzz jobs
# (scripts/test-sanitizers.sh: ASan+UBSan and libFuzzer;
# scripts/test-tsan.sh: ThreadSanitizer). Extra arguments
# go to ctest, e.g. -L unit, and then only those tests run.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure --timeout 600 -j2 "$@")
if [ $# -eq 0 ]; then
  ./scripts/check-format.sh
  ./scripts/test-sanitizers.sh
  ./scripts/test-tsan.sh
fi
