#!/usr/bin/env bash
# The NUMA lab: boots a Linux kernel with 2 and 4 NUMA nodes under QEMU
# (TCG, nested KVM inside) and runs numavm's workloads under every mode -
# off, hard, numavm (memfd, anon, thp), kernel (kernel.numa_balancing=1,
# measured fairly: anonymous memory, first touch through a cpuset, no
# policy left behind), numad - then prints the comparison table. Progress
# goes to stderr as the runs happen. A run the lab itself breaks (the lab
# kernel panics, a nested guest triple-faults) is retried once in a fresh
# boot and counted; it is never a result.
#
# Usage: scripts/lab.sh [--nodes 2,4] [--workloads numa01,numa02,...]
#          [--modes off,hard,numavm,...] [--seconds 120] [--memory 1G]
#          [--working-set 768M] [--vcpus 4] [--mem-per-node 2G]
#          [--interval 5] [--window 64M] [--stack debian12|backports|newest]
#          [--numavm-args "FLAGS"] [--tcg multi|single]
#          [--verify-seconds 120] [--no-verify]
#          [--deadline SECONDS] [--out DIR]
# Modes: scripts/lab/guest.sh. verify runs under migration churn with 1 and
# 2 vCPUs (--no-verify skips them); --stack backports runs bookworm-
# backports' QEMU 10 and 6.12 kernel (unpacked into the lab cache, nothing
# installed), which sustains far longer migration runs; --stack newest runs
# that QEMU with trixie-backports' kernel (7.x), whose KVM names the page of
# a vCPU's failed access (KVM_EXIT_MEMORY_FAULT), so that numavm's anon
# default there is the PROT_NONE sampler, which sees reads. --numavm-args gives
# mode numavm-extra (memfd unless they say --backing) `numavm run` flags, e.g.
# "--scan-stall-budget 20%" for a row at another scan budget. --tcg single
# runs every lab CPU on one host thread (QEMU's -accel tcg,thread=single):
# slower, with the lab CPUs' cross-CPU events (TLB shootdowns) in order.
# --deadline bounds the whole lab's wall time: a boot gets at most what is
# left, and the runs not done when it passes are lab failures (LAB-FAIL
# ... the lab's deadline passed), never results - CI's lab test ends with
# its table and its log instead of being killed by ctest.
# Environment: NUMAVM_LAB_CACHE (default build/lab-cache) keeps kernels and
# QEMU between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
nodes_list=2,4
workloads=numa01,numa02,numa02_read
modes=off,hard,numavm,kernel,numad
seconds=120
memory=1G
working_set=768M
vcpus=4
mem_per_node=2G
interval=5
window=64M
stack=debian12
numavm_args=""
tcg=multi
out=build/lab
verify=yes
verify_seconds=120
deadline=""
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) nodes_list=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --memory) memory=$2; shift 2 ;;
    --working-set) working_set=$2; shift 2 ;;
    --vcpus) vcpus=$2; shift 2 ;;
    --mem-per-node) mem_per_node=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    --window) window=$2; shift 2 ;;
    --stack) stack=$2; shift 2 ;;
    --numavm-args) numavm_args=$2; shift 2 ;;
    --tcg) tcg=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --verify-seconds) verify_seconds=$2; shift 2 ;;
    --no-verify) verify=no; shift ;;
    --deadline) deadline=$2; shift 2 ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "lab: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case $tcg in
  multi|single) export LAB_TCG_THREAD=$tcg ;;
  *) echo "lab: --tcg $tcg: want multi or single" >&2; exit 2 ;;
esac
case $deadline in
  ''|*[!0-9]*) [ -z "$deadline" ] || { echo "lab: --deadline $deadline: want whole seconds" >&2; exit 2; } ;;
esac
# A mode is an arm of the guest's case statements (scripts/lab/guest.sh:
# its modes, and the linux workload's): a name it lacks would be skipped
# there, minutes into the boot, so it is refused here.
known_modes=" $(sed -n 's/^ \{4,6\}\([a-z][a-z-]*\)).*/\1/p' scripts/lab/guest.sh | tr '\n' ' ')"
for m in ${modes//,/ }; do
  case $known_modes in
    *" $m "*) ;;
    *) echo "lab: unknown mode $m (modes:${known_modes% })" >&2; exit 2 ;;
  esac
done
started=$(date +%s)
[ -x build/numavm ] && [ -x build/tests/lab_table ] || { ./scripts/install-deps.sh && ./scripts/build.sh; }
./scripts/install-deps.sh >/dev/null
cache=${NUMAVM_LAB_CACHE:-build/lab-cache}
mkdir -p "$out" "$cache"
case $stack in
  debian12) version=$(./scripts/lab/kernel.sh "$cache"); qemu=qemu-system-x86_64 ;;
  backports) eval "$(./scripts/lab/backports.sh "$cache")" ;;  # sets version, qemu, QEMU_* env
  newest) eval "$(./scripts/lab/backports.sh "$cache" trixie-backports)" ;;
  *) echo "lab: unknown stack $stack (debian12, backports or newest)" >&2; exit 2 ;;
