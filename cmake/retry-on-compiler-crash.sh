#!/usr/bin/env bash
# retry-on-compiler-crash.sh: runs one compile command, and runs it again when the compiler
# itself crashed (clang's driver says "... failed due to signal"), 3 attempts in all. Any other
# failure (a compile error) is returned at once, with its output, as if run directly.
#
# Why: Debian 12's clang-19 crashes at random in the AMDGPU backend (a segmentation fault in
# the StructurizeCFG pass) on some gfx942 units: rotary_hip_f16.hip crashed in 1 of ~80
# compiles of the same command on the 2-core build machine (2026-12-04). A cold build (CI with
# an empty ccache, a fresh machine) compiles every unit once, so such a crash failed a whole
# test run; a second attempt of the same command succeeds.
#
# Usage: retry-on-compiler-crash.sh <compiler or launcher> [args...]
set -u
stderr_log="$(mktemp "${TMPDIR:-/tmp}/kh-compile.XXXXXX")"
trap 'rm -f "$stderr_log"' EXIT
attempts=3
for attempt in $(seq 1 "$attempts"); do
  "$@" 2>"$stderr_log"
  rc=$?
  cat "$stderr_log" >&2
  [ "$rc" -eq 0 ] && exit 0
  grep -q "failed due to signal" "$stderr_log" || exit "$rc"
  [ "$attempt" -lt "$attempts" ] &&
    echo "retry-on-compiler-crash: the compiler crashed (attempt $attempt of $attempts); running it again" >&2
done
exit "$rc"
