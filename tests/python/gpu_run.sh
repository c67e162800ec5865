#!/usr/bin/env bash
# tests/python/gpu_run.sh: issue 41's GPU run (kh.torch, torch.compile, CUDA graphs, host time per
# call) with the device tool: the wheel built here, installed there as a user would, on a hub of
# CUDA builds that tests/gpu/run.sh makes there.
#
#   here:   python3 -m pip wheel --no-index --no-build-isolation --no-deps -w dist python/
#           KH_GPU_TARGETS=cuda-sm90a KH_GPU_STAGE_GPU_LIBS=0 tests/gpu/run.sh stage .gpu-stage-py
#           (the stage's syslib/ may be left out: this script serves run.sh's `kernels` and libkh the
#           libraries it needs from the wheel's bundled copies)
#   there:  tests/python/gpu_run.sh .gpu-stage-py dist        (carry both; one command)
#
# 1. the wheel: `python3 -m venv --system-site-packages` (PyTorch comes from the system) and
#    `pip install --no-index`; where this Python has no venv, pip --target, else unzip;
# 2. tests/gpu/run.sh with KH_GPU_CHECK=0: builds what the stage lacks, packs and publishes the
#    cpu and cuda builds to a signed hub in /tmp/kh-gpu-run, doctor, get;
# 3. test_torch_gpu.py and tests/bench/bench_python_call.py with the installed wheel (KH_LIBRARY,
#    PYTHONPATH and LD_LIBRARY_PATH unset), on a fresh cache pinned through trusted_root.
# Logs: $OUT/{run,torch,bench}.log and bench_python_call.json (run.sh's own logs stay in /tmp/kh-gpu-run).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
stage="$(cd "${1:?usage: gpu_run.sh STAGE WHEEL_DIR}" && pwd)"
wheel="$(ls "${2:?usage: gpu_run.sh STAGE WHEEL_DIR}"/*.whl | head -1)"
out="${OUT:-/tmp/kh-py-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
status=0
step() { printf '\n== %s\n' "$*"; }

step "install $(basename "$wheel")"
py=python3
site=/tmp/kh-py-site
if python3 -m venv --system-site-packages /tmp/kh-py-venv >/dev/null 2>&1 &&
   /tmp/kh-py-venv/bin/python -m pip install -q --no-index --no-deps "$wheel"; then
  py=/tmp/kh-py-venv/bin/python; echo "venv --system-site-packages + pip install --no-index"
elif python3 -m pip install -q --no-index --no-deps --target "$site" "$wheel"; then
  export PYTHONPATH="$site"; echo "pip install --no-index --target $site (this python3 has no venv)"
else
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$wheel" "$site"
  export PYTHONPATH="$site"; echo "unzipped into $site (this python3 has neither venv nor pip)"
fi
# PyTorch may live where a venv does not look (a user site): show the venv python3's own package folders.
if [[ $py == /tmp/kh-py-venv/bin/python ]] && ! "$py" -c 'import torch, numpy' 2>/dev/null; then
  python3 -c 'import os, numpy, torch
for m in (torch, numpy): print(os.path.dirname(os.path.dirname(m.__file__)))' | sort -u \
    > "$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/system-torch.pth"
  echo "the venv sees python3's PyTorch and NumPy through system-torch.pth: $(python3 -c 'import torch; print(torch.__file__)')"
fi
pkg="$(cd / && env -u KH_LIBRARY "$py" -c 'import os, kh; print(os.path.dirname(kh.__file__))')" ||
  { echo "FAIL: import kh"; exit 1; }
(cd / && env -u KH_LIBRARY "$py" -c 'import sys, kh, torch; print("kh", kh.__file__, kh.CALL_PATH, "python", sys.version.split()[0], "torch", torch.__version__, torch.__file__)')

# run.sh's `kernels` and libkh were built on Debian 12: what this machine lacks of their libraries
# comes from the wheel's copies (syslib/ by their usual names; the renamed ones on LD_LIBRARY_PATH).
mkdir -p "$stage/syslib"
for f in "$pkg"/lib*-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f].so*; do
  b="$(basename "$f")"
  ln -sf "$f" "$stage/syslib/$(echo "$b" | sed -E 's/-[0-9a-f]{8}(\.so)/\1/')"
done

step "tests/gpu/run.sh (KH_GPU_CHECK=0): the hub of cpu and cuda builds"
(export LD_LIBRARY_PATH="$pkg${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" KH_GPU_CHECK=0; unset OUT
 "$root/tests/gpu/run.sh" "$stage") 2>&1 | tee "$out/run.log"
[[ ${PIPESTATUS[0]} == 0 ]] || echo "(run.sh exited non-zero; its log says why)"
hub=/tmp/kh-gpu-run/hub
[[ -f "$hub/root/1.root.json" ]] || { echo "FAIL: run.sh made no hub"; exit 1; }

unset KH_LIBRARY LD_LIBRARY_PATH KH_HUB KH_CACHE
cd /tmp || exit 1
step "test_torch_gpu.py"
"$py" "$root/tests/python/test_torch_gpu.py" --hub "file://$hub" --root "$hub/root/1.root.json" \
  --cache /tmp/kh-py-cache 2>&1 | tee "$out/torch.log"
[[ ${PIPESTATUS[0]} == 0 ]] || status=1
step "bench_python_call.py"
"$py" "$root/tests/bench/bench_python_call.py" --hub "file://$hub" --root "$hub/root/1.root.json" \
  --cache /tmp/kh-py-cache --out "$out" 2>&1 | tee "$out/bench.log"
[[ ${PIPESTATUS[0]} == 0 ]] || status=1
step "exit $status"
exit $status