esac
export LAB_QEMU=$qemu
kernel="$cache/kernel-$version/boot/vmlinuz-$version"
echo "lab: kernel $version, $($qemu --version | head -1); building the initramfs" >&2
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
  # 4 nodes: 1 CPU each.
  cpn=$(( nodes <= 2 ? 2 : 1 ))
  log="$out/lab-${nodes}node.log"
  : > "$log"
  todo=$plan
  declare -A failed=()
  boot_failures=0
  while [ -n "$todo" ]; do
    runs=$(echo "$todo" | tr ',' '\n' | wc -l)
    echo "lab: $nodes nodes x $cpn CPUs x $mem_per_node, $runs runs (VMs of $memory, working set $working_set, ${seconds}s)" >&2
    part="$out/boot.log"
    budget=$(( runs * (3 * seconds + 240) + 300 ))
    if [ -n "$deadline" ]; then
      left=$(( deadline - ($(date +%s) - started) ))
      # Too little left for a boot to start a run: what is left is not run.
      if [ "$left" -lt 120 ]; then
        for entry in ${todo//,/ }; do
          IFS=: read -r w m _ <<<"$entry"
          echo "LAB-FAIL $w $m the lab's deadline passed" >> "$log"
          echo "lab: $w $m: not run, the lab's deadline (${deadline}s) passed" >&2
        done
        break
      fi
      [ "$left" -lt "$budget" ] && budget=$left
    fi
    CPUS_PER_NODE=$cpn MEM_PER_NODE=$mem_per_node LAB_NUMAVM_ARGS=$numavm_args ./scripts/lab/boot.sh "$kernel" "$out/initrd.gz" \
      "$nodes" "$todo" "$vcpus" "$memory" "size=$working_set,seconds=$seconds" "$part" "$budget" \
      "$interval" "$window" || true
    tr -d '\r' < "$part" > "$part.clean" && mv "$part.clean" "$part"
    cat "$part" >> "$log"
    # What finished: a LAB-END per run. A run that began and did not end
    # broke in the lab - the boot ended in it (a lab kernel panic), or its
    # nested guest triple-faulted (guest.sh printed LAB-FAIL and went on) -
    # and is counted as a lab failure and tried once more in a fresh boot,
    # with the runs the boot did not reach.
    rest=""
    for entry in ${todo//,/ }; do
      IFS=: read -r w m _ <<<"$entry"
      if grep -q "^LAB-END $w $m $entry\$" "$part"; then continue; fi
      if grep -q "^LAB-BEGIN $w $m $entry\$" "$part"; then
        why=$(grep -m1 "^LAB-FAIL $w $m " "$part" | cut -d' ' -f4- | cut -c1-120 || true)
        if [ -z "$why" ]; then
          # Nothing recognisable (a panic cut short): no match is no error.
          why=$(grep -m1 -E 'Kernel panic|triple fault|corrupted stack|soft lockup|BUG:|Oops|Call Trace' "$part" | tr -d '\r' | cut -c1-120 || true)
          echo "LAB-FAIL $w $m ${why:-the lab stopped}" >> "$log"
        fi
        echo "lab: $w $m: lab failure (${why:-the lab stopped})" >&2
        failed[$entry]=$(( ${failed[$entry]:-0} + 1 ))
        [ "${failed[$entry]}" -ge 2 ] && { echo "lab: $w $m failed twice; skipped" >&2; continue; }
      fi
      rest="$rest${rest:+,}$entry"
    done
    # A boot that started no run (it never came up) is a lab failure too:
    # booted once more, then the lab is broken and we stop.
    if [ "$rest" = "$todo" ] && ! grep -q '^LAB-BEGIN' "$part"; then
      boot_failures=$(( ${boot_failures:-0} + 1 ))
      echo "LAB-FAIL-BOOT the lab started no run ($(grep -m1 -E 'soft lockup|Kernel panic|BUG:' "$part" | cut -c1-100))" >> "$log"
      if [ "$boot_failures" -ge 2 ]; then
        echo "lab: the lab did not start a run twice (log $part)" >&2
        exit 1
      fi
      echo "lab: the lab started no run; booting once more" >&2
    fi
    todo=$rest
  done
  unset failed
  logs+=("$log")
done
echo
echo "numavm NUMA lab, $(date -u +%Y-%m-%d), kernel $version, QEMU TCG, VMs of $memory ($working_set working set, $vcpus vCPUs), ${seconds}s per run"
mkdir -p "$out/plots"
build/tests/lab_table --plot "$out/plots" "${logs[@]}" | tee "$out/table.txt"
echo "lab: convergence plots in $out/plots" >&2
