#!/usr/bin/env bash
# The whole GPU check in one call, on the GPU machine (numpy + CuPy + torch + JAX, no MLIR),
# from caches prepared here by `bash scripts/gpu_all.sh --prepare` (then packed into
# .gpu.tar.xz, which travels with the working tree). Every log goes to $OUT (or docs/gpu/run).
#
#   bash scripts/gpu_all.sh --prepare          # here: compile every GPU program for sm_90
#   bash scripts/gpu_all.sh --run [TAG]        # there: run everything, one log per script
#
# Scripts that are absent are skipped and say so.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
mode=${1:---run}
tag=${2:-run}
# each entry: script, cache dir, extra run args
ENTRIES=(
  "scripts/gpu_check.py .gpucache"
  "bench/peers.py bench/.cache"
  "bench/bundles.py bench/.bcache"
  "bench/tape.py bench/.tcache"
  "bench/float16.py bench/.hcache"
  "bench/launch_overhead.py bench/.lcache"
  "scripts/gpu_tape_check.py .tapecache"
)
if [ "$mode" = "--prepare" ]; then
  PY=${PYTHON:-.venv/bin/python}
  rc=0
  for e in "${ENTRIES[@]}"; do
    set -- $e
    if [ ! -f "$1" ]; then echo "skip $1 (absent)"; continue; fi
    echo "=== prepare $1 -> $2"
    "$PY" "$1" --prepare "$2" || { echo "FAILED: $1 --prepare"; rc=1; }
  done
  [ -f test/python/interop_kernels.py ] && "$PY" test/python/interop_kernels.py --prepare .gpucache
  dirs=()
  for e in "${ENTRIES[@]}"; do set -- $e; [ -d "$2" ] && dirs+=("$2"); done
  tar cJf .gpu.tar.xz "${dirs[@]}" && ls -la .gpu.tar.xz
  exit $rc
fi
out=${OUT:-docs/gpu/run}
mkdir -p "$out"
[ -f .gpu.tar.xz ] && tar xJf .gpu.tar.xz
nvidia-smi --query-gpu=name,driver_version --format=csv > "$out/device-$tag.txt" 2>&1
for e in "${ENTRIES[@]}"; do
  set -- $e
  name=$(basename "$1" .py)
  if [ ! -f "$1" ] || [ ! -d "$2" ]; then echo "skip $1"; continue; fi
  echo "=== $1 --run $2"
  timeout 240 "$PY" "$1" --run "$2" > "$out/$name-h200-$tag.log" 2>&1
  echo "rc=$?" >> "$out/$name-h200-$tag.log"
  tail -5 "$out/$name-h200-$tag.log"
done
echo "=== GPU pytest"
timeout 240 "$PY" -m pytest -q -m gpu -p no:cacheprovider test/python/api/test_gpu.py \
  test/python/lowering/autodiff/test_gpu_diff.py test/python/bridges/test_torch.py \
  test/python/bridges/test_interop.py test/python/bridges/test_jax.py \
  $(ls test/python/tape/test_*gpu*.py 2>/dev/null) > "$out/pytest_gpu-h200-$tag.log" 2>&1
tail -3 "$out/pytest_gpu-h200-$tag.log"
