#!/usr/bin/env bash
# The package's CI in one script: build every target this machine's toolchains allow (each
# one configured, compiled, tested where it runs, ABI-checked and packed with its provenance),
# then sign the hub's index and publish. The workflow in .github/workflows calls it; it runs
# the same on a laptop.
#
# Environment:
#   KH_PUBLISH_HUB       where to publish: oci://registry/namespace or https://host/path (a
#                        WebDAV-enabled server); unset: build and pack into dist/ only
#   KH_SIGNING_KEY_TEXT  the minisign secret key's text (from a CI secret), or
#   KH_SIGNING_KEY       a file holding it
#   KH_HUB_ROOT          the hub's root of trust (default: hub-root.json in this repository),
#                        which kh verifies the hub's current index against before merging
#   KH_REGISTRY_AUTH     user:password for an oci:// registry; KH_PUBLISH_USER and
#                        KH_PUBLISH_PASSWORD (or KH_PUBLISH_TOKEN) for an https:// hub
#   KERNELS              the kernels command (default: kernels on PATH)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
kernels="${KERNELS:-kernels}"
export KH_CACHE="${KH_CACHE:-$PWD/build/kh-cache}"

rm -rf dist
"$kernels" build --all-targets --out dist

if [ -z "${KH_PUBLISH_HUB:-}" ]; then
  echo "ci: KH_PUBLISH_HUB is not set: the builds are in dist/, nothing was published"
  exit 0
fi
key="${KH_SIGNING_KEY:-}"
if [ -n "${KH_SIGNING_KEY_TEXT:-}" ]; then
  key="$(mktemp)"
  trap 'rm -f "$key"' EXIT
  printf '%s\n' "$KH_SIGNING_KEY_TEXT" >"$key"
fi
if [ -z "$key" ]; then
  echo "ci: set KH_SIGNING_KEY_TEXT (the minisign secret key, from a CI secret) to publish" >&2
  exit 1
fi
root="${KH_HUB_ROOT:-hub-root.json}"
if [ -f "$root" ]; then
  "$kernels" trust "$root" --hub "$KH_PUBLISH_HUB"
fi
"$kernels" publish dist --hub "$KH_PUBLISH_HUB" --key "$key"
