"""Gradients of 16-bit arrays (float16, bfloat16) accumulate in float32 and
are rounded once to the array's dtype (docs/language.md, 16-bit floats).

4096 threads each add 1e-3 into one gradient element: added in float16, the
sum stops growing at 4 (at 4 a float16's spacing is 2^-8 and every add of
1e-3 rounds back); in bfloat16 at 0.5. Added in float32 the sum of the
16-bit values is exact (they sit on a grid the float32 sum keeps), so the
gradient is that sum rounded once: exactly `dtype(sum)`.

Checked: dg.vjp (a float32 scratch shadow, float32 atomics), host-level
dg.autodiff (the caller's 16-bit shadows through a float32 scratch, taken
back rounded), a thread's own adds into one element of a 16-bit shadow
(in-kernel dg.autodiff: summed in float32 in registers, one 16-bit add),
dg.gradcheck at 16-bit tolerance, and the sm_90 PTX of the bench's gather
(float32 atomics, no float16 ones)."""
from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest

import diffgpu as dg

N = 4096
STEP = 1e-3


def _dtypes():
    out = [np.float16]
    try:
        import ml_dtypes
        out.append(ml_dtypes.bfloat16)
    except ImportError:  # bfloat16 is ml_dtypes' numpy dtype
        pass
    return out


DTYPES = _dtypes()


@dg.kernel
def bcast(y, x, w):
    i = dg.global_id()
    y[i] = x[0] * w[i]


