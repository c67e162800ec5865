#!/usr/bin/env bash
# ctest list_packages: kernels-src/list-packages.sh, the list every script takes its packages
# from, against the folders themselves: every folder with a kernel.json once, with the manifest's
# name and version; the filters and columns; a bad option refused.
# Usage: list_packages_test.sh <repo>
set -uo pipefail
repo="$1"
list="$repo/kernels-src/list-packages.sh"
fail=0
check() { if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: got [$2], want [$3]"; fail=1; fi; }

all="$("$list")" || { echo "FAIL: list-packages.sh exited $?"; exit 1; }
echo "$all"
want_dirs="$(cd "$repo/kernels-src" && for m in */kernel.json; do dirname "$m"; done | sort | tr '\n' ' ')"
check "one line per folder with a kernel.json, sorted" "$(echo "$all" | cut -d' ' -f1 | tr '\n' ' ')" "$want_dirs"
while read -r dir name version backends; do
  manifest="$repo/kernels-src/$dir/kernel.json"
  check "$dir: name from its manifest" "$name" "$(sed -n 's/^  "name": "\(.*\)",$/\1/p' "$manifest" | head -1)"
  check "$dir: version from its manifest" "$version" "$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$manifest" | head -1)"
  [[ "$backends" =~ ^(cpu|cuda|hip)(,(cpu|cuda|hip))*$ ]] || { echo "FAIL: $dir: backends '$backends'"; fail=1; }
  for b in cpu cuda hip; do
    in_filter=no
    "$list" --backend "$b" --field dir | grep -qx "$dir" && in_filter=yes
    has=no
    [[ ",$backends," == *",$b,"* ]] && has=yes
    check "$dir: --backend $b" "$in_filter" "$has"
  done
done <<<"$all"
check "--field name is the second column" "$("$list" --field name)" "$(echo "$all" | cut -d' ' -f2)"
"$list" --backend metal >/dev/null 2>&1 && { echo "FAIL: --backend metal accepted"; fail=1; } || echo "ok: --backend metal refused"
"$list" --bogus >/dev/null 2>&1
check "an unknown option exits 2" "$?" "2"
exit $fail
