#!/usr/bin/env bash
# Times `kernels get` / the registry's https download of a 64 MiB package against
# `curl -o` + `sha256sum` of the same blob, and the warm repeat (metadata 304, package
# cached), all against nginx on loopback set up by bench_get_https itself.
# Usage: tests/bench/bench_get_https.sh [build-dir] [bench_get_https options...]
#   build-dir defaults to build/dev; options: --runs N --size-mib M (see --help).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-$root/build/dev}"
[ $# -gt 0 ] && shift
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || "$root/scripts/install-deps.sh"
cmake --build "$build" -j2 --target bench_get_https kernels >/dev/null
exec "$build/tests/bench/bench_get_https" --kernels "$build/cli/kernels" "$@"
