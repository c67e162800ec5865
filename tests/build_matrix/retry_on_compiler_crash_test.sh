#!/usr/bin/env bash
# ctest retry_on_compiler_crash: cmake/retry-on-compiler-crash.sh (the wrapper of every gfx942
# compile) runs a crashed compile again, and passes every other outcome through unchanged.
# A stand-in compiler counts its runs and crashes (clang's message), fails or succeeds as told.
# Usage: retry_on_compiler_crash_test.sh <retry-on-compiler-crash.sh> <work-dir>
set -euo pipefail
retry="$1" work="$2"
rm -rf "$work" && mkdir -p "$work"
fail() { echo "retry_on_compiler_crash_test: $*" >&2; exit 1; }

# stand-in <crashes before success | -1: crash always> <exit code once done crashing>
cat >"$work/stand-in" <<'SH'
#!/usr/bin/env bash
runs_file="$(dirname "$0")/runs"
runs=$(( $(cat "$runs_file" 2>/dev/null || echo 0) + 1 ))
echo "$runs" >"$runs_file"
if [ "$1" -lt 0 ] || [ "$runs" -le "$1" ]; then
  echo "Stack dump: (stand-in)" >&2
  echo "clang-19: error: clang frontend command failed due to signal (use -v to see invocation)" >&2
  exit 1
fi
[ "$2" -eq 0 ] && echo "compiled" || echo "error: stand-in compile error" >&2
exit "$2"
SH
chmod +x "$work/stand-in"

# case <name> <crashes> <final rc> <expected rc> <expected runs> <text expected in the output>
case_() {
  rm -f "$work/runs"
  local rc=0
  "$retry" "$work/stand-in" "$2" "$3" >"$work/$1.out" 2>&1 || rc=$?
  local runs; runs="$(cat "$work/runs")"
  [ "$rc" -eq "$4" ] || fail "$1: exit status $rc, expected $4"
  [ "$runs" -eq "$5" ] || fail "$1: the compiler ran $runs times, expected $5"
  grep -q "$6" "$work/$1.out" || fail "$1: output lacks '$6': $(cat "$work/$1.out")"
  echo "ok    $1: exit $rc after $runs run(s)"
}
case_ success 0 0 0 1 "compiled"
case_ compile-error 0 1 1 1 "stand-in compile error"
case_ other-status 0 2 2 1 "stand-in compile error"
case_ one-crash 1 0 0 2 "attempt 1 of 3"
case_ two-crashes 2 0 0 3 "attempt 2 of 3"
case_ crash-then-error 1 1 1 2 "stand-in compile error"
case_ always-crashes -1 0 1 3 "failed due to signal"
