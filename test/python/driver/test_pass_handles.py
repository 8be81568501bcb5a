"""Compiles that used to crash the process now and then: a pass read a
Python handle of an op it had erased through another handle (the bindings
give each handle its own object, so erasing through one leaves the others
dangling; lowering/common/ir_util.py states the rule). `diffgpu-warp-atomics` did
it: its outer walk list still held every atomic it aggregated and read the
erased atomic's name next, a use after free that segfaulted about one run in
four in the forked children of scripts/gpu_check.py --prepare.

A use after free crashes only sometimes, so each case here is prepared
several times, each in a forked child (as --prepare does) with a fresh
program cache (a cached program would skip the passes), all in one
subprocess: a crash kills a child, the subprocess reports it and exits 1.
The cases are those whose GPU compile aggregates atomics over the warp
(`diffgpu-warp-atomics` rewrites 2 to 5 atomics in each)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

#: (gpu_check case, preparations): the reported reproducer most often. With
#: the old pass about one preparation in eight crashed here, so 28 of them
#: miss it about one time in 30 (about 0.5 s each).
RUNS = [("grad call_kernel reverse", 16), ("grad scalar_active reverse", 3),
        ("grad shared_accumulate reverse", 3), ("atomics early return f64", 3),
        ("atomics reverse Active + shared weight", 3)]

SCRIPT = textwrap.dedent("""
    import json, os, sys, tempfile
    sys.path.insert(0, os.path.join(sys.argv[1], "scripts"))
    import repo_imports
    repo_imports.bootstrap()
    import gpu_check as G

    G.preload_compiler()  # as --prepare does: the children start with MLIR imported
    runs = json.loads(sys.argv[2])
    cases = {c[0]: c for c in G.gradient_cases() + G.atomics_cases()}
    work = sys.argv[3]  # the test's tmp_path
    bad = 0
    for name, times in runs:
        for k in range(times):
            os.environ["DIFFGPU_CACHE_DIR"] = tempfile.mkdtemp(dir=work)
            rec = G._isolated(lambda: G._prepare_case(work, "sm_90", k, *cases[name]),
                              {"name": name})
            print(f"{name} #{k}: {rec.get('error', 'prepared')}", flush=True)
            bad += "error" in rec
    sys.exit(1 if bad else 0)
""")


def test_warp_atomics_compiles_never_crash(tmp_path):
    script = tmp_path / "prepare_cases.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, "-X", "faulthandler", str(script), REPO,
                           json.dumps(RUNS), str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    done = [ln for ln in proc.stdout.splitlines() if ln.endswith(": prepared")]
    assert len(done) == sum(n for _, n in RUNS), out
