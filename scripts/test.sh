#!/usr/bin/env bash
# Run every test: pytest (test/python) and lit + FileCheck (test/lit).
# GPU tests skip cleanly where no GPU is present.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh || exit 1
rc=0
.venv/bin/lit -sv --order=lexical test/lit || rc=1
.venv/bin/python -m pytest -q -rs -n auto test/python "$@" || rc=1
exit $rc
