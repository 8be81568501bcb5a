"""diffgpu-opt on bad input: exit status 1, a clear message, no traceback, no
crash (a process killed by a signal has a negative return code).

Most cases call the driver's `main` in this process (driver_harness.py
captures its stdin, stdout, stderr and file descriptors); the inputs that
would make MLIR abort the whole process if they reached it unchecked run in
one child process together (`run_isolated`), and a few run the driver as a
user would, `python -m diffgpu.tools.diffgpu_opt` with stdin a pipe.
"""
from __future__ import annotations

import os

import pytest

from diffgpu.tools import diffgpu_opt
from driver_harness import run_inprocess as run_opt
from driver_harness import run_isolated, run_subprocess

VALID = """\
func.func @k(%A: memref<?xf32>) attributes {diffgpu.kernel,
    diffgpu.target = #nvvm.target<O = 3, chip = "sm_90">} {
  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index
  %v = memref.load %A[%t] : memref<?xf32>
  memref.store %v, %A[%t] : memref<?xf32>
  return
}
"""

DEEP = [
    "func.func @f() attributes {x = " + "[" * 20000 + "]" * 20000 + "} { return }\n",
    "func.func @f() {" + "scf.execute_region {" * 5000 + "scf.yield }" * 5000 + " return }\n",
]

#: inputs that crash MLIR (and the process) unless diffgpu-opt catches them
#: first: name -> (arguments, "{valid}" for the valid kernel's path; stdin)
ISOLATED = {
    # MLIR's recursive parser/printer segfaults on inputs like these
    "deep_brackets": (["-", "--canonicalize"], DEEP[0].encode()),
    "deep_regions": (["-", "--canonicalize"], DEEP[1].encode()),
    # convert-to-llvm reports the GPU address space it cannot convert yet
    # succeeds; MLIR's Python bindings abort on that unless diffgpu-opt
    # routes errors to its own handler
    "error_but_success": (["-", "--convert-to-llvm"], (
        "func.func @s(%a: index) {\n"
        "  %0 = memref.alloca() : memref<16xf32, #gpu.address_space<workgroup>>\n"
        "  %1 = memref.load %0[%a] : memref<16xf32, #gpu.address_space<workgroup>>\n"
        "  return\n}\n").encode()),
    # translating non-LLVM ops crashes MLIR's bindings: must be caught first
    "emit_llvm_unlowered": (["{valid}", "--emit=llvm"], None),
    # upstream passes that crash MLIR: rejected before MLIR sees them
    "func_convert_to_llvm": (["{valid}", "-p", "func.func(convert-to-llvm)"], None),
    "any_convert_to_emitc": (["{valid}", "-p", "any(convert-to-emitc)"], None),
    "xegpu": (["{valid}", "--xegpu-propagate-layout"], None),
}


@pytest.fixture(scope="module")
def isolated(tmp_path_factory):
    """name -> (rc, out, err) of every ISOLATED case, run in one child."""
    path = tmp_path_factory.mktemp("isolated") / "k.mlir"
    path.write_text(VALID)
    cases = [([a.replace("{valid}", str(path)) for a in args], stdin)
             for args, stdin in ISOLATED.values()]
    return dict(zip(ISOLATED, run_isolated(cases)))


def assert_clean_failure(rc, out, err, message):
    assert rc == 1, f"exit status {rc} (negative: killed by a signal)\n{err}"
    assert "Traceback" not in out + err
    assert "internal error" not in err
    assert message in err, err


@pytest.fixture
def valid(tmp_path):
    p = tmp_path / "k.mlir"
    p.write_text(VALID)
    return str(p)


def write(tmp_path, name, data: bytes) -> str:
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


# -- bad input -----------------------------------------------------------------

def test_missing_file(tmp_path):
    for run in (run_opt, run_subprocess):  # also as a user runs it: a real exit status
        assert_clean_failure(*run([str(tmp_path / "nope.mlir")]), "cannot open input file")


def test_directory(tmp_path):
    assert_clean_failure(*run_opt([str(tmp_path)]), "is a directory")


def test_binary_garbage(tmp_path):
    path = write(tmp_path, "garbage.bin", bytes(range(256)) * 16)
    assert_clean_failure(*run_opt([path]), "input is binary")


def test_random_bytes_without_nul(tmp_path):
    import random
    rnd = random.Random(1234)
    data = bytes(rnd.randrange(1, 256) for _ in range(4096))
    rc, out, err = run_opt([write(tmp_path, "noise.bin", data)])
    assert_clean_failure(rc, out, err, "error:")


