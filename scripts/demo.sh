#!/usr/bin/env bash
# The main job: the seed example (compile to PTX, run the gradient on the CPU,
# and on the GPU if one is present), then the other examples.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
for ex in examples/seed.py $(ls examples/*.py | grep -v '/seed.py$'); do
  echo "== $ex"
  if [ "$ex" = examples/ddp_train.py ] && ! .venv/bin/python -c 'import torch' 2>/dev/null; then
    echo "skipped: needs PyTorch (pip install '.[torch]'); see docs/torch.md"
    continue
  fi
  .venv/bin/python "$ex"
done
