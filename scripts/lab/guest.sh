#!/bin/sh
# /init of the NUMA lab: runs the plan given on the kernel command line
# (lab.plan=WORKLOAD:MODE[:VCPUS[:SECONDS]],... lab.vcpus=N lab.memory=SIZE
# lab.args="..." lab.interval=SECONDS lab.window=SIZE)
# with numavm on this multi-node kernel, prints each run's JSON report and
# the kernel's NUMA counters on the console, and powers off.
#
# Modes (docs/numa-lab.md has the method and why it is fair):
#   off, off-anon        nothing balances (memfd / anonymous memory)
#   hard, inverse        vCPUs and memory bound as autonuma-benchmark does
#   numavm               numavm --balance on at its defaults (memfd, hints)
#   numavm-anon          the same on anonymous memory (its anon default:
#                        PROT_NONE probes where the kernel's KVM names the
#                        faulting page - the newest stack - else wp)
#   numavm-evict         ... on anonymous memory with the evict sampler
#                        (userfaultfd missing faults: reads too, any kernel)
#   numavm-thp           ... on anonymous memory with transparent hugepages
#   numavm-extra         numavm on memfd with lab.numavm's extra flags
#   numavm-window        numavm with the fixed-window scanner (lab.window)
#   kernel, kernel-thp   kernel.numa_balancing=1 on anonymous memory (+THP)
#   numad                numad, anonymous memory
#   churn                all guest memory moved every period (run verify),
#                        each page where the guest maps it (--migrate-mapped)
#   churn-protected      the heap the same way with numavm's default moves
#                        (each batch's runs made PROT_NONE first; the lab
#                        kernel must be 6.5+: the backports stack; else
#                        mapped); the payload's runtime does not churn
#   churn-unmapped       the same with --migrate-unmapped (through the alias
#                        process, each run unmapped from the guest first)
#   budget               two VMs at once under one host migration budget
# Every mode but hard, inverse, the churns and budget starts with its first
# touch on node 0 through a cgroup v2 cpuset (cpus and mems of node 0),
# widened to all nodes once the VM's resident set stops growing: no memory policy is
# left behind for the kernel's scanner to trip on (vma_policy_mof). The
# kernel's and numad's runs do not sample (numavm --sampler off): where the
# memory is comes from move_pages of the payload's declared layout every
# lab.interval seconds, for every mode alike.
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
export PATH=/bin:/usr/bin:/usr/sbin:/opt/numavm
NODES=$(ls -d /sys/devices/system/node/node* | wc -l)
echo "LAB: up, kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs, nodes: $NODES"
for w in $(cat /proc/cmdline); do
  case $w in
    lab.plan=*) PLAN=${w#lab.plan=} ;;
    lab.vcpus=*) VCPUS=${w#lab.vcpus=} ;;
    lab.memory=*) MEMORY=${w#lab.memory=} ;;
    lab.args=*) ARGS=$(echo "${w#lab.args=}" | tr ',' ' ') ;;
    lab.window=*) WINDOW=${w#lab.window=} ;;
    lab.interval=*) INTERVAL=${w#lab.interval=} ;;
    lab.numavm=*) NUMAVM_EXTRA=$(echo "${w#lab.numavm=}" | tr ',' ' ') ;;
  esac
done
: "${PLAN:=numa02:numavm}" "${VCPUS:=2}" "${MEMORY:=64M}" "${ARGS:=seconds=30}" "${WINDOW:=$MEMORY}"
: "${INTERVAL:=5}"
# A run that does not end (a guest or VMM hang) is stopped with its report.
secs=$(echo "$ARGS" | tr ' ' '\n' | sed -n 's/^seconds=//p')
TIMEOUT=$(( ${secs:-60} * 3 + 120 ))s
for m in irqbypass ccp kvm kvm-amd; do
  [ -f /lib/modules/$m.ko.xz ] && unxz /lib/modules/$m.ko.xz
  insmod /lib/modules/$m.ko 2>/dev/null || echo "LAB: insmod $m failed"
