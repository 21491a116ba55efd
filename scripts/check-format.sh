#!/usr/bin/env bash
# Fails, naming the files, when a C++ file in the tree is not formatted as
# .clang-format says (fix: clang-format -i FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
bad=()
while IFS= read -r f; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.cc' '*.h')
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: not formatted (clang-format -i): ${bad[*]}"
  exit 1
fi
echo "check-format: $(git ls-files '*.cc' '*.h' | wc -l) files formatted"
