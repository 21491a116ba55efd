#!/usr/bin/env bash
# Installs everything numavm needs to build and test, from Debian packages.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  linux-libc-dev          # KVM API headers
  libnuma-dev numactl     # move_pages/mbind; numactl for inspection
  libabsl-dev             # Status, strings, synchronization, time
  libvirt-dev             # libvirt C API (attach/daemon)
  libcpp-httplib-dev      # the daemon's /metrics endpoint
  # A real libvirt daemon and QEMU for the integration tests (label
  # integration) and the NUMA lab.
  # (-system creates the libvirt-qemu user QEMU runs as.)
  libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86
  busybox-static cpio kmod numad   # the NUMA lab's initramfs (scripts/lab.sh)
  acpica-tools            # iasl: the ACPI tables of Linux guests checked by ACPICA
  libtomlplusplus-dev     # TOML config files
  nlohmann-json3-dev      # JSON reports
  libcli11-dev            # command line with subcommands and --help
  libgtest-dev libgmock-dev libbenchmark-dev
  # The sanitizer and fuzz jobs (scripts/test-sanitizers.sh): clang with
  # ASan, UBSan and libFuzzer; the format check (scripts/check-format.sh).
  clang libclang-rt-14-dev clang-format
  # The CLI and report checks (tests/cli/): every JSON report against
  # docs/report-schema.json; every --plot rendered to PNG by a real SVG
  # renderer.
  python3-jsonschema librsvg2-bin
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