done
[ -c /dev/kvm ] || { echo "LAB: no /dev/kvm"; echo "LAB: done"; poweroff -f; }
echo 0 > /proc/sys/kernel/numa_balancing
echo never > /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
# No background compaction: its migrations (within a node) would count in
# pgmigrate_success beside the balancers' (a CI run of OFF saw 394).
echo 0 > /proc/sys/vm/compaction_proactiveness 2>/dev/null
# cgroup v2 with the cpuset controller, for first touch on node 0.
mkdir -p /sys/fs/cgroup
mount -t cgroup2 none /sys/fs/cgroup
echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control
ALL_CPUS=$(cat /sys/devices/system/cpu/online)
ALL_MEMS=0-$((NODES - 1))
# The kernel refines its TSC calibration a while after boot; a guest whose
# clock was taken before that runs `seconds=` far too long. Wait for it,
# then run one throwaway VM so that nothing measured is the first.
i=0
while [ $i -lt 90 ] && ! dmesg | grep -q -E 'Refined TSC|Marking TSC unstable|Switched to clocksource (hpet|acpi_pm)'; do
  sleep 1; i=$((i + 1))
done
echo "LAB: clock settled after ${i}s: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
numavm run --payload idle --memory 16M --quiet-console --duration 60s -- seconds=2 >/dev/null 2>&1
vmstat() { awk -v k="$1" '$1 == k {print $2}' /proc/vmstat; }
COUNTERS="numa_pte_updates numa_huge_pte_updates numa_hint_faults numa_hint_faults_local numa_pages_migrated pgmigrate_success pgmigrate_fail"
snapshot() { for c in $COUNTERS; do echo "$c=$(vmstat $c)"; done; }
# The resident set (KiB) of process $1: anonymous and shared memory.
# (0 once the process is gone: awk reads a pipe, so it always gets to END.)
rss() { cat /proc/$1/status 2>/dev/null | awk '/^(RssAnon|RssShmem):/ {s += $2} END {print s + 0}'; }

