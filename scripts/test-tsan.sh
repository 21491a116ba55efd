#!/usr/bin/env bash
# The TSan job (run by scripts/test.sh after the ASan one; needs the main
# build for its guest payloads). Debian's libabsl is not built with TSan, so
# TSan cannot see its locks and reports every access under an absl::Mutex
# as a race; so the job first builds abseil itself with -fsanitize=thread:
# the machine's own version, from Debian's source package (fetched with
# apt-get source from the machine's own Debian archive, under a private apt
# configuration; Debian's patches applied, so absl::string_view and friends
# are the same types as in the packaged library), into $TSAN/abseil (kept:
# a second run reuses it). Then numavm's host code with
# -DNUMAVM_SANITIZE=thread against that abseil, and the tests of its threads:
# the unit tests but the simulator acceptance runs (among them a RateLimiter
# shared by two threads, as the balancer's and --migrate-churn's share one),
# and the kvm tests of the samplers and the VMM's runs (vCPU, sampling and
# control threads; only where /dev/kvm is usable). Any TSan report fails the job, but those of
# scripts/tsan-suppressions.txt (abseil's own, explained there).
set -euo pipefail
cd "$(dirname "$0")/.."
MAIN=${BUILD_DIR:-build}
PAYLOADS=$(realpath "$MAIN/guest-tools")
TSAN=${TSAN_BUILD_DIR:-build-tsan}
mkdir -p "$TSAN"
TSAN=$(realpath "$TSAN")
prefix=$TSAN/abseil
# Suppressions: races TSan reports inside abseil that are not races (each
# explained in the file).
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$(realpath scripts/tsan-suppressions.txt)"

if [ ! -f "$prefix/lib/cmake/absl/abslConfig.cmake" ]; then
  version=$(dpkg-query -W -f='${source:Version}' libabsl-dev)
  src=$TSAN/abseil-src
  rm -rf "$src" && mkdir -p "$src/apt/lists/partial" "$src/apt/cache/archives/partial" \
    "$src/apt/sources.list.d"
  # The machine's own Debian archive (scripts/debian-archive-uri.sh).
  uri=$(scripts/debian-archive-uri.sh)
  for suite in bookworm bookworm-updates; do
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main"
  done > "$src/apt/sources.list"
  opts=(-o Dir::Etc::sourcelist="$src/apt/sources.list" -o Dir::Etc::sourceparts="$src/apt/sources.list.d"
        -o Dir::State::Lists="$src/apt/lists" -o Dir::Cache="$src/apt/cache"
        -o APT::Sandbox::User=root -o Debug::NoLocking=1)
  echo "tsan: fetching abseil $version's source"
  apt-get "${opts[@]}" update -qq >/dev/null
  (cd "$src" && apt-get "${opts[@]}" source --download-only "abseil=$version" >/dev/null)
  dpkg-source --no-check -x "$src"/abseil_*.dsc "$src/tree" >/dev/null
  echo "tsan: building abseil with -fsanitize=thread"
  cmake -S "$src/tree" -B "$src/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=OFF -DBUILD_TESTING=OFF \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" >/dev/null
  cmake --build "$src/build" -j"$(nproc)" >/dev/null
  cmake --install "$src/build" >/dev/null
  rm -rf "$src"
fi

cmake -S . -B "$TSAN/numavm" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNUMAVM_SANITIZE=thread -DCMAKE_PREFIX_PATH="$prefix" \
  -DNUMAVM_PREBUILT_PAYLOADS="$PAYLOADS" >/dev/null
cmake --build "$TSAN/numavm" -j"$(nproc)" --target numavm balancer_tests libvirt_unit_tests \
  vmm_unit_tests cli_unit_tests kvm_tests
# The kvm subset first, so the last summary printed is the unit tests'. On a
# host without /dev/kvm those tests would all skip: say so and leave them out.
if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
  (cd "$TSAN/numavm" && ctest --output-on-failure --timeout 600 -j2 -L kvm \
       -R 'RunEndingTest|HostileTest|RunReportTest|^SamplerTest|SamplerLifecycleTest|Samplers/SamplerCliTest|RunRegistrationTest')
else
  echo "tsan: no usable /dev/kvm on this host: its kvm tests are not run under this sanitizer"
fi
(cd "$TSAN/numavm" && ctest --output-on-failure --timeout 600 -j2 -L unit)
echo "tsan: clean"
