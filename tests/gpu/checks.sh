#!/usr/bin/env bash
# tests/gpu/checks.sh <stage> <logs>: what the GPU run asserts, against the hub $KH_HUB and the
# cache $KH_CACHE that tests/gpu/publish.sh filled: `kernels doctor` chooses the sm90a build with
# sm80 and cpu as compatible fallbacks, `kernels get` of every staged package,
# check_through_kh.py (every op x target x dtype x shape class; KH_GPU_CHECK=0 skips it),
# check_load_refusal.py (a build without code for the GPU fails at load) and check_two_gpus.py. Logs go to <logs>; the exit status is 1 if any of them failed.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
stage="$1" logs="$2"
kernels="$stage/bin/kernels" status=0
step() { printf '\n== %s\n' "$*"; }
fail() { echo "FAIL: $*"; status=1; }
mapfile -t pkgs <"$stage/packages.txt"

step "kernels doctor kernels-community/attention@1"
"$kernels" doctor kernels-community/attention@1 | tee "$logs/doctor.txt" || fail "kernels doctor"
"$kernels" doctor kernels-community/attention@1 --json > "$logs/doctor.json" || fail "kernels doctor --json"
python3 - "$logs/doctor.json" <<'PY' || fail "doctor: sm90a must be chosen with sm80 and cpu as compatible fallbacks"
import json, sys
doc = json.load(open(sys.argv[1]))
pkgs = doc["packages"] if isinstance(doc, dict) and "packages" in doc else doc
sel = pkgs[0] if isinstance(pkgs, list) else pkgs
builds = sel["builds"]
chosen = sel["chosen"] or ""
fallback = {b["variant"].split("-")[0 if b["variant"].startswith("cpu") else 1] for b in builds
            if b["compatible"] and not b["chosen"]}
print(f"doctor: chosen {chosen}; compatible fallbacks {sorted(fallback)}")
ok = "-sm90a-" in chosen and "sm80" in fallback and "cpu" in fallback
print("doctor assertion:", "ok" if ok else "FAILED")
sys.exit(0 if ok else 1)
PY

step "kernels get"
for p in "${pkgs[@]}"; do
  "$kernels" get "kernels-community/$p@1" | tee -a "$logs/get.txt" || fail "kernels get $p"
done

step "check_through_kh.py"
[[ ${KH_GPU_CHECK:-1} == 0 ]] && echo "(skipped: KH_GPU_CHECK=0)" ||
timeout "${KH_GPU_CHECK_TIMEOUT:-480}" python3 "$here/check_through_kh.py" --hub "$KH_HUB" --cache "$KH_CACHE" --out "$logs" \
  --packages "${pkgs[*]}" || fail "check_through_kh.py"

step "check_load_refusal.py (an author's cuda-sm120 build is refused at load; its own target runs)"
python3 "$here/check_load_refusal.py" --kernels "$stage/kh/bin/kernels" --work "$(dirname "$KH_CACHE")/load-refusal" |
  tee "$logs/load_refusal.txt"
[[ ${PIPESTATUS[0]} == 0 ]] || fail "check_load_refusal.py"

step "check_two_gpus.py (one package for each of two GPUs; skipped with fewer)"
python3 "$here/check_two_gpus.py" --hub "$KH_HUB" --cache "$KH_CACHE" | tee "$logs/two_gpus.txt"
case "${PIPESTATUS[0]}" in
  0) ;;
  77) echo "(skipped: this machine has fewer than two CUDA GPUs)" ;;
  *) fail "check_two_gpus.py" ;;
esac
exit $status
