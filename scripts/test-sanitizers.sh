#!/usr/bin/env bash
# The sanitizer and fuzz jobs (run by scripts/test.sh after the main tests;
# needs the main build for its guest payloads):
#  1. clang with ASan+UBSan and libFuzzer instrumentation (build-asan/): the
#     unit tests but the simulator acceptance runs, a fixed subset of the kvm
#     tests (only where /dev/kvm is usable; first, so the last summary is the
#     unit tests'), then every fuzz target for FUZZ_RUNS (500000) inputs from a
#     fixed seed, on its seed corpus.
# The TSan job is scripts/test-tsan.sh (it builds its own abseil).
# Any sanitizer report or fuzzer crash fails the job.
set -euo pipefail
cd "$(dirname "$0")/.."
MAIN=${BUILD_DIR:-build}
PAYLOADS=$(realpath "$MAIN/guest-tools")
FUZZ_RUNS=${FUZZ_RUNS:-500000}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

ASAN=${ASAN_BUILD_DIR:-build-asan}
CC=clang CXX=clang++ cmake -S . -B "$ASAN" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNUMAVM_SANITIZE=address,undefined -DNUMAVM_FUZZ=ON \
  -DNUMAVM_PREBUILT_PAYLOADS="$PAYLOADS" >/dev/null
cmake --build "$ASAN" -j"$(nproc)" --target numavm balancer_tests libvirt_unit_tests \
  vmm_unit_tests cli_unit_tests kvm_tests fuzz_trace fuzz_run_config fuzz_topology fuzz_daemon_config fuzz_elf fuzz_proc \
  fuzz_control_reply
# The simulator acceptance runs (acceptance_tests) are not built here: the
# unit tests are the other unit binaries' (ctest lists only the tests of
# built binaries).
# The kvm subset first, so the last summary printed is the unit tests'. On a
# host without /dev/kvm those tests would all skip: say so and leave them out.
if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
  (cd "$ASAN" && ctest --output-on-failure --timeout 600 -j2 -L kvm \
       -R 'RunEndingTest|HostileTest|RunReportTest|^SamplerTest|SamplerLifecycleTest|Samplers/SamplerCliTest|RunRegistrationTest')
else
  echo "asan: no usable /dev/kvm on this host: its kvm tests are not run under this sanitizer"
fi
(cd "$ASAN" && ctest --output-on-failure --timeout 600 -j2 -L unit)

corpus_out=$(mktemp -d)
trap 'rm -rf "$corpus_out"' EXIT
for target in trace run_config topology daemon_config elf proc control_reply; do
  mkdir -p "$corpus_out/$target"
  extra=()
  [ "$target" = elf ] && extra=("$PAYLOADS")
  log="$ASAN/fuzz-$target.log"
  # A fixed seed and number of runs, so that runs on one machine repeat
  # (-max_total_time only caps a slow machine). Not bit for bit across
  # machines: CI once found a crash at input 277,366 that a fresh clone of
  # the same fuzz code and corpus had not met in 500,000 (the mutations
  # follow coverage, which is not the same everywhere). A crash is the
  # code's all the same: fix it and add its input to fuzz/corpus. New
  # inputs go to a temporary directory, never into the tree; a crashing
  # input is kept in the build directory.
  if ! "$ASAN/fuzz/fuzz_$target" -seed=1 -runs="$FUZZ_RUNS" -max_total_time=180 \
      -max_len=65536 -artifact_prefix="$ASAN/fuzz-crash-$target-" -print_final_stats=1 \
      "$corpus_out/$target" "fuzz/corpus/$target" "${extra[@]}" >"$log" 2>&1; then
    tail -60 "$log"
    echo "fuzz_$target crashed (input in $ASAN/fuzz-crash-$target-*)"
    exit 1
  fi
  echo "fuzz_$target: $(grep -m1 '^Done' "$log")"
done
echo "sanitizers and fuzzers: clean"
