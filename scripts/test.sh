#!/usr/bin/env bash
# Run every test: pytest (test/python) and lit + FileCheck (test/lit).
# GPU tests skip cleanly where no GPU is present.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh || exit 1
rc=0
# pytest: one worker per core; `worksteal` lets an idle worker take queued tests
# from a busy one, so a few long tests (the fuzz slice, the 4-process cache
# test) do not leave a core idle at the end as a fixed split would
.venv/bin/lit -sv --order=lexical test/lit || rc=1
.venv/bin/python -m pytest -q -rs -n auto --dist worksteal test/python "$@" || rc=1
exit $rc
