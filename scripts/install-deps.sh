#!/usr/bin/env bash
# Installs the Debian 12 packages kh needs to build and test, when any is missing.
# Non-interactive; needs root (or sudo). Usage: scripts/install-deps.sh [extra packages...]
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache git ca-certificates
  libcurl4-openssl-dev libarchive-dev libssl-dev libzstd-dev zstd zlib1g-dev
  nlohmann-json3-dev libcli11-dev doctest-dev libdlpack-dev
  minisign clang-19 libclang-rt-19-dev
  lld-19 llvm-19 clang-tools-19 libamdhip64-dev rocm-device-libs
  nginx openssl curl
  docker-registry skopeo apache2-utils
  pylint
  python3-venv python3-pip python3-dev python3-numpy patchelf
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "kh: installing missing Debian packages: ${missing[*]}"
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "kh: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  as_root=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
