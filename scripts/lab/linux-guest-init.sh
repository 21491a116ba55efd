#!/bin/sh
# /init of the Linux guest that numavm boots inside the NUMA lab
# (`numavm run --kernel`): says what the guest kernel sees - its NUMA
# nodes from the VMM's ACPI SRAT/SLIT, CPUs, memory - runs numactl -H, and
# powers off (ACPI S5 through the VMM's sleep register ends the VM).
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
echo "GUEST-POWEROFF"
poweroff -f
