#!/usr/bin/env bash
# Prints the path of a promtool (Prometheus' metrics linter) for the
# tests: the one on PATH, else one unpacked (not installed) from Debian's
# prometheus package into ${BUILD_DIR:-build}/promtool-cache, fetched once
# with 'apt-get download'.
set -euo pipefail
if command -v promtool >/dev/null 2>&1; then
  command -v promtool
  exit 0
fi
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
case "$build" in
  /*) cache="$build/promtool-cache" ;;
  *) cache="$(pwd)/$build/promtool-cache" ;;
esac
tool="$cache/root/usr/bin/promtool"
mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9  # tests running side by side fetch it once
if [ ! -x "$tool" ]; then
  (cd "$cache" && rm -f prometheus_*.deb && apt-get download -qq prometheus >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && apt-get download -qq prometheus >/dev/null; })
  rm -rf "$cache/root"
  dpkg -x "$cache"/prometheus_*.deb "$cache/root"
  rm -f "$cache"/prometheus_*.deb
fi
echo "$tool"
