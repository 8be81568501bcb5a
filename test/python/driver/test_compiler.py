"""The compile driver (diffgpu.driver.compiler): stages, reuse of the per-thread
context and pass managers, and the pipelines that must not be reused."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from diffgpu.driver import compiler
from diffgpu.errors import CompileError
from diffgpu.lowering.common import session
from diffgpu.lowering.common.targets import TargetError, nvvm_target
from host_ir_helpers import NP, elementwise, launch_1d

FPOWI = elementwise("cube", ["f64"], "f64",
                    "%k3 = arith.constant 3 : i32\n    %r = math.fpowi %x0, %k3 : f64, i32")


def _gpu(text: str) -> str:
    from host_ir_helpers import HOST_TARGET
    return text.replace(HOST_TARGET, nvvm_target("sm_90"))


def test_every_stage_of_a_gpu_compile():
    text = _gpu(FPOWI)
    outs = {s: compiler.compile(text, "sm_90", s) for s in compiler.STAGES}
    assert '"diffgpu.thread_id"' in outs["dialect"].text
    assert "gpu.module" in outs["gpu"].text and "gpu.module" not in outs["autodiff"].text
    assert "nvvm." in outs["nvvm"].text
    assert "llvm.func" in outs["llvm"].text and "gpu.binary" not in outs["llvm"].text
    ptx = outs["ptx"]
    assert ".entry cube" in ptx.text and ptx.entries == ["cube"]
    assert ptx.kernels == {"cube": [("memref", 1, "float64"), ("memref", 1, "float64")]}
    assert compiler.compile(text, "sm_90").text == ptx.text  # the default: the end


def test_context_and_gpu_pass_managers_are_reused(monkeypatch):
    """A compile runs the pipeline's elements one by one (Ctrl-C stops it
    between two: docs/interrupt.md), each with its cached pass manager.
    (The context is recycled every RECYCLE_AFTER uses, its pass managers with
    it: held off here, so that where the count stands after this worker's
    earlier tests cannot land a recycle inside the test.)"""
    monkeypatch.setattr(session, "RECYCLE_AFTER", 10**9)
    text = _gpu(FPOWI)
    first = compiler.compile(text, "sm_90").text
    ctx = compiler.context()
    elements = compiler.pipeline_elements(compiler.full_pipeline("sm_90"))
    pms = [compiler.pass_manager(e) for e in elements]
    steps = compiler.STATS["steps"]
    assert compiler.compile(text, "sm_90").text == first
    assert compiler.STATS["steps"] - steps == len(elements) > 10
    assert compiler.context() is ctx
    assert all(compiler.pass_manager(e) is pm for e, pm in zip(elements, pms))


def test_host_pipeline_runs_twice_in_one_thread():
    """convert-math-to-funcs keeps the functions it outlined: a reused host
    PassManager crashed the process on the second math.fpowi module."""
    from diffgpu.lowering.common import session

    assert not session._reusable(compiler.full_pipeline("host"))
    for _ in range(2):
        prog = compiler.compile_host(FPOWI)
        x = np.linspace(-2, 2, 50)
        out = np.zeros_like(x)
        launch_1d(prog, "cube", [out, x], len(x))
        np.testing.assert_allclose(out, x ** 3)


def test_threads_have_their_own_context():
    text = _gpu(FPOWI)
    seen, errors = [], []

    def work():
        try:
            res = compiler.compile(text, "sm_90")
            seen.append((compiler.context(), res.text))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert seen[0][0] is not seen[1][0] and seen[0][1] == seen[1][1]


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="unknown stage 'ptx' for target 'host'"):
        compiler.compile(FPOWI, "host", "ptx")
    with pytest.raises(ValueError, match="unknown stage 'asm'"):
        compiler.compile(FPOWI, "sm_90", "asm")
    with pytest.raises(TargetError, match="unknown NVIDIA chip 'sm_1'"):
        compiler.compile(FPOWI, "sm_1")
    with pytest.raises(CompileError, match="invalid diffgpu IR"):
        compiler.compile("func.func @k(", "host")
    with pytest.raises(CompileError, match="targets host; the CPU runtime compiles host-target "
                       "modules only|targets sm_90"):
        compiler.compile(_gpu(FPOWI), "host")


def test_the_lowered_host_module_is_jitted_without_a_second_parse(monkeypatch):
    from diffgpu.runtime import jit

    def no_parse(text):  # pragma: no cover - the failure
        raise AssertionError("compile_host parsed the lowered text again")

    monkeypatch.setattr(jit, "parse_text", no_parse)
    prog = compiler.compile_host(elementwise("twice", ["f32"], "f32",
                                             "%r = arith.addf %x0, %x0 : f32"))
    x = np.arange(8, dtype=NP["f32"])
    out = np.zeros_like(x)
    launch_1d(prog, "twice", [out, x], len(x))
    np.testing.assert_array_equal(out, 2 * x)


def test_a_handed_over_module_is_compiled_without_a_parse():
    """mark_facts (a launch's facts) hands its module to the driver with the
    text: compiling that very string takes the module. The marker set after
    the hand-over is only in the module, never in the text."""
    from diffgpu._mlir import ir

    with compiler.context(), ir.Location.unknown():
        module = ir.Module.parse(FPOWI)
        text = compiler.hand_over(module)
        module.operation.attributes["diffgpu.handed"] = ir.UnitAttr.get()
    assert "diffgpu.handed" not in text
    assert "diffgpu.handed" in compiler.compile(text, "host", "dialect").text
    # taken once; an equal but distinct string object is parsed
    assert "diffgpu.handed" not in compiler.compile(text, "host", "dialect").text
    assert "diffgpu.handed" not in compiler.compile("".join(text), "host", "dialect").text


def test_launch_facts_compile_parses_once():
    import diffgpu as dg
    from diffgpu.driver.launch import build_module, facts_for
    from diffgpu.runtime.args import infer_signature

    @dg.kernel
    def scale(y, x):
        i = dg.global_id(0)
        if i < len(x):
            y[i] = 2.0 * x[i]

    x = np.arange(1024, dtype=np.float32)
    args = (np.zeros_like(x), x)
    types = infer_signature(args).types
    facts = facts_for(args, types, "sm_90", (4, 1, 1), (256, 1, 1))
    assert facts is not None
    src = build_module(scale, types, "sm_90", facts=facts)
    assert compiler._take_handed(src.text) is not None  # mark_facts handed it over


_FORK_CHILD = r"""
import os, sys
from diffgpu.driver import compiler
from host_ir_helpers import elementwise
text = elementwise("twice", ["f32"], "f32", "%r = arith.addf %x0, %x0 : f32")
compiler.compile_host(text)            # the parent's context and pass managers
pid = os.fork()
if pid == 0:                           # the child compiles in a context of its own
    compiler.compile_host(text)
    compiler.compile(text.replace("#llvm.target<triple = \"x86_64-unknown-linux-gnu\", "
                                  "chip = \"generic\">", "#nvvm.target<O = 3, chip = \"sm_90\">"),
                     "sm_90")
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("child status", status)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_compiles_in_its_own_context():
    """gpu_check.py prepares each case in a forked child: with the parent's
    context (its thread pool gone) the child hung or crashed."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # test/python
    out = subprocess.run([sys.executable, "-c", _FORK_CHILD], capture_output=True, text=True,
                         timeout=120, cwd=here,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([here] + sys.path)})
    assert out.returncode == 0, out.stderr
    assert "child status 0" in out.stdout, out.stdout + out.stderr
