#!/usr/bin/env bash
# fresh-check.sh: the README's two commands, on a brand-new Debian 12 machine.
#
# CI runs on a machine where packages installed by hand linger, so a green CI cannot tell a
# missing install step. This makes a new Debian 12 root with debootstrap (minbase: no
# compiler, no git, nothing of ours), binds in only the CUDA toolkit that the machine image
# provides (/usr/local/cuda, as on CI's machine), puts a clean clone of the committed HEAD
# in it, and runs `scripts/demo.sh` and then `scripts/test.sh` there as root, each timed.
#
#   scripts/fresh-check.sh [--only demo|test] [--keep] [WORKDIR]
#
# WORKDIR (default /var/tmp/kh-fresh-check) is emptied first; logs go to WORKDIR/demo.log
# and WORKDIR/test.log, the result table to WORKDIR/summary.txt and stdout. --keep leaves
# the root in place afterwards (it is a few GB; by default it is removed on success).
# The Debian mirror is the one this machine's apt uses (KH_FRESH_MIRROR overrides it).
# Needs root (mounts, chroot) and the network to Debian's archive. Exit status 0 when every
# command that ran passed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$(pwd)"

only="" keep=0 work=""
while [ $# -gt 0 ]; do
  case "$1" in
    --only) only="${2:?--only needs demo or test}"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "fresh-check: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) work="$1"; shift ;;
  esac
done
case "$only" in ""|demo|test) ;; *) echo "fresh-check: --only takes demo or test, not '$only'" >&2; exit 2 ;; esac
work="${work:-/var/tmp/kh-fresh-check}"
root="$work/root"
[ "$(id -u)" -eq 0 ] || { echo "fresh-check: needs root (debootstrap, mounts, chroot)" >&2; exit 1; }
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "fresh-check: note: uncommitted changes are not checked; the clone is of HEAD ($(git rev-parse --short HEAD))" >&2
fi

# The mirror this machine's apt uses, so the new root sees the same archive (no host names
# are written here: they come from the machine's own configuration).
mirror_of_host() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk '/^URIs:/ {u=$2} /^Suites:/ && / bookworm( |$)/ {print u; exit}' "$f"
  done | head -n 1
  if [ -f /etc/apt/sources.list ]; then awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list; fi
  return 0
}
mirror="${KH_FRESH_MIRROR:-$(mirror_of_host | head -n 1)}"
[ -n "$mirror" ] || { echo "fresh-check: no Debian bookworm mirror in /etc/apt; set KH_FRESH_MIRROR" >&2; exit 1; }

mounted=()
unmount_all() {
  local i
  # Anything still running inside the root (a server a test left) would hold the mounts.
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null || true
  done
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null || true
  done
  mounted=()
}
trap unmount_all EXIT
bind() {  # bind <source> <target inside the root> [ro]
  mkdir -p "$2"
  mount --bind "$1" "$2"
  mounted+=("$2")
  [ "${3:-}" = ro ] && mount -o remount,bind,ro "$2"
  return 0
}

mounts_under() { awk -v r="$1/" 'index($2 "/", r) == 1 {print $2}' /proc/mounts | sort -r; }
# Removes a folder only when nothing is mounted below it (rm would walk into /dev or /proc).
remove_tree() {
  local m
  while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(mounts_under "$1")
  if [ -n "$(mounts_under "$1")" ]; then
    echo "fresh-check: still mounted under $1, not removing it:" >&2
    mounts_under "$1" >&2
    return 1
  fi
  rm -rf --one-file-system "$1"
}

# A leftover root from an interrupted run may still have mounts: released first.
remove_tree "$work"
mkdir -p "$work"
summary="$work/summary.txt"
: >"$summary"
report() { printf '%-12s %-6s %6ss  %s\n' "$@" | tee -a "$summary"; }

command -v debootstrap >/dev/null || {
  echo "fresh-check: installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; }
}

echo "fresh-check: debootstrap --variant=minbase bookworm into $root"
t0=$SECONDS
if ! debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
  tail -n 20 "$work/debootstrap.log" >&2
  report debootstrap FAIL $((SECONDS - t0)) "$work/debootstrap.log"
  exit 1
fi
report debootstrap ok $((SECONDS - t0)) "Debian 12 minbase"

# The archive suites this machine's apt uses (updates, security) and name resolution.
if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
  rm -f "$root/etc/apt/sources.list"
  cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/"
fi
cp -L /etc/resolv.conf "$root/etc/resolv.conf"

bind /proc "$root/proc"
bind /sys "$root/sys"
bind /dev "$root/dev"
bind /dev/pts "$root/dev/pts"
# The CUDA toolkit the machine image provides, at the same path (and its version link).
if [ -e /usr/local/cuda ]; then
  cuda_real="$(readlink -f /usr/local/cuda)"
  bind "$cuda_real" "$root$cuda_real" ro
  [ "$cuda_real" = /usr/local/cuda ] || ln -sfn "$cuda_real" "$root/usr/local/cuda"
fi

# A clean clone of the committed HEAD, as CI makes one.
checked="$(git rev-parse HEAD)"
git clone --quiet --no-hardlinks "$repo" "$root/src/kh"
git -C "$root/src/kh" checkout --quiet --detach "$checked"

run_in_root() {  # run_in_root <name> <command>: timed, logged, rc reported
  local name="$1" cmd="$2" rc t
  echo "fresh-check: running $cmd in the new root (log: $work/$name.log)"
  t=$SECONDS
  set +e
  env -i HOME=/root LANG=C.UTF-8 TERM=dumb CI=true \
    PATH=/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    chroot "$root" bash -c "cd /src/kh && $cmd" </dev/null >"$work/$name.log" 2>&1
  rc=$?
  set -e
  if [ "$rc" -eq 0 ]; then
    report "$cmd" ok $((SECONDS - t)) "$(grep -E 'tests passed|rms_norm ok' "$work/$name.log" | tail -n 1)"
  else
    tail -n 30 "$work/$name.log" >&2
    report "$cmd" "FAIL" $((SECONDS - t)) "rc $rc; $work/$name.log"
  fi
  return "$rc"
}

status=0
[ "$only" = test ] || run_in_root demo scripts/demo.sh || status=1
[ "$only" = demo ] || run_in_root test scripts/test.sh || status=1

echo "fresh-check: $(date -u +%Y-%m-%dT%H:%MZ) commit ${checked:0:7}: $([ $status = 0 ] && echo PASSED || echo FAILED)" |
  tee -a "$summary"
unmount_all
if [ "$status" = 0 ] && [ "$keep" = 0 ]; then
  remove_tree "$root"
fi
exit "$status"