def test_not_utf8(tmp_path):
    path = write(tmp_path, "latin1.mlir", VALID.encode() + b"// caf\xe9\n")
    assert_clean_failure(*run_opt([path]), "input is not valid UTF-8")


def test_truncated_ir(tmp_path):
    path = write(tmp_path, "trunc.mlir", VALID.encode()[: len(VALID) // 2])
    rc, out, err = run_opt([path])
    assert_clean_failure(rc, out, err, "trunc.mlir:")
    assert ": error: " in err


def test_unknown_op_in_our_namespace(tmp_path):
    text = VALID.replace('"diffgpu.thread_id"() {dim = 0 : i64} : () -> index',
                         '"diffgpu.nope"() : () -> index')
    rc, out, err = run_opt([write(tmp_path, "nope.mlir", text.encode())])
    assert_clean_failure(rc, out, err, "nope.mlir:3:8: error: unregistered operation "
                                       "'diffgpu.nope'")


@pytest.mark.parametrize("name", ["deep_brackets", "deep_regions"])
def test_deep_nesting_does_not_overflow_the_stack(isolated, name):
    assert_clean_failure(*isolated[name], "input nests brackets more than")


def test_pass_that_emits_an_error_but_succeeds(isolated):
    assert_clean_failure(*isolated["error_but_success"],
                         "error: conversion of memref memory space")


def test_empty_input():
    assert_clean_failure(*run_subprocess(["-"], stdin=b""), "<stdin>: input is empty")
    assert_clean_failure(*run_opt(["-"], stdin=b"\n  \n"), "input is empty")


def test_parse_error_on_stdin_names_stdin():
    rc, out, err = run_subprocess(["-"], stdin=b"func.func @f( {\n")
    assert_clean_failure(rc, out, err, "<stdin>:1:")


# -- bad options and pipelines ---------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--no-such-pass"], "unknown option or pass '--no-such-pass'"),
    (["-p", "no-such-pass"], "unknown pass 'no-such-pass' in pipeline"),
    (["-p", "gpu-module-to-binary{format=offload}"], "unknown format 'offload'"),
    (["--gpu-module-to-binary=format=offload"], "unknown format 'offload'"),
    (["-p", "gpu-module-to-binary{format=}"], "unknown format ''"),
    (["-p", "diffgpu-to-ptx{chip=sm_999}"], "unknown NVIDIA chip 'sm_999'"),
    (["--diffgpu-to-ptx=chip=sm_999"], "unknown NVIDIA chip 'sm_999'"),
    (["--nvvm-attach-target=chip=sm_999"], "unknown NVIDIA chip 'sm_999'"),
    (["--nvvm-attach-target=chip=sm_90 O=9"], "O must be 0, 1, 2 or 3"),
    (["--canonicalize=bogus=1"], "no such option bogus"),
    (["--diffgpu-verify-targets=foo=1"], "'diffgpu-verify-targets' has no option 'foo'"),
    (["-p", "canonicalize{"], "missing '}'"),
    (["-p", "canonicalize,,cse"], "expected a pass name"),
    (["--emit=foo"], "unknown --emit value 'foo'"),
    (["--emit"], "option '--emit' needs a value"),
    (["--verify-diagnostics=1"], "takes no value"),
    (["-p", "cse", "--canonicalize"], "cannot be combined"),
    (["--frobnicate-the-widgets"], "unknown option or pass"),
    (["-@"], "unknown option '-@'"),
])
def test_bad_option(valid, args, message):
    assert_clean_failure(*run_opt([valid, *args]), message)


@pytest.mark.parametrize("name, message", [
    ("func_convert_to_llvm", "converts the op it runs on"),
    ("any_convert_to_emitc", "converts the op it runs on"),
    ("xegpu", "is not available in diffgpu-opt"),
])
def test_bad_option_that_would_crash_mlir(isolated, name, message):
    assert_clean_failure(*isolated[name], message)


