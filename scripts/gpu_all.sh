#!/usr/bin/env bash
# The whole GPU check on the GPU machine (numpy + CuPy + torch + JAX, no MLIR), from caches
# prepared here. Every log goes to $OUT (or docs/gpu/run).
#
#   bash scripts/gpu_all.sh --prepare          # here: compile every GPU program for sm_90,
#                                              # then --pack
#   bash scripts/gpu_all.sh --pack             # here: .gpu/part1.tar.xz ... partN.tar.xz, each
#                                              # <= GPU_PACK_MIB MiB (default 60; scripts/gpu_pack.py)
#   bash scripts/gpu_all.sh --run TAG --part K # there, in the unpacked part K: what it holds
#   bash scripts/gpu_all.sh --run [TAG]        # there: everything (all the cases present)
#
# Each part is a snapshot: the sources as prepared, the GPU check's GPU programs and manifest,
# its share of the cases (.gpucache/part.json lists them) and, in part 1, the benches' caches.
# On the GPU machine, for K in 1..N (.gpu/partK.tar.xz copied to .gpu.tar.xz, carried):
#   mkdir snap && tar xJf .gpu.tar.xz -C snap && cd snap && bash scripts/gpu_all.sh --run TAG --part K
# Part 1 runs its share of the GPU check, every bench, the tape check and the GPU pytest; the
# other parts their share of the GPU check. Scripts that are absent are skipped and say so.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
mode=${1:---run}
shift $(( $# > 0 ? 1 : 0 ))
tag=run
part=
while [ $# -gt 0 ]; do
  case "$1" in
    --part) part=${2:-}; shift $(( $# > 1 ? 2 : 1 ));;
    -*) echo "gpu_all.sh: unknown option $1" >&2; exit 2;;
    *) tag=$1; shift;;
  esac
done
# each entry: script, cache dir (the GPU check's first)
ENTRIES=(
  "scripts/gpu_check.py .gpucache"
  "bench/peers.py bench/.cache"
  "bench/bundles.py bench/.bcache"
  "bench/tape.py bench/.tcache"
  "bench/float16.py bench/.hcache"
  "bench/launch_overhead.py bench/.lcache"
  "scripts/gpu_tape_check.py .tapecache"
)
CHECK=.gpucache
pack() {
  local extras=()
  for e in "${ENTRIES[@]}"; do set -- $e; [ "$2" != "$CHECK" ] && extras+=("$2"); done
  "$PY" scripts/gpu_pack.py --check "$CHECK" --out .gpu --limit-mib "${GPU_PACK_MIB:-60}" \
    --extra "${extras[@]}"
}
if [ "$mode" = "--prepare" ] || [ "$mode" = "--pack" ]; then
  PY=${PYTHON:-.venv/bin/python}
  rc=0
  if [ "$mode" = "--prepare" ]; then
    for e in "${ENTRIES[@]}"; do
      set -- $e
      if [ ! -f "$1" ]; then echo "skip $1 (absent)"; continue; fi
      echo "=== prepare $1 -> $2"
      "$PY" "$1" --prepare "$2" || { echo "FAILED: $1 --prepare"; rc=1; }
    done
    # the GPU pytest's programs and CPU results, into the GPU check's directory
    for k in test/python/interop_kernels.py test/python/bridges/torch16_kernels.py; do
      [ -f "$k" ] || continue
      echo "=== prepare $k -> $CHECK"
      "$PY" "$k" --prepare "$CHECK" || { echo "FAILED: $k --prepare"; rc=1; }
    done
  fi
  echo "=== pack"
  pack || rc=1
  exit $rc
fi
if [ "$mode" != "--run" ]; then
  echo "gpu_all.sh: the first argument is --prepare, --pack or --run, not $mode" >&2
  exit 2
fi
only=()
if [ -n "$part" ]; then
  held=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["part"])' \
    "$CHECK/part.json" 2>/dev/null)
  if [ -z "$held" ]; then
    echo "gpu_all.sh: --part $part, but $CHECK/part.json is missing or unreadable (unpack" \
      ".gpu/part$part.tar.xz here first)" >&2
    exit 2
  fi
  if [ "$held" != "$part" ]; then
    echo "gpu_all.sh: --part $part, but this snapshot holds part $held" >&2
    exit 2
  fi
  only=(--only "$CHECK/part.json")
  tag="$tag-part$part"
fi
out=${OUT:-docs/gpu/run}
mkdir -p "$out"
[ -z "$part" ] && [ -f .gpu.tar.xz ] && tar xJf .gpu.tar.xz
nvidia-smi --query-gpu=name,driver_version --format=csv > "$out/device-$tag.txt" 2>&1
for e in "${ENTRIES[@]}"; do
  set -- $e
  name=$(basename "$1" .py)
  args=()
  if [ "$2" = "$CHECK" ]; then args=("${only[@]}")
  elif [ -n "$part" ] && [ "$part" != 1 ]; then continue  # the benches run with part 1
  fi
  if [ ! -f "$1" ] || [ ! -d "$2" ]; then echo "skip $1"; continue; fi
  echo "=== $1 --run $2 ${args[*]}"
  timeout 240 "$PY" "$1" --run "$2" "${args[@]}" > "$out/$name-h200-$tag.log" 2>&1
  echo "rc=$?" >> "$out/$name-h200-$tag.log"
  tail -5 "$out/$name-h200-$tag.log"
done
[ -n "$part" ] && [ "$part" != 1 ] && exit 0
echo "=== GPU pytest"
# (a part holds only its share of the cases: the GPU check ran them above)
deselect=()
[ -n "$part" ] && deselect=(--deselect test/python/api/test_gpu.py::test_gpu_check_cache)
timeout 240 "$PY" -m pytest -q -m gpu -p no:cacheprovider "${deselect[@]}" \
  test/python/api/test_gpu.py \
  test/python/lowering/autodiff/test_gpu_diff.py test/python/bridges/test_torch.py \
  test/python/bridges/test_interop.py test/python/bridges/test_jax.py \
  test/python/bridges/test_torch16.py test/python/bridges/test_jax16.py \
  $(ls test/python/bridges/test_*gpu*.py test/python/tape/test_*gpu*.py 2>/dev/null) \
  > "$out/pytest_gpu-h200-$tag.log" 2>&1
echo "rc=$?" >> "$out/pytest_gpu-h200-$tag.log"
tail -3 "$out/pytest_gpu-h200-$tag.log"
