#!/usr/bin/env bash
# Fetches the newer lab stack - bookworm-backports' QEMU 10 (with its
# firmware and modules) and 6.12 kernel - with apt-get download under a
# private apt configuration, and unpacks it into the lab cache: nothing is
# installed and the machine's QEMU (libvirt's tests use it) is untouched.
# The archive is the machine's own Debian archive (from its apt sources),
# with the suite bookworm-backports. Prints shell assignments for lab.sh:
# version, qemu, and the QEMU_MODULE_DIR / LAB_QEMU_ARGS exports.
# Usage: scripts/lab/backports.sh CACHE_DIR
set -euo pipefail
cache=${1:?usage: backports.sh CACHE_DIR}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
dir=$cache/backports
root=$dir/root
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/apt/sources.list.d" "$root"
# The machine's Debian archive: the URI of the source carrying bookworm.
uri=$("$(dirname "$0")"/../debian-archive-uri.sh)
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri bookworm-backports main" \
  > "$dir/apt/sources.list"
opts=(-o Dir::Etc::sourcelist="$dir/apt/sources.list" -o Dir::Etc::sourceparts="$dir/apt/sources.list.d"
      -o Dir::State::Lists="$dir/apt/lists" -o Dir::Cache="$dir/apt/cache"
      -o APT::Sandbox::User=root -o Debug::NoLocking=1)
if [ ! -x "$root/usr/bin/qemu-system-x86_64" ] || [ ! -f "$dir/version" ]; then
  echo "lab: fetching bookworm-backports' QEMU and kernel" >&2
  apt-get "${opts[@]}" update -qq >/dev/null
  kpkg=$(apt-cache "${opts[@]}" pkgnames linux-image-6.12 | grep -E '^linux-image-6\.12\.[0-9.+~a-z]*-amd64-unsigned$' | sort -V | tail -1)
  [ -n "$kpkg" ] || { echo "lab: no 6.12 kernel in bookworm-backports" >&2; exit 1; }
  (cd "$dir" && rm -f ./*.deb &&
   apt-get "${opts[@]}" download qemu-system-x86 qemu-system-common qemu-system-data seabios "$kpkg" >/dev/null)
  for deb in "$dir"/qemu-*.deb "$dir"/seabios_*.deb; do dpkg-deb -x "$deb" "$root"; done
  version=${kpkg#linux-image-}
  version=${version%-unsigned}
  rm -rf "$cache/kernel-$version"
  dpkg-deb -x "$dir/${kpkg}"_*.deb "$cache/kernel-$version"
  depmod -b "$cache/kernel-$version" "$version"
  rm -f "$dir"/*.deb
  echo "$version" > "$dir/version"
fi
version=$(cat "$dir/version")
echo "version=$version"
echo "qemu=$root/usr/bin/qemu-system-x86_64"
echo "export QEMU_MODULE_DIR=$root/usr/lib/x86_64-linux-gnu/qemu"
echo "export LAB_QEMU_ARGS=\"-L $root/usr/share/qemu -L $root/usr/share/seabios\""