def _exact(w, start=0.0):
    """start + sum(w) in float64: exact here (float32 keeps it too)."""
    return start + float(np.sum(w.astype(np.float64)))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_vjp_many_threads_into_one_element(dtype):
    x = np.ones(1, dtype)
    w = np.full(N, STEP, dtype)
    g = dg.vjp(bcast[N // 256, 256], np.zeros(N, dtype), x, w,
               cotangents={"y": np.ones(N, dtype)})
    dx = g["x"]
    assert dx.dtype == np.dtype(dtype) and dx.shape == (1,)
    want = _exact(w)
    assert want > 4.09  # 16-bit accumulation would stop at 4 (float16) / 0.5 (bfloat16)
    assert dx[0] == np.asarray(want).astype(dtype)  # one rounding of the exact sum
    # dw[i] = x[0] * dy[i]: written once per element, in the array's dtype
    assert g["w"].dtype == np.dtype(dtype)
    np.testing.assert_array_equal(g["w"].astype(np.float64), 1.0)
    # the replayed call (same key) takes the same path
    again = dg.vjp(bcast[N // 256, 256], np.zeros(N, dtype), x, w,
                   cotangents={"y": np.ones(N, dtype)})
    assert again["x"][0] == dx[0]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_host_autodiff_scratch_shadows(dtype):
    x = np.ones(1, dtype)
    w = np.full(N, STEP, dtype)
    dx = np.full(1, 0.5, dtype)  # read-only input: its shadow accumulates onto 0.5
    dy = np.ones(N, dtype)       # written output: its shadow is consumed
    for _ in range(2):  # planned, then replayed
        dx[0], dy[:] = 0.5, 1
        assert dg.autodiff(bcast[N // 256, 256], dg.Duplicated(np.zeros(N, dtype), dy),
                           dg.Duplicated(x, dx), dg.Const(w)) == ()
        assert dx.dtype == np.dtype(dtype)
        assert dx[0] == np.asarray(_exact(w, 0.5)).astype(dtype)
        np.testing.assert_array_equal(dy.astype(np.float64), 0.0)


def test_host_autodiff_strided_16_bit_shadow():
    """A strided shadow view takes the rounded sums back in place; the
    elements between its own are untouched."""
    x = np.ones(2, np.float16)
    base = np.full(4, 7.0, np.float16)
    dx = base[::2]  # elements 0 and 2
    dx[:] = 0
    w = np.full(N, STEP, np.float16)
    dg.autodiff(bcast[N // 256, 256], dg.Duplicated(np.zeros(N, np.float16),
                                                    np.ones(N, np.float16)),
                dg.Duplicated(x, dx), dg.Const(w))
    assert base[0] == np.float16(_exact(w)) and base[2] == 0
    assert base[1] == 7 and base[3] == 7


@dg.kernel
def own_sum(y, x, w):
    """Each thread reads x[0] 64 times (one gradient add into dx[0] per read)."""
    i = dg.global_id()
    acc = 0.0
    for k in range(64):
        acc += x[0] * w[i * 64 + k]
    y[i] = acc


@dg.kernel
def own_sum_grad(y, dy, x, dx, w):
    dg.autodiff(own_sum, dg.Duplicated(y, dy), dg.Duplicated(x, dx), w)


def test_a_threads_adds_into_a_16_bit_shadow_are_summed_in_float32():
    """In-kernel dg.autodiff with the caller's float16 shadow (no scratch is
    possible): one thread's 64 adds of 0.0014 into dx[0] = 1 are summed in
    float32 and added once (one rounding). Added one by one in float16 each
    add would round to one spacing at 1 (2^-10, 0.00098): 1.0625."""
    step = 0.0014
    w = np.full(64, step, np.float16)
    x = np.ones(1, np.float16)
    dx = np.ones(1, np.float16)
    own_sum_grad[1, 1](np.zeros(1, np.float16), np.ones(1, np.float16), x, dx, w)
    want = np.float16(_exact(w, 1.0))
    one_by_one = np.float16(1.0)
    for v in w:
        one_by_one = np.float16(np.float32(one_by_one) + np.float32(v))
    assert one_by_one != want  # the test tells the two apart
    assert dx[0] == want


def test_gradcheck_16_bit_still_passes():
    @dg.kernel
    def mix(y, x, idx):
        i = dg.global_id()
        y[i] = dg.sin(x[idx[i]]) * x[i]
    n = 256
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, n).astype(np.float16)
    idx = rng.integers(0, 8, n).astype(np.int32)  # many threads share x[0..7]
    assert dg.gradcheck(mix[1, n], dg.Duplicated(np.zeros(n, np.float16),
                                                 np.zeros(n, np.float16)),
                        dg.Duplicated(x, np.zeros(n, np.float16)), dg.Const(idx))


def _bench():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    sys.path.insert(0, os.path.join(root, "bench"))
    import peer_cases
    return peer_cases


def test_gather_float16_vjp_uses_float32_atomics_in_ptx():
    """The bench's gather (dx[idx[i]] += dy[i]): its float16 dg.vjp program
    for sm_90 adds into a float32 scratch (atom/red .f32), no float16 atomic."""
    from diffgpu.interop import compile_only
    PC = _bench()
    case = next(c for c in PC.cases(1 << 12) if c.name == "gather")
    k = PC.kernels()[case.kernel]
    host = {p: (v.astype(np.float16) if isinstance(v, np.ndarray) and v.dtype == np.float32
                else v) for p, v in case.make(np.random.default_rng(0)).items()}
    n = len(host["idx"])
    before = set(k._programs)
    with compile_only("sm_90"):
        dg.vjp(k[(n + 255) // 256, 256], *[host[p] for p in case.params],
               cotangents={case.out: np.ones_like(host[case.out])})
    new = [key for key in set(k._programs) - before if key[2] is not None]  # the vjp's
    assert new
    ptx = "\n".join(k._programs[key].payload.get("ptx") or "" for key in new)
    atomics = re.findall(r"\b(?:atom|red)\.[.a-z0-9]+", ptx)
    assert any(a.endswith(".f32") for a in atomics), atomics
    assert not any(".f16" in a or ".bf16" in a for a in atomics), atomics


@pytest.mark.parametrize("name", ["stencil", "loop16", "gather", "saxpy"])
def test_peer_gradients_are_rounded_once(name):
    """bench/peer_cases.py's cases in float16 through dg.vjp: every gradient
    element is its float32 sum rounded once, so it is within half a float16
    spacing of the float64 reference of the rounded inputs (relative to
    max(1, max |reference|), 1% slack for float32's own roundings). Added in
    float16, loop16's p (one add per step) and gather's x (one per index
    that meets it) carried several roundings: up to 1.5 and 0.76 spacings."""
    PC = _bench()
    n = 4096
    case = next(c for c in PC.cases(n) if c.name == name)
    rng = np.random.default_rng(7)

    def to16(h):
        return {p: (v.astype(np.float16) if isinstance(v, np.ndarray) and v.dtype == np.float32
                    else v) for p, v in h.items()}
    host = to16(case.make(rng))
    h64 = {p: v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
           for p, v in host.items()}
    g = rng.standard_normal(host[case.out].shape).astype(np.float16)
    launch = PC.kernels()[case.kernel][(n + 255) // 256, 256]
    fresh = to16(case.make(np.random.default_rng(7)))
    grads = dg.vjp(launch, *[fresh[p] for p in case.params], cotangents={case.out: g})
    for p, (want, idx) in case.grad_ref(h64, g.astype(np.float64), PC.sample(n)).items():
        got = np.asarray(grads[p], np.float64).reshape(-1)
        got = got[idx] if idx is not None else got
        want = np.asarray(want, np.float64).reshape(-1)
        err = float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want)))))
        assert err <= 0.505 * 2.0 ** -10, (p, err / 2.0 ** -10)


