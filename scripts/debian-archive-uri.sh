#!/usr/bin/env bash
# Prints the URI of the machine's own Debian archive: the apt source that
# carries the bookworm suite (deb822 .sources first, then sources.list).
# Used to fetch from that archive under a private apt configuration
# (scripts/lab/backports.sh, scripts/test-tsan.sh) - never a named host.
set -euo pipefail
uri=$( { cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } |
  awk 'BEGIN {RS=""} /Suites:[^\n]*bookworm( |\n|$)/ && !/security/ {
         if (match($0, /URIs: *[^ \n]+/)) { s = substr($0, RSTART, RLENGTH); sub(/URIs: */, "", s); print s; exit } }')
if [ -z "$uri" ]; then
  uri=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
fi
[ -n "$uri" ] || { echo "no bookworm source in the machine's apt configuration" >&2; exit 1; }
echo "$uri"
