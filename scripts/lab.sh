#!/usr/bin/env bash
# The NUMA lab: boots Debian's kernel with 2 and 4 NUMA nodes under QEMU
# (TCG, nested KVM inside) and runs numavm's workloads under every mode -
# OFF, HARD, INVERSE, NUMAVM, KERNEL (kernel.numa_balancing=1), NUMAD - then
# prints the comparison table. Progress goes to stderr as the runs happen.
#
# Usage: scripts/lab.sh [--nodes 2,4] [--workloads numa01,numa02,...]
#                       [--modes off,hard,...] [--seconds 25] [--out DIR]
#                       [--verify-seconds 120] [--no-verify]
# verify runs under migration churn with 1 and with 2 vCPUs (measured under
# TCG: ~2000 page migrations a second with 1 vCPU, ~200-400 with 2);
# --no-verify skips them. Mode budget (not in the default set): two VMs at
# once sharing a host migration budget of 128K/s.
# Environment: NUMAVM_LAB_CACHE (default build/lab-cache) keeps the kernel
# between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
nodes_list=2,4
workloads=numa01,numa02,numa02_read,shared,phase
modes=off,hard,inverse,numavm,kernel,numad
seconds=25
out=build/lab
verify=yes
verify_seconds=120
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) nodes_list=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --verify-seconds) verify_seconds=$2; shift 2 ;;
    --no-verify) verify=no; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "lab: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x build/numavm ] && [ -x build/tests/lab_table ] || { ./scripts/install-deps.sh && ./scripts/build.sh; }
./scripts/install-deps.sh >/dev/null
cache=${NUMAVM_LAB_CACHE:-build/lab-cache}
mkdir -p "$out" "$cache"
version=$(./scripts/lab/kernel.sh "$cache")
kernel="$cache/kernel-$version/boot/vmlinuz-$version"
echo "lab: kernel $version; building the initramfs" >&2
./scripts/lab/initramfs.sh "$cache" "$version" build "$out/initrd.gz"

plan=""
for w in ${workloads//,/ }; do
  for m in ${modes//,/ }; do plan="$plan${plan:+,}$w:$m"; done
done
# Integrity: verify while all its memory moves between nodes every period.
[ "$verify" = yes ] && plan="$plan,verify:churn:1:$verify_seconds,verify:churn:2:$verify_seconds"
logs=()
for nodes in ${nodes_list//,/ }; do
  # 2 nodes: 2 CPUs each, so that a 4-vCPU VM's groups fit on one node;
  # 4 nodes: 1 CPU each. 4 vCPUs, 32 MiB, a 4 MiB working set everywhere.
  cpn=$(( nodes <= 2 ? 2 : 1 ))
  runs=$(( $(echo "$plan" | tr ',' '\n' | wc -l) ))
  [ "$verify" = yes ] && runs=$(( runs - 2 ))
  echo "lab: $nodes nodes x $cpn CPUs, $runs runs of ${seconds}s$([ "$verify" = yes ] && echo ", 2 verify runs of ${verify_seconds}s")" >&2
  log="$out/lab-${nodes}node.log"
  budget=$(( runs * (seconds + 60) + 120 ))
  [ "$verify" = yes ] && budget=$(( budget + 2 * (verify_seconds + 60) ))
  CPUS_PER_NODE=$cpn MEM_PER_NODE=512M ./scripts/lab/boot.sh "$kernel" "$out/initrd.gz" "$nodes" \
    "$plan" 4 32M "size=4M,seconds=$seconds" "$log" "$budget"
  logs+=("$log")
done
echo
echo "numavm NUMA lab, $(date -u +%Y-%m-%d), kernel $version, QEMU TCG, ${seconds}s per run"
build/tests/lab_table "${logs[@]}" | tee "$out/table.txt"
