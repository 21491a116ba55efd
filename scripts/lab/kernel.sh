#!/usr/bin/env bash
# Fetches Debian's kernel for the NUMA lab (the package linux-image-amd64
# depends on, with apt-get download) and unpacks it into the lab cache,
# once: later runs reuse it. Prints the cache directory's kernel version.
# Usage: scripts/lab/kernel.sh CACHE_DIR
set -euo pipefail
cache=${1:?usage: kernel.sh CACHE_DIR}
mkdir -p "$cache"
cd "$cache"
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
[ -n "$pkg" ] || { echo "lab: cannot resolve linux-image-amd64 (apt-get update?)" >&2; exit 1; }
version=${pkg#linux-image-}
# One fetch at a time: two labs started together (CI runs its lab tests
# side by side) unpacked into the same directory and broke each other.
exec 9> .kernel.lock
flock 9
if [ ! -f "kernel-$version/boot/vmlinuz-$version" ]; then
  echo "lab: fetching $pkg" >&2
  rm -f ./"$pkg"_*.deb
  apt-get download -o APT::Sandbox::User=root "$pkg" >/dev/null
  rm -rf "kernel-$version"
  dpkg-deb -x ./"$pkg"_*.deb "kernel-$version"
  # The package ships no modules.dep; modprobe needs one.
  depmod -b "kernel-$version" "$version"
  rm -f ./"$pkg"_*.deb
fi
echo "$version"