def test_output_into_missing_directory(valid, tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "out.mlir"
    assert_clean_failure(*run_opt([valid, "-o", str(target)]), "cannot open output file")
    assert not target.exists()


def test_emit_ptx_without_binary(valid):
    assert_clean_failure(*run_opt([valid, "--emit=ptx"]),
                         "--emit=ptx needs a pipeline that produces gpu.binary")


def test_emit_llvm_of_unlowered_module(isolated):
    rc, out, err = isolated["emit_llvm_unlowered"]
    assert_clean_failure(rc, out, err, "--emit=llvm needs a module lowered to the LLVM dialect")
    assert ":1:1: error:" in err


# -- success paths (exit 0) --------------------------------------------------------

def test_roundtrip_and_exit_zero(valid):
    rc, out, err = run_opt([valid, "--diffgpu-verify-targets", "--canonicalize"])
    assert rc == 0, err
    assert '"diffgpu.thread_id"() {dim = 0 : i64} : () -> index' in out
    rc2, out2, err2 = run_subprocess(["-"], stdin=out.encode())  # stdin a pipe, exit 0
    assert rc2 == 0 and out2 == out, err2


def test_verify_diagnostics_reports_mismatches(tmp_path):
    text = ("func.func @k() {\n"
            "  // expected-error@+1 {{this message is not produced}}\n"
            '  %t = "diffgpu.thread_id"() {dim = 0 : i64} : () -> i32\n'
            "  return\n}\n")
    path = write(tmp_path, "v.mlir", text.encode())
    rc, out, err = run_opt([path, "--verify-diagnostics"])
    assert rc == 1
    assert "v.mlir:3:8: error: unexpected error: expected 'index' but got 'i32'" in err
    assert 'v.mlir:2:6: error: expected error "this message is not produced" was not produced' \
        in err
    fixed = text.replace("this message is not produced", "expected 'index' but got 'i32'")
    rc, out, err = run_opt([write(tmp_path, "w.mlir", fixed.encode()), "--verify-diagnostics"])
    assert rc == 0, err
    assert err == ""


# -- in-process: the last-resort handler ----------------------------------------------

def test_internal_error_is_one_line(monkeypatch, capsys):
    def boom(argv):
        raise RuntimeError("simulated bug")
    monkeypatch.setattr(diffgpu_opt, "_run", boom)
    monkeypatch.delenv("DIFFGPU_DEBUG", raising=False)
    assert diffgpu_opt.main(["x.mlir"]) == 1
    err = capsys.readouterr().err
    assert "diffgpu-opt: internal error: RuntimeError: simulated bug" in err
    assert "Traceback" not in err


def test_internal_error_traceback_with_debug(monkeypatch, capsys):
    def boom(argv):
        raise RuntimeError("simulated bug")
    monkeypatch.setattr(diffgpu_opt, "_run", boom)
    monkeypatch.setenv("DIFFGPU_DEBUG", "1")
    assert diffgpu_opt.main(["x.mlir"]) == 1
    assert "Traceback" in capsys.readouterr().err


# --- --list-passes ------------------------------------------------------------
def test_list_passes_names_ours_and_upstream():
    from diffgpu.lowering import registry
    from diffgpu.tools._upstream_passes import UPSTREAM_PASSES
    rc, out, err = run_opt(["--list-passes"])
    assert rc == 0, err
    for name in list(registry.passes()) + list(registry.pipelines()):
        assert f"  --{name}: " in out
    upstream = out[out.index("upstream MLIR passes"):]
    for names in UPSTREAM_PASSES.values():
        for name in names:
            assert name in upstream
    for name in ("canonicalize", "cse", "inline", "symbol-dce", "sccp", "mem2reg",
                 "convert-scf-to-cf", "convert-gpu-to-nvvm", "gpu-kernel-outlining",
                 "finalize-memref-to-llvm", "reconcile-unrealized-casts",
                 "loop-invariant-code-motion", "expand-strided-metadata", "lower-affine"):
        assert any(name in names for names in UPSTREAM_PASSES.values()), name
    assert "  on func.func:" in upstream and "affine-loop-tile" in upstream


def test_upstream_pass_list_matches_the_bindings():
    """Each listed pass is registered by the bindings, restricted to the op it
    is listed under; a name that is not a pass is refused by the same check."""
    from diffgpu.dialects import make_context
    from diffgpu.tools._upstream_passes import UPSTREAM_PASSES
    from diffgpu.tools._upstream_scan import registered
    with make_context():
        for anchor, names in UPSTREAM_PASSES.items():
            for name in names:
                assert registered(name) == (True, anchor or None), name
        assert registered("no-such-pass-at-all") == (False, None)


def test_readme_lists_every_pass_and_pipeline():
    from diffgpu.lowering import registry
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "README.md")).read()
    for name in list(registry.passes()) + list(registry.pipelines()):
        assert f"`{name}`" in readme, name


def test_listed_func_pass_runs_from_the_driver(tmp_path):
    path = tmp_path / "f.mlir"
    path.write_text("func.func @f(%a: f32) -> f32 {\n  %b = arith.addf %a, %a : f32\n"
                    "  return %b : f32\n}\n")
    rc, out, err = run_opt([str(path), "--affine-loop-normalize", "--canonicalize"])
    assert rc == 0, err
    assert "arith.addf" in out
