"""`scripts/gpu_check.py --prepare DIR --modules NAME[,NAME]`: only the cases
of those scripts/gpu_cases modules, every one of them also a case of the
whole set (the one `--run` looks the names up in); unknown names refused
with the list of the modules there are; a manifest of exactly the chosen
cases, without the whole check's gradcheck, test_gpu.py and bundle rows,
which --run's steps (on numpy arrays here) find, run and match."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import gpu_check  # noqa: E402


def test_module_cases_are_those_of_the_module():
    chosen = gpu_check.module_cases(["vector_builtins"])
    names = [c[0] for c in chosen]
    assert len(names) == len(set(names)) > 0
    assert all(n.startswith("vector_builtins ") for n in names)
    whole = {c[0] for c in gpu_check.all_cases()}
    assert set(names) <= whole and len(whole) > len(names)
    # every builtin case of the test file, float32 and float64, three modes
    from test_vector_builtins_gpu_cases import CASES
    assert len(names) == len(CASES) * 2 * 3
    assert {c[4] for c in chosen} == {"launch", "reverse", "forward"}


def test_module_cases_keep_the_order_given():
    both = gpu_check.module_cases(["vector_builtins", "rank4"])
    first = len(gpu_check.module_cases(["vector_builtins"]))
    assert all(c[0].startswith("vector_builtins ") for c in both[:first])
    assert not any(c[0].startswith("vector_builtins ") for c in both[first:])
    assert len(both) > first


def test_unknown_module_refused(tmp_path, capsys):
    with pytest.raises(ValueError, match="no scripts/gpu_cases module nope; there are .*"
                                         "vector_builtins"):
        gpu_check.module_cases(["nope"])
    d = tmp_path / "prep"
    assert gpu_check.main(["--prepare", str(d), "--modules", "vector_builtins,nope"]) == 2
    assert "no scripts/gpu_cases module nope" in capsys.readouterr().err
    assert not d.exists()  # refused before anything is written
    assert gpu_check.main(["--prepare", str(d), "--modules", ","]) == 2
    assert "no scripts/gpu_cases module named" in capsys.readouterr().err


def test_modules_needs_prepare(tmp_path):
    with pytest.raises(SystemExit) as exc:
        gpu_check.main(["--run", str(tmp_path), "--modules", "vector_builtins"])
    assert exc.value.code == 2


def test_prepare_modules_writes_only_those_cases(tmp_path, monkeypatch):
    """Two cases of vector_builtins (float32 reverse, float64 forward of one
    builtin) prepared for sm_90: the manifest holds them alone, with their
    inputs and the CPU's results."""
    picked = [c for c in gpu_check.module_cases(["vector_builtins"])
              if c[0] in ("vector_builtins length_sq float32 reverse",
                          "vector_builtins length_sq float64 forward")]
    assert len(picked) == 2
    monkeypatch.setattr(gpu_check, "module_cases", lambda names: picked)
    monkeypatch.setenv("DIFFGPU_CACHE_DIR", os.environ.get("DIFFGPU_CACHE_DIR", ""))
    d = tmp_path / "prep"
    assert gpu_check.prepare_modules(str(d), "sm_90", ["vector_builtins"]) == 0
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["modules"] == ["vector_builtins"]
    assert [c["name"] for c in manifest["cases"]] == [c[0] for c in picked]
    assert not {"gradcheck", "bundle"} & set(manifest)
    for rec in manifest["cases"]:
        assert "error" not in rec and rec["note"] == "cpu result"
        data = np.load(d / rec["file"])
        # out and its shadow, a and its shadow: the gradient of a (reverse),
        # the tangent of out (forward), computed, not zero
        assert rec["outputs"] == 4
        derivative = data["out3"] if rec["mode"] == "reverse" else data["out1"]
        assert np.abs(derivative).max() > 0.1
    assert (d / "cache").is_dir() and any(files for _, _, files in os.walk(d / "cache"))
    # --run's steps on numpy arrays (it needs CuPy itself): each case found by
    # name among all the cases, its inputs decoded, run, equal to the stored
    # results
    from gpu_check_io import compare, decode_args, results, run_case
    cases = {c[0]: c[1:5] for c in gpu_check.all_cases()}
    for rec in manifest["cases"]:
        kernel, grid, block, mode = cases[rec["name"]]
        data = np.load(d / rec["file"])
        args = decode_args(rec["args"], data, np.array)
        got = results(args, run_case(kernel, grid, block, mode, args))
        assert compare(got, [data[f"out{j}"] for j in range(rec["outputs"])])[1]
