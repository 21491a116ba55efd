#!/usr/bin/env bash
# Builds the NUMA lab's initramfs: busybox, numavm with the shared libraries
# it needs (self-contained: copied by ldd), the guest-tools payloads,
# numactl, numad, and the kernel's KVM modules; /init runs scripts/lab/guest.sh.
# Usage: scripts/lab/initramfs.sh CACHE_DIR KERNEL_VERSION BUILD_DIR OUT
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=$1 version=$2 build=$3 out=$4
kdir="$cache/kernel-$version"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,run,lib/modules,lib/x86_64-linux-gnu,lib64,opt/numavm,usr/bin,usr/sbin,var/log}
ln -s ../run "$root/var/run"   # numad's pid file
cp /bin/busybox "$root/bin/busybox"
for a in sh ash mount umount cat echo ls insmod modprobe poweroff sleep grep dmesg uname mkdir \
         head tail date sync awk sed tr wc kill ps cut sort uniq printf test expr seq sysctl pidof \
         rmdir unxz killall; do
  ln -sf busybox "$root/bin/$a"
done
strip --strip-debug -o "$root/opt/numavm/numavm" "$build/numavm"
cp -r "$build/guest-tools" "$root/opt/numavm/guest-tools"
cp /usr/bin/numactl "$root/usr/bin/"
cp /usr/bin/numad "$root/usr/sbin/" 2>/dev/null || cp /usr/sbin/numad "$root/usr/sbin/"
# Every shared library the binaries need, and the loader.
for lib in $(ldd "$build/numavm" /usr/bin/numactl "$root/usr/sbin/numad" | awk '$3 ~ /^\// {print $3}' | sort -u); do
  cp -L "$lib" "$root/lib/x86_64-linux-gnu/"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
# KVM for nested guests (the lab CPU is -cpu max: AMD SVM under TCG).
mods="$kdir/lib/modules/$version/kernel"
# (6.12 ships them compressed, .ko.xz: /init decompresses them.)
for m in virt/lib/irqbypass drivers/crypto/ccp/ccp arch/x86/kvm/kvm arch/x86/kvm/kvm-amd; do
  if [ -f "$mods/$m.ko" ]; then cp "$mods/$m.ko" "$root/lib/modules/"; else cp "$mods/$m.ko.xz" "$root/lib/modules/"; fi
done
# A Linux guest for numavm's own VMM (`numavm run --kernel`, lab workload
# linux): the lab's kernel and an initramfs of busybox, numactl and numabench.
mkdir -p "$root/opt/numavm/linux"
"$here/../guest-initramfs.sh" "$build" "$root/opt/numavm/linux/initrd.gz"
cp "$kdir/boot/vmlinuz-$version" "$root/opt/numavm/linux/vmlinuz"
cp "$here/guest.sh" "$root/init"
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$out"
