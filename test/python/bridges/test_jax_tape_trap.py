"""dg.jax on CUDA: XLA launches the PTX itself and cannot read a heap tape's
overflow flag, so the bridge passes PTX whose overflow traps
(runtime/tape_overflow.py `trapping_ptx`: @__dg_tape_recover starts at 0);
lowered here with a recorder in place of jaxlib's kernel-call library."""
import pytest

import diffgpu as dg
from diffgpu.runtime.tape_overflow import trapping_ptx

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
import diffgpu.jax as dgj  # noqa: E402


@dg.kernel
def spin(y, x, n):
    i = dg.global_id(0)
    if i < len(x):
        s = x[i]
        t = 0
        while t < n:  # a while loop: its carried value on the heap tape
            s = dg.sin(s) * 0.9 + 0.1 * x[i]
            t += 1
        y[i] = s


RECOVERS = ".visible .global .align 8 .b8 __dg_tape_recover[8] = {1};"
TRAPS = ".visible .global .align 8 .b8 __dg_tape_recover[8];"


def test_the_reverse_kernel_traps_on_overflow(cuda_lowering):
    calls = cuda_lowering()
    f = dgj.op(spin, outputs={"y": "x"}, scalars={"n": int}, grid=1, block=64)
    fn = jax.jit(jax.grad(lambda x: f(x, 300).sum()))
    fn.trace(jnp.ones(64)).lower(lowering_platforms=("cuda",))
    ptx = {kernel[0]: kernel[4] for kernel, _ in calls}
    (rev,) = [p for p in ptx.values() if "__dg_tape_overflow" in p]
    assert TRAPS in rev and RECOVERS not in rev
    assert "trap;" in rev
    assert all("__dg_tape_recover" not in p for p in ptx.values() if p is not rev)


def test_trapping_ptx():
    entry = dg.compile(spin, ("float64[:]", "float64[:]", "int64"), target="sm_90")
    assert "__dg_tape_recover" not in entry.payload["ptx"]  # no derivative, no tape
    assert trapping_ptx(entry.payload["ptx"]) == entry.payload["ptx"]
    with pytest.raises(dg.LaunchError, match="unexpected form"):
        trapping_ptx(".visible .global .align 8 .b8 __dg_tape_recover[8] = {7};")
    assert trapping_ptx(RECOVERS + "\n") == TRAPS + "\n"
