#!/usr/bin/env bash
# The main job: the seed example (compile to PTX, run the gradient on the CPU,
# and on the GPU if one is present), then the other examples.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
for ex in examples/seed.py $(ls examples/*.py | grep -v '/seed.py$'); do
  echo "== $ex"
  .venv/bin/python "$ex"
done