# The kernel stacks of every thread of numavm process $1 and of its children
# (the alias process), once, on the lab's console (LAB-STACK): where a run
# that stopped making progress waits.
dump_stacks() {
  for p in $1 $(cat /proc/$1/task/*/children 2>/dev/null); do
    for t in /proc/$p/task/*; do
      echo "LAB-STACK $p/${t##*/} $(cat $t/comm 2>/dev/null) state=$(awk '/^State:/ {print $2}' $t/status 2>/dev/null) wchan=$(cat $t/wchan 2>/dev/null)"
      sed 's/^/LAB-STACK   /' $t/stack 2>/dev/null | head -n 16
    done
  done
}
# Waits for numavm process $1; if it is still there $2 seconds on, dumps
# its threads' stacks once.
# The kernel's own access locality of process $1 while its balancing is
# on: each thread's recent NUMA hinting faults by the memory's node (a count
# that halves every scan period), those on the node the thread is on and
# all, from /proc/PID/task/TID/sched - "LOCAL ALL", nothing if none.
kernel_faults() {
  [ "$(cat /proc/sys/kernel/numa_balancing 2>/dev/null)" = 1 ] || return 0
  cat /proc/"$1"/task/*/sched 2>/dev/null | awk '
    /^current_node=/ { split($1, c, "="); node = c[2] + 0 }
    /^numa_faults / { gsub(",", ""); split($2, n, "="); split($3, p, "="); split($4, s, "=")
                      f = p[2] + s[2]; all += f; if (n[2] + 0 == node) local += f }
    END { if (all > 0) printf "%d %d\n", local, all }'
}

# Waits for process $1, dumping its stacks once after $2 seconds; keeps the
# kernel's fault counts of its last look in /tmp/kfaults.
wait_dumping() {
  n=0
  rm -f /tmp/kfaults
  while kill -0 "$1" 2>/dev/null; do
    sleep 5; n=$((n + 5))
    [ $n -eq "$2" ] && dump_stacks "$1"
    kernel_faults "$1" > /tmp/kfaults.new
    [ -s /tmp/kfaults.new ] && mv /tmp/kfaults.new /tmp/kfaults
  done
  wait "$1"
}

# Runs numavm in a cpuset of node 0 until its resident set stops growing,
# then widens the cpuset to every node (cgroup v2 migrates nothing when it
# widens). Output in /tmp/report.json, /tmp/err.txt; exit status in $rc.
first_touch_on_node0() {
  mkdir -p /sys/fs/cgroup/ft
  cat /sys/devices/system/node/node0/cpulist > /sys/fs/cgroup/ft/cpuset.cpus
  echo 0 > /sys/fs/cgroup/ft/cpuset.mems
  sh -c 'echo $$ > /sys/fs/cgroup/ft/cgroup.procs; exec numavm "$@"' sh "$@" \
    > /tmp/report.json 2>>/tmp/err.txt &
  pid=$!
  last=0 still=0 waited=0
  while kill -0 $pid 2>/dev/null && [ $still -lt 2 ] && [ $waited -lt 600 ]; do
    sleep 1; waited=$((waited + 1))
    now=$(rss $pid)
    # A sign of life while a first touch takes long (a lab that hangs here
    # shows whether the shell still runs and the VM still grows).
    [ $((waited % 60)) -eq 0 ] && echo "LAB: first touch, ${waited}s, resident $((now / 1024)) MiB"
    # A Linux guest boots, pauses, then its workload allocates: wait for
    # the workload's first line (FT_AFTER) before looking for the end.
    if [ -n "${FT_AFTER:-}" ] && ! grep -q "$FT_AFTER" /tmp/err.txt; then last=$now; continue; fi
    # Grown by under 1% (and something there): the first touch is over.
    if [ "$now" -gt 0 ] && [ $(( (now - last) * 100 )) -le "$now" ]; then
      still=$((still + 1))
    else
      still=0
    fi
    last=$now
  done
  echo "$ALL_CPUS" > /sys/fs/cgroup/ft/cpuset.cpus
  echo "$ALL_MEMS" > /sys/fs/cgroup/ft/cpuset.mems
  echo "LAB: widened after ${waited}s, resident $((last / 1024)) MiB"
  echo "LAB-WIDEN $w $mode $waited"
  wait_dumping $pid $(( ${run_secs:-${secs:-60}} + 120 ))
  rc=$?
  echo $pid > /sys/fs/cgroup/cgroup.procs 2>/dev/null
  rmdir /sys/fs/cgroup/ft 2>/dev/null
}

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
    run_timeout=$(( run_secs * 3 + 120 ))s
  fi
  if [ "$w" = linux ]; then
    # A Linux guest on numavm's VMM, one guest NUMA cell per lab node with
    # a vCPU each: its console on the lab's (prefixed LINUX), its report.
    # numabench's numa02 in the guest (guest-tools/linux/numabench.c): a
    # short run to show it works (boot: a vCPU per cell), a long one to
    # balance (two vCPUs per cell, the whole VM first touched on lab node 0
    # through the cpuset as for the kernel's runs, then let go: balance:
    # numavm balances the guest from the host; guest: the guest kernel's
    # own NUMA balancing on its cells, numavm measuring only).
    per_cell=2 first_touch=yes secs_run=${run_secs:-${secs:-60}}
    case $mode in
      boot) per_cell=1 first_touch=; extra="--balance off --sampler off"; bench="numabench=numa02,64M,5 numa_balancing=disable" ;;
      balance) extra="--balance on"; bench="numabench=numa02,320M,$secs_run numa_balancing=disable" ;;
      guest) extra="--balance off"; bench="numabench=numa02,320M,$secs_run numa_balancing=enable" ;;
      *) echo "LAB: unknown mode $mode for linux"; continue ;;
    esac
    cells="" v=0
    for n in $(seq 0 $((NODES - 1))); do
      if [ $per_cell -eq 1 ]; then cells="$cells --cell 256M:$v"; else cells="$cells --cell 256M:$v-$((v + per_cell - 1))"; fi
      v=$((v + per_cell))
    done
    echo "LAB-BEGIN $w $mode $run"
    : > /tmp/err.txt  # before tail -f looks for it
    # The guest's console as it comes, on the lab's.
    tail -f /tmp/err.txt | tr -d '\r' | sed 's/^/LINUX: /' &
    tpid=$!
    set -- run --kernel /opt/numavm/linux/vmlinuz --initrd /opt/numavm/linux/initrd.gz \
      --append "console=ttyS0 earlyprintk=serial,ttyS0 panic=-1 loglevel=7 rdinit=/init $bench" \
      --vcpus "$v" $cells --report=json --duration 900s --placement-interval "${INTERVAL}s" $extra
    if [ -n "$first_touch" ]; then
      FT_AFTER="NUMABENCH numa02 threads" first_touch_on_node0 "$@"
    else
      numavm "$@" > /tmp/report.json 2>>/tmp/err.txt
      rc=$?
    fi
    # End tail only: the rest of the pipeline then drains what it holds
    # (killing it lost the buffered end of the console, or all of it).
    sleep 1
    killall tail 2>/dev/null
    wait $tpid
    echo "LAB-JSON $w $mode $(tr -d '\n' < /tmp/report.json)"
    echo "LAB-LINUX $w $mode rc=$rc"
    echo "LAB-END $w $mode $run"
    continue
  fi
  common="--payload $w --vcpus $run_vcpus --memory $MEMORY --quiet-console --report=json --duration $run_timeout --placement-interval ${INTERVAL}s --stats-interval 10s"
  cpuset=yes
  case $mode in
    off) extra="--balance off --sampler off" ;;
    off-anon) extra="--balance off --sampler off --backing anon" ;;
    hard) cpuset=; extra="--balance off --sampler off --placement hard" ;;
    inverse) cpuset=; extra="--balance off --sampler off --placement inverse" ;;
    numavm) extra="--balance on" ;;
    numavm-anon) extra="--balance on --backing anon" ;;
    numavm-evict) extra="--balance on --backing anon --sampler evict" ;;
    numavm-thp) extra="--balance on --backing thp"; echo madvise > /sys/kernel/mm/transparent_hugepage/enabled ;;
    numavm-extra) extra="--balance on ${NUMAVM_EXTRA:-}" ;;
    numavm-window) extra="--balance on --scan-window $WINDOW --scan-period 500ms" ;;
    kernel) echo 1 > /proc/sys/kernel/numa_balancing; extra="--balance off --sampler off --backing anon" ;;
    kernel-thp) echo 1 > /proc/sys/kernel/numa_balancing; echo madvise > /sys/kernel/mm/transparent_hugepage/enabled
                extra="--balance off --sampler off --backing thp" ;;
    numad) mkdir -p /var/log; : > /var/log/numad.log
           numad -i 5 -l 7 >/dev/null 2>&1; sleep 1; NUMAD=$(cat /run/numad.pid 2>/dev/null || pidof numad)
           extra="--balance off --sampler off --backing anon" ;;
    churn) cpuset=; extra="--balance off --sampler off --migrate-churn --migrate-rate 1G --migrate-mapped" ;;
    churn-protected) cpuset=; extra="--balance off --sampler off --migrate-churn --migrate-rate 1G --migrate-protected" ;;
    churn-unmapped) cpuset=; extra="--balance off --sampler off --migrate-churn --migrate-rate 1G --migrate-unmapped" ;;
    budget)
      # Two VMs at once, each allowed 1G/s of its own, sharing a host budget
      # of 128K/s (32 pages/s, --host-migrate-rate): together they may not
      # migrate more than that. Both rows show the pages the lab kernel
      # migrated for the two together.
      echo "LAB-BEGIN $w $mode $run"
      p0=$(vmstat pgmigrate_success)
      for vm in a b; do
        numactl --preferred=0 numavm run $common --scan-window "$WINDOW" --scan-period 500ms \
          --balance on --migrate-rate 1G --host-migrate-rate 128K \
          -- $run_args > /tmp/report-$vm.json 2>/tmp/err-$vm.txt &
      done
      wait
      p1=$(vmstat pgmigrate_success)
      for vm in a b; do
        echo "LAB-JSON $w budget-$vm $(tr -d '\n' < /tmp/report-$vm.json)"
        echo "LAB-VMSTAT $w budget-$vm rc=0 numa_pages_migrated=0 pgmigrate_success=$((p1 - p0))"
        sed 's/^/LAB-ERR /' /tmp/err-$vm.txt | grep -i "error\|fault\|budget" | tail -3
      done
      echo "LAB-END $w $mode $run"
      continue ;;
    *) echo "LAB: unknown mode $mode"; continue ;;
  esac
  echo "LAB-BEGIN $w $mode $run"
  snapshot > /tmp/vmstat0
  # numavm's progress (--stats-interval) on the lab's console as it comes:
  # a run the lab breaks still shows how far it got.
  : > /tmp/err.txt
  tail -f /tmp/err.txt | sed 's/^/LAB-PROGRESS /' &
  tpid=$!
  if [ -n "$cpuset" ]; then
    first_touch_on_node0 run $common $extra -- $run_args
  else
    numavm run $common $extra -- $run_args > /tmp/report.json 2>>/tmp/err.txt &
    wait_dumping $! $(( ${run_secs:-${secs:-60}} + 180 ))
    rc=$?
  fi
  sleep 1
  killall tail 2>/dev/null
  wait $tpid
  snapshot > /tmp/vmstat1
  echo 0 > /proc/sys/kernel/numa_balancing
  echo never > /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
  if [ -n "${NUMAD:-}" ]; then
    kill "$NUMAD" 2>/dev/null
    i=0
    while kill -0 "$NUMAD" 2>/dev/null && [ $i -lt 25 ]; do sleep 0.2; i=$((i + 1)); done
    kill -9 "$NUMAD" 2>/dev/null
    NUMAD=
    # What numad thought of the VM (its log, debug level): the table's
    # peer evidence when it moved nothing.
    { grep -i -E "advis|moving|bind|assign" /var/log/numad.log | head -n 20
      grep -v "^\s*$" /var/log/numad.log | tail -n 12; } 2>/dev/null | sed "s/^/LAB-NUMAD $w /"
  fi
  if [ -n "$(pidof numad)" ]; then echo "LAB-ERR numad is still running"; fi
  # The nested guest triple-faulted: this lab's failure under page
  # migration (docs/numa-lab.md), not a result. No LAB-JSON, no LAB-END:
  # lab.sh counts it and runs it again in a fresh boot.
  if [ $rc -eq 3 ] && grep -q "triple fault" /tmp/err.txt; then
    echo "LAB-FAIL $w $mode $(grep -m1 'triple fault' /tmp/err.txt | cut -c1-120)"
    tail -n 3 /tmp/err.txt | sed 's/^/LAB-ERR /'
    continue
  fi
  # A vCPU that stopped making progress until the timeout: the same lab
  # failure (seen with numavm's balancer and sampler off, the kernel's
  # balancing migrating), counted and retried.
  if [ $rc -eq 4 ] && grep -q "timed out" /tmp/err.txt; then
    echo "LAB-FAIL $w $mode a vCPU stopped making progress: $(grep -m1 'timed out' /tmp/err.txt | cut -c1-80)"
    # numavm's progress lines (--stats-interval): which vCPU stopped, when;
    # and what numavm itself said about it (its other stderr lines).
    grep '^numavm: ' /tmp/err.txt | tail -n 4 | sed 's/^/LAB-ERR /'
    grep -v '^numavm: [0-9.]* s | ' /tmp/err.txt | head -n 8 | sed 's/^/LAB-ERR /'
    continue
  fi
  echo "LAB-JSON $w $mode $(tr -d '\n' < /tmp/report.json)"
  deltas=$(awk -F= 'NR == FNR {a[$1] = $2; next} {printf "%s=%d ", $1, $2 - a[$1]}' /tmp/vmstat0 /tmp/vmstat1)
  echo "LAB-VMSTAT $w $mode rc=$rc $deltas"
  [ -s /tmp/kfaults ] && echo "LAB-KFAULTS $w $mode $(cat /tmp/kfaults)"
  [ $rc -ne 0 ] && sed 's/^/LAB-ERR /' /tmp/err.txt | tail -5
  echo "LAB-END $w $mode $run"
done
echo "LAB: done"
sync
poweroff -f
