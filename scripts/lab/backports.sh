#!/usr/bin/env bash
# Fetches the newer lab stacks - bookworm-backports' QEMU 10 (with its
# firmware and modules) and a kernel: bookworm-backports' 6.12, or the
# newest kernel of another suite (KERNEL_SUITE, e.g. trixie-backports) -
# with apt-get download under private apt configurations, and unpacks them
# into the lab cache: nothing is installed and the machine's QEMU (libvirt's
# tests use it) is untouched. The archive is the machine's own Debian
# archive (from its apt sources), with the extra suites. Prints shell
# assignments for lab.sh: version, qemu, and the QEMU_MODULE_DIR /
# LAB_QEMU_ARGS exports.
# Usage: scripts/lab/backports.sh CACHE_DIR [KERNEL_SUITE]
set -euo pipefail
cache=${1:?usage: backports.sh CACHE_DIR [KERNEL_SUITE]}
kernel_suite=${2:-bookworm-backports}
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
# A kernel from another suite: its linux-image-amd64's image package, with
# the packages newer kernels split it into (linux-binary-*, linux-modules-*),
# unpacked to the layout lab.sh and initramfs.sh read (boot/vmlinuz-V,
# lib/modules/V).
if [ "$kernel_suite" != bookworm-backports ]; then
  kd=$cache/suite-$kernel_suite
  mkdir -p "$kd/apt/lists/partial" "$kd/apt/cache/archives/partial" "$kd/apt/sources.list.d"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $kernel_suite main" \
    > "$kd/apt/sources.list"
  kopts=(-o Dir::Etc::sourcelist="$kd/apt/sources.list" -o Dir::Etc::sourceparts="$kd/apt/sources.list.d"
         -o Dir::State::Lists="$kd/apt/lists" -o Dir::Cache="$kd/apt/cache"
         -o APT::Sandbox::User=root -o Debug::NoLocking=1)
  if [ ! -f "$kd/version" ]; then
    echo "lab: fetching $kernel_suite's kernel" >&2
    apt-get "${kopts[@]}" update -qq >/dev/null
    deps() { apt-cache "${kopts[@]}" depends "$1" | awk '$1 ~ /Depends:/ {print $2}'; }
    image=$(deps linux-image-amd64 | grep -E '^linux-image-[0-9]' | head -1)
    [ -n "$image" ] || { echo "lab: no kernel image in $kernel_suite" >&2; exit 1; }
    pkgs=("$image" $(deps "$image" | grep -E '^linux-(binary|modules)-[0-9]' || true))
    version=${image#linux-image-}
    (cd "$kd" && rm -f ./*.deb && apt-get "${kopts[@]}" download "${pkgs[@]}" >/dev/null)
    k=$cache/kernel-$version
    rm -rf "$k"
    for deb in "$kd"/*.deb; do dpkg-deb -x "$deb" "$k"; done
    rm -f "$kd"/*.deb
    # Merged /usr: modules (and the image) under usr/lib/modules/V.
    [ -d "$k/lib/modules" ] || ln -s usr/lib "$k/lib"
    if [ ! -f "$k/boot/vmlinuz-$version" ]; then
      mkdir -p "$k/boot"
      cp "$k/lib/modules/$version/vmlinuz" "$k/boot/vmlinuz-$version"
    fi
    depmod -b "$k" "$version"
    echo "$version" > "$kd/version"
  fi
  version=$(cat "$kd/version")
fi
echo "version=$version"
echo "qemu=$root/usr/bin/qemu-system-x86_64"
echo "export QEMU_MODULE_DIR=$root/usr/lib/x86_64-linux-gnu/qemu"
echo "export LAB_QEMU_ARGS=\"-L $root/usr/share/qemu -L $root/usr/share/seabios\""
