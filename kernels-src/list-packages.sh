#!/usr/bin/env bash
# kernels-src/list-packages.sh: the kernel packages, from their manifests (every folder of
# kernels-src/ with a kernel.json): the one list the scripts, tests and workflows take packages
# from. One line per package, sorted by folder:
#   <dir> <name> <version> <backends>      e.g.  rms-norm kernels-community/rms-norm 1.0.0 cpu,cuda,hip
# Options:
#   --backend cpu|cuda|hip   only the packages that build for that backend
#   --field dir|name|version|backends   print that column alone
# Backends are the keys of the manifest's build.backends, or the cpu/, cuda/, hip/ folders of a
# package that still builds through a CMakeLists.txt of its own. Needs cmake (the build's JSON
# reader, list-packages.cmake); a bad manifest is an error naming it and the field.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) args+=("-DKH_BACKEND=${2:?--backend needs cpu, cuda or hip}"); shift 2 ;;
    --field) args+=("-DKH_FIELD=${2:?--field needs dir, name, version or backends}"); shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "list-packages.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
exec cmake ${args[@]+"${args[@]}"} -P "$here/list-packages.cmake"
