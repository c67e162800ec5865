#!/usr/bin/env bash
# Times `kernels get` of three packages from an OCI registry (docker-registry over TLS) against
# the same from nginx https, cold and warm, set up by bench_get_oci itself on loopback.
# Usage: tests/bench/bench_get_oci.sh [build-dir] [bench_get_oci options...]
#   build-dir defaults to build/dev; options: --runs N --size-mib M (see --help).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-$root/build/dev}"
[ $# -gt 0 ] && shift
command -v docker-registry >/dev/null || "$root/scripts/install-deps.sh"
cmake --build "$build" -j2 --target bench_get_oci kernels >/dev/null
exec "$build/tests/bench/bench_get_oci" --kernels "$build/cli/kernels" "$@"
