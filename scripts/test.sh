#!/usr/bin/env bash
# Run every test: pytest (test/python) and lit + FileCheck (test/lit).
# GPU tests skip cleanly where no GPU is present.
#
# lit runs alongside pytest (its report is printed when pytest ends): its
# diffgpu-opt processes fill the cores while pytest starts its workers and
# finishes its last tests, instead of lit's own tail leaving one idle first.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh || exit 1
rc=0
lit_log=$(mktemp "${TMPDIR:-/tmp}/diffgpu-lit.XXXXXX")
.venv/bin/lit -sv --order=lexical test/lit > "$lit_log" 2>&1 &
lit_pid=$!
trap 'kill "$lit_pid" 2>/dev/null; rm -f "$lit_log"' EXIT  # also on Ctrl-C
# pytest: one worker per core; `worksteal` lets an idle worker take queued tests
# from a busy one, so a few long tests (the fuzz slice, the 4-process cache
# test) do not leave a core idle at the end as a fixed split would
.venv/bin/python -m pytest -q -rs -n auto --dist worksteal test/python "$@" || rc=1
wait "$lit_pid" || rc=1
echo "=== lit (test/lit) ==="
cat "$lit_log"
exit $rc
