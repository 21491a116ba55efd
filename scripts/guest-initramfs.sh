#!/usr/bin/env bash
# Builds an initramfs for a Linux guest of `numavm run --kernel`: busybox,
# numactl and numabench (autonuma-benchmark's workloads, built with numavm:
# guest-tools/linux/numabench.c), with an /init that reports the guest's
# NUMA nodes, runs the numabench workload the kernel command line names
# (numabench=WORKLOAD,SIZE,SECONDS, e.g. numabench=numa02,64M,10) and powers
# off - or another /init of your own.
# Usage: scripts/guest-initramfs.sh BUILD_DIR OUT.gz [INIT_SCRIPT]
# Needs busybox and numactl on this machine (scripts/install-deps.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 2 ]; then
  echo "usage: scripts/guest-initramfs.sh BUILD_DIR OUT.gz [INIT_SCRIPT]" >&2
  exit 2
fi
build=$1 out=$2 init=${3:-$here/lab/linux-guest-init.sh}
bench="$build/guest-tools/linux/numabench"
for f in "$bench" "$init" /bin/busybox /usr/bin/numactl; do
  if [ ! -f "$f" ]; then
    echo "guest-initramfs: $f is missing (build numavm first, or install busybox and numactl)" >&2
    exit 2
  fi
done
guest=$(mktemp -d)
trap 'rm -rf "$guest"' EXIT
mkdir -p "$guest"/{bin,usr/bin,proc,sys,dev,tmp,lib/x86_64-linux-gnu,lib64}
cp /bin/busybox "$guest/bin/busybox"
for a in sh mount cat echo ls grep awk sed basename poweroff uname sleep tr cut; do
  ln -sf busybox "$guest/bin/$a"
done
cp /usr/bin/numactl "$guest/usr/bin/"
for lib in $(ldd /usr/bin/numactl | awk '$3 ~ /^\// {print $3}' | sort -u); do
  cp -L "$lib" "$guest/lib/x86_64-linux-gnu/"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$guest/lib64/"
strip --strip-debug -o "$guest/bin/numabench" "$bench"
cp "$init" "$guest/init"
chmod +x "$guest/init"
(cd "$guest" && find . | cpio -o -H newc --quiet | gzip -1) > "$out"