def test_vjp_in_out_16_bit_array_through_a_float32_scratch():
    """An in-out float16 array (a[i] = a[i] * w[0]) and a shared input w[0]:
    both gradients through float32 scratch shadows (the in-out one a float32
    copy of its cotangent), against float64."""
    @dg.kernel
    def scale_inplace(a, w):
        i = dg.global_id()
        a[i] = a[i] * w[0]
    rng = np.random.default_rng(2)
    a = rng.uniform(-1, 1, N).astype(np.float16)
    w = np.array([0.75], np.float16)
    g = rng.uniform(-1, 1, N).astype(np.float16)
    before = a.copy()
    got = dg.vjp(scale_inplace[N // 256, 256], a, w, cotangents={"a": g})
    np.testing.assert_array_equal(a, before)  # outputs=False: the caller's array is kept
    assert got["a"].dtype == np.float16 and got["w"].dtype == np.float16
    want_a = g.astype(np.float64) * 0.75  # exact in float16 (times 3/4)
    np.testing.assert_array_equal(got["a"], want_a.astype(np.float16))
    want_w = float(np.sum(g.astype(np.float64) * a.astype(np.float64)))
    # float32 products and sum, one rounding: within half a float16 spacing (+1%)
    assert abs(float(got["w"][0]) - want_w) <= 0.505 * float(np.spacing(np.float16(want_w)))


def _split_module(acts):
    """Hand-written host IR: kernel @k calls @put(X, Z, i), which stores
    float(X[0]) into Z[i] (every thread reads X[0]); @d_k differentiates @k
    with activities `acts`, X's shadow a float32 array (dup32)."""
    from diffgpu.dialects import names as NM
    host = '#llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">'
    a16, a32 = (f"memref<?x{t}, strided<[?], offset: ?>>" for t in ("f16", "f32"))
    gid = ('  %bx = "diffgpu.block_id"() {dim = 0 : i64} : () -> index\n'
           '  %bd = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index\n'
           '  %tx = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index\n'
           '  %m = arith.muli %bx, %bd : index\n  %i = arith.addi %m, %tx : index\n')
    types = [a16, a32, a32, a32]
    layout = NM.diff_layout(NM.AUTODIFF, [2, 2], types, [])
    attrs = "".join(f", {k} = array<i32: {', '.join(map(str, v))}>" for k, v in layout.items())
    acts_s = ", ".join(f'"{a}"' for a in acts)
    return (
        f"func.func @put(%X: {a16}, %Z: {a32}, %i: index) attributes "
        f"{{diffgpu.target = {host}}} {{\n"
        f"  %c0 = arith.constant 0 : index\n"
        f"  %x = memref.load %X[%c0] : {a16}\n  %w = arith.extf %x : f16 to f32\n"
        f"  memref.store %w, %Z[%i] : {a32}\n  return\n}}\n"
        f"func.func @k(%X: {a16}, %Z: {a32}) attributes "
        f"{{diffgpu.kernel, diffgpu.target = {host}}} {{\n" + gid +
        f"  func.call @put(%X, %Z, %i) : ({a16}, {a32}, index) -> ()\n  return\n}}\n"
        f"func.func @d_k(%X: {a16}, %dX: {a32}, %Z: {a32}, %dZ: {a32}) attributes "
        f"{{diffgpu.kernel, diffgpu.target = {host}}} {{\n"
        f'  "diffgpu.autodiff"(%X, %dX, %Z, %dZ) {{callee = @k, activity = [{acts_s}], '
        f"diffgpu.target = {host}{attrs}}} : ({', '.join(types)}) -> ()\n  return\n}}\n")


def test_dup32_through_a_device_function_call():
    """The IR's dup32 activity (a float32 shadow of a float16 array) through
    a call (the callee's split reverse takes the float32 shadow): 4096
    threads' adjoints sum exactly in float32; a dup32 of a float32 array is
    a CompileError naming the argument."""
    from diffgpu.driver.compiler import compile_host
    from diffgpu.types import ArrayType
    prog = compile_host(_split_module(["dup32", "dup"]))
    x, dx = np.ones(1, np.float16), np.zeros(1, np.float32)
    z, dz = np.zeros(N, np.float32), np.full(N, np.float16(STEP), np.float32)
    prog.launch("d_k", [x, dx, z, dz], [ArrayType("float16", 1)] + [ArrayType("float32", 1)] * 3,
                (N // 256, 1, 1), (256, 1, 1))
    assert dx[0] == np.float32(N * float(np.float16(STEP)))  # 4.09765625, exact
    np.testing.assert_array_equal(dz, 0.0)  # consumed
    with pytest.raises(dg.CompileError, match="argument 1 of @k: 'dup32' is for 16-bit float "
                                              "arrays in reverse mode"):
        compile_host(_split_module(["dup32", "dup32"]))


def test_tape_gradient_of_a_float16_array():
    """dg.Tape's reverse steps run dg.vjp's plans: the same float32 scratch
    (the tape takes float16 arrays; bfloat16 ones it refuses: docs/gpu.md)."""
    dtype = np.float16
    x = np.ones(1, dtype)
    w = np.full(N, STEP, dtype)
    y = np.zeros(N, dtype)
    with dg.Tape() as tape:
        bcast[N // 256, 256](y, x, w)
    (dx,) = tape.gradient(y, [x], np.ones(N, dtype))
    assert dx.dtype == np.dtype(dtype)
    assert dx[0] == np.asarray(_exact(w)).astype(dtype)


@dg.kernel
def bcast_grad(y, dy, x, dx, w):
    dg.autodiff(bcast, dg.Duplicated(y, dy), dg.Duplicated(x, dx), w)


def test_in_kernel_16_bit_shadow_at_a_block_uniform_element():
    """In-kernel dg.autodiff, the caller's float16 shadow, every thread adding
    into dx[0]: each block's adds are summed in float32 first (one float16
    atomic per block: 16 roundings at most, not 4096), so dx[0] is within 16
    half spacings of the exact sum (float16 adds per thread: 4.0); the sm_90
    PTX has the block sum's shuffles and one float16 atomic."""
    x = np.ones(1, np.float16)
    w = np.full(N, STEP, np.float16)
    dx = np.zeros(1, np.float16)
    args = (np.zeros(N, np.float16), np.ones(N, np.float16), x, dx, w)
    bcast_grad[N // 256, 256](*args)
    want = _exact(w)
    blocks = N // 256
    assert abs(float(dx[0]) - want) <= blocks * 0.5 * float(np.spacing(np.float16(want)))
    assert dx[0] != 4.0
    ptx = bcast_grad.ir(*args, stage="ptx", target="sm_90", grid=blocks, block=256)
    atomics = re.findall(r"\b(?:atom|red)\.[.a-z0-9]+", ptx)
    assert atomics == ["atom.global.add.noftz.f16"], atomics
    assert "shfl.sync" in ptx
