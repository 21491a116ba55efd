#!/bin/sh
# /init of the NUMA lab: runs the plan given on the kernel command line
# (lab.plan=WORKLOAD:MODE[:VCPUS[:SECONDS]],... lab.vcpus=N lab.memory=SIZE
# lab.args="...")
# with numavm on this multi-node kernel, prints each run's JSON report and
# the kernel's migration counters on the console, and powers off.
# Modes: off, hard, inverse, numavm, kernel (kernel.numa_balancing=1),
# numad (numad running), churn (all guest memory moved between nodes every
# period: run it with verify), budget (two VMs at once under one host
# migration budget). Off, numavm, kernel and numad start with all
# guest memory preferring node 0 (numactl --preferred=0): first touch on
# one node.
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
export PATH=/bin:/usr/bin:/usr/sbin:/opt/numavm
echo "LAB: up, kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs, nodes: $(ls -d /sys/devices/system/node/node* | wc -l)"
for w in $(cat /proc/cmdline); do
  case $w in
    lab.plan=*) PLAN=${w#lab.plan=} ;;
    lab.vcpus=*) VCPUS=${w#lab.vcpus=} ;;
    lab.memory=*) MEMORY=${w#lab.memory=} ;;
    lab.args=*) ARGS=$(echo "${w#lab.args=}" | tr ',' ' ') ;;
    lab.window=*) WINDOW=${w#lab.window=} ;;
  esac
done
: "${PLAN:=numa02:numavm}" "${VCPUS:=2}" "${MEMORY:=64M}" "${ARGS:=seconds=30}" "${WINDOW:=$MEMORY}"
# A run that does not end (a guest or VMM hang) is stopped with its report.
secs=$(echo "$ARGS" | tr ' ' '\n' | sed -n 's/^seconds=//p')
TIMEOUT=$(( ${secs:-60} * 3 + 60 ))s
for m in irqbypass ccp kvm kvm-amd; do insmod /lib/modules/$m.ko 2>/dev/null || echo "LAB: insmod $m failed"; done
[ -c /dev/kvm ] || { echo "LAB: no /dev/kvm"; echo "LAB: done"; poweroff -f; }
echo 0 > /proc/sys/kernel/numa_balancing
# The kernel refines its TSC calibration a while after boot; a guest whose
# clock was taken before that runs `seconds=` far too long. Wait for it,
# then run one throwaway VM so that nothing measured is the first.
i=0
while [ $i -lt 90 ] && ! dmesg | grep -q -E 'Refined TSC|Marking TSC unstable|Switched to clocksource (hpet|acpi_pm)'; do
  sleep 1; i=$((i + 1))
done
echo "LAB: clock settled after ${i}s: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
numavm run --payload idle --memory 16M --quiet-console --timeout 60s -- seconds=2 >/dev/null 2>&1
vmstat() { awk -v k="$1" '$1 == k {print $2}' /proc/vmstat; }

for run in $(echo "$PLAN" | tr ',' ' '); do
  # WORKLOAD:MODE[:VCPUS[:SECONDS]]: the last two override lab.vcpus and
  # the seconds= of lab.args for this run.
  saved_ifs=$IFS IFS=:
  set -- $run
  IFS=$saved_ifs
  w=$1 mode=$2 run_vcpus=${3:-$VCPUS} run_secs=${4:-}
  run_args=$ARGS run_timeout=$TIMEOUT
  if [ -n "$run_secs" ]; then
    run_args="$(echo "$ARGS" | tr ' ' '\n' | grep -v '^seconds=' | tr '\n' ' ')seconds=$run_secs"
    run_timeout=$(( run_secs * 3 + 60 ))s
  fi
  pre="numactl --preferred=0"
  extra="--balance off"
  case $mode in
    off) ;;
    hard) pre=""; extra="--balance off --placement hard" ;;
    inverse) pre=""; extra="--balance off --placement inverse" ;;
    numavm) extra="--balance on" ;;
    # The kernel's balancing and numad act on the process's page tables;
    # hinting faults would zap those every period and hide the memory from
    # them, so these two are measured with the per-vCPU dirty ring (writes
    # only) instead.
    kernel) echo 1 > /proc/sys/kernel/numa_balancing; extra="--balance off --sampler ring" ;;
    numad) numad -i 1 -l 3 >/dev/null 2>&1; sleep 1; NUMAD=$(cat /run/numad.pid 2>/dev/null || pidof numad)
           extra="--balance off --sampler ring" ;;
    churn) extra="--balance off --sampler off --migrate-churn --migrate-rate 1G" ;;
    budget)
      # Two VMs at once, each allowed 1G/s of its own, sharing a host budget
      # of 128K/s (32 pages/s, --host-migrate-rate): together they may not
      # migrate more than that. Both rows show the pages the lab kernel
      # migrated for the two together.
      echo "LAB-BEGIN $w $mode"
      p0=$(vmstat pgmigrate_success)
      for vm in a b; do
        numactl --preferred=0 numavm run --payload "$w" --vcpus "$run_vcpus" --memory "$MEMORY" \
          --scan-window "$WINDOW" --scan-period 500ms --quiet-console --report=json \
          --timeout "$run_timeout" --balance on --migrate-rate 1G --host-migrate-rate 128K \
          -- $run_args > /tmp/report-$vm.json 2>/tmp/err-$vm.txt &
      done
      wait
      p1=$(vmstat pgmigrate_success)
      for vm in a b; do
        echo "LAB-JSON $w budget-$vm $(tr -d '\n' < /tmp/report-$vm.json)"
        echo "LAB-VMSTAT $w budget-$vm rc=0 numa_pages_migrated=0 pgmigrate_success=$((p1 - p0))"
        sed 's/^/LAB-ERR /' /tmp/err-$vm.txt | grep -i "error\|fault\|budget" | tail -3
      done
      echo "LAB-END $w $mode"
      continue ;;
    *) echo "LAB: unknown mode $mode"; continue ;;
  esac
  echo "LAB-BEGIN $w $mode"
  m0=$(vmstat numa_pages_migrated); p0=$(vmstat pgmigrate_success)
  $pre numavm run --payload "$w" --vcpus "$run_vcpus" --memory "$MEMORY" --scan-window "$WINDOW" \
    --scan-period 500ms --quiet-console --report=json --timeout "$run_timeout" $extra -- $run_args \
    > /tmp/report.json 2>/tmp/err.txt
  rc=$?
  m1=$(vmstat numa_pages_migrated); p1=$(vmstat pgmigrate_success)
  echo 0 > /proc/sys/kernel/numa_balancing
  if [ -n "${NUMAD:-}" ]; then
    kill "$NUMAD" 2>/dev/null
    i=0
    while kill -0 "$NUMAD" 2>/dev/null && [ $i -lt 25 ]; do sleep 0.2; i=$((i + 1)); done
    kill -9 "$NUMAD" 2>/dev/null
    NUMAD=
  fi
  if [ -n "$(pidof numad)" ]; then echo "LAB-ERR numad is still running"; fi
  echo "LAB-JSON $w $mode $(tr -d '\n' < /tmp/report.json)"
  echo "LAB-VMSTAT $w $mode rc=$rc numa_pages_migrated=$((m1 - m0)) pgmigrate_success=$((p1 - p0))"
  [ $rc -ne 0 ] && sed 's/^/LAB-ERR /' /tmp/err.txt | tail -5
  echo "LAB-END $w $mode"
done
echo "LAB: done"
sync
poweroff -f
