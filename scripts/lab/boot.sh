#!/usr/bin/env bash
# Boots the NUMA lab once: Debian's kernel under qemu-system-x86_64 -accel
# tcg -cpu max (AMD SVM, so KVM works inside) with NODES NUMA nodes of
# CPUS_PER_NODE CPUs and MEM_PER_NODE each, distances 10 local, 20 to the
# next node, 30 across (4 nodes: a ring), running PLAN (see guest.sh).
# Serial console to LOG; progress lines (LAB...) echoed to stderr.
# Usage: boot.sh KERNEL INITRD NODES PLAN VCPUS MEMORY ARGS LOG [TIMEOUT [INTERVAL [WINDOW]]]
# Environment: CPUS_PER_NODE, MEM_PER_NODE (e.g. 512M, 2G), UP_TIMEOUT,
# BEGIN_TIMEOUT, LOCKUP_TIMEOUT (seconds, below), LAB_QEMU (the
# QEMU binary), LAB_QEMU_ARGS (extra options, e.g. firmware paths) and
# LAB_NUMAVM_ARGS (extra `numavm run` flags for mode numavm-extra) and
# LAB_TCG_THREAD (multi, the default: one host thread per lab CPU; single:
# all lab CPUs on one host thread, slower, cross-CPU events in order).
set -uo pipefail
kernel=$1 initrd=$2 nodes=$3 plan=$4 vcpus=$5 memory=$6 args=$7 log=$8 timeout=${9:-1800}
interval=${10:-5} window=${11:-$memory}
cpus_per_node=${CPUS_PER_NODE:-1}
mem_per_node=${MEM_PER_NODE:-512M}
case $mem_per_node in
  *G) node_mib=$(( ${mem_per_node%G} * 1024 )) ;;
  *M) node_mib=${mem_per_node%M} ;;
  *) echo "boot.sh: MEM_PER_NODE $mem_per_node: want e.g. 512M or 2G" >&2; exit 2 ;;
esac
qemu=${LAB_QEMU:-qemu-system-x86_64}
q=(-machine q35 -accel tcg,thread=${LAB_TCG_THREAD:-multi} -cpu max -smp $((nodes * cpus_per_node)),sockets=$nodes,cores=$cpus_per_node,threads=1
   -m $((nodes * node_mib))M)
# shellcheck disable=SC2206
[ -n "${LAB_QEMU_ARGS:-}" ] && q+=(${LAB_QEMU_ARGS})
for ((n = 0; n < nodes; n++)); do
  q+=(-object memory-backend-ram,id=m$n,size=${node_mib}M -numa node,nodeid=$n,memdev=m$n
      -numa cpu,node-id=$n,socket-id=$n)
done
for ((a = 0; a < nodes; a++)); do
  for ((b = a + 1; b < nodes; b++)); do
    d=$(( (b - a == 1 || (a == 0 && b == nodes - 1)) ? 20 : 30 ))
    q+=(-numa dist,src=$a,dst=$b,val=$d)
  done
done
# numa_balancing=disable: the kernel's scanner marks nothing before a
# KERNEL run turns it on (pages it marked while booting would fault and
# migrate in runs where nothing balances).
q+=(-kernel "$kernel" -initrd "$initrd"
    -append "console=ttyS0 panic=-1 loglevel=1 numa_balancing=disable lab.plan=$plan lab.vcpus=$vcpus lab.memory=$memory lab.args=$args lab.interval=$interval lab.window=$window${LAB_NUMAVM_ARGS:+ lab.numavm=$(echo "$LAB_NUMAVM_ARGS" | tr ' ' ',')}"
    -display none -monitor none -serial "file:$log" -no-reboot -nodefaults)
: > "$log"
timeout -k 5 "$timeout" "$qemu" "${q[@]}" &
qpid=$!
# Progress: follow the console's LAB lines while QEMU runs.
tail -n +1 -F "$log" 2>/dev/null | grep --line-buffered -E '^LAB(:|-BEGIN|-VMSTAT|-ERR)' >&2 &
tpid=$!
# A lab that never comes up (a CPU soft-locked while booting on a loaded
# host) is ended after UP_TIMEOUT seconds, and one that came up but never
# began its first run (a soft lockup after "LAB: up") BEGIN_TIMEOUT seconds
# later - not at the runs' budget.
(
  for what in '^LAB: up' '^LAB-BEGIN'; do
    limit=${UP_TIMEOUT:-300}
    [ "$what" = '^LAB-BEGIN' ] && limit=${BEGIN_TIMEOUT:-300}
    for ((t = 0; ; t += 5)); do
      grep -q "$what" "$log" && break
      kill -0 $qpid 2>/dev/null || exit 0
      if ((t >= limit)); then
        case $what in
          *up) step="come up" ;;
          *) step="begin its first run" ;;
        esac
        echo "lab: the lab did not $step within $limit s; ended" >&2
        kill $qpid
        exit 0
      fi
      sleep 5
    done
  done
  # A lab kernel whose CPUs stay soft-locked (seen from a run's start on
  # a loaded host: every CPU stuck for the rest of the boot, the console
  # silent but for the watchdog) is ended once one has been stuck for
  # LOCKUP_TIMEOUT seconds: its run is a lab failure, tried again.
  lockup=${LOCKUP_TIMEOUT:-120}
  while kill -0 $qpid 2>/dev/null; do
    stuck=$(sed -n 's/.*soft lockup - CPU#[0-9]* stuck for \([0-9]*\)s.*/\1/p' "$log" | sort -n | tail -1)
    if [ -n "$stuck" ] && [ "$stuck" -ge "$lockup" ]; then
      echo "lab: the lab kernel's CPUs stayed soft-locked (${stuck}s); ended" >&2
      kill $qpid
      exit 0
    fi
    sleep 5
  done
) &
wpid=$!
wait $qpid
rc=$?
sleep 0.5
kill $tpid $wpid 2>/dev/null
wait $tpid $wpid 2>/dev/null
grep -q '^LAB: done' "$log" || { echo "lab: the lab did not finish (qemu rc=$rc, log $log)" >&2; exit 1; }
