#!/bin/sh
# /init of a Linux guest of `numavm run --kernel` (scripts/guest-initramfs.sh;
# the NUMA lab's workload linux): says what the guest kernel sees - its NUMA
# nodes from the VMM's ACPI SRAT/SLIT, CPUs, memory - runs numactl -H, then
# the numabench workload the kernel command line names
# (numabench=WORKLOAD,SIZE,SECONDS), and powers off (ACPI S5 through the
# VMM's sleep register ends the VM).
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
export PATH=/bin:/usr/bin
echo "GUEST-UP kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs"
echo "GUEST-NODES $(cat /sys/devices/system/node/online)"
for n in /sys/devices/system/node/node*; do
  echo "GUEST-NODE $(basename "$n") cpus $(cat "$n/cpulist") distance $(cat "$n/distance")" \
       "$(awk '/MemTotal/ {print "memory", $4, $5}' "$n/meminfo")"
done
numactl -H 2>&1 | sed 's/^/GUEST-NUMACTL /'
for arg in $(cat /proc/cmdline); do
  case $arg in
    numabench=*)
      spec=${arg#numabench=}
      w=$(echo "$spec" | cut -d, -f1) size=$(echo "$spec" | cut -d, -f2) secs=$(echo "$spec" | cut -d, -f3)
      echo "GUEST-NUMA-BALANCING $(cat /proc/sys/kernel/numa_balancing 2>/dev/null || echo none)"
      numabench "$w" --size "${size:-64M}" --seconds "${secs:-10}"
      echo "GUEST-NUMABENCH-EXIT $?"
      grep -E '^numa_(pte_updates|hint_faults|pages_migrated)' /proc/vmstat | sed 's/^/GUEST-VMSTAT /'
      ;;
  esac
done
echo "GUEST-POWEROFF"
poweroff -f
