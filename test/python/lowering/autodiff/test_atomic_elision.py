"""Atomic elision in the reverse sweep (lowering/autodiff/elision.py).

On the host target threads run one at a time, so a wrongly elided atomic
would not show as a race: the IR tests below (the analysis outcome for
Python kernels, as the frontend emits them) are the proof of soundness; the
numeric tests check that gradients stay right where the plain update runs
(multi-block and 2-D launches) and where the atomic must stay (colliding
indices), against analytic sums and `dg.gradcheck`.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import diffgpu as dg

N = 12


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------

@dg.kernel
def k_sq(x, y):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * x[i] + dg.sin(x[i])


@dg.kernel
def k_hand(x, y):  # the global id spelled out: i64 arithmetic, cast to index per access
    i = dg.block_id(0) * dg.block_dim(0) + dg.thread_id(0)
    if i < len(x):
        y[i] = 2.0 * x[i] * x[i]


@dg.kernel
def k_2d(x, y):
    i = dg.global_id(1)
    j = dg.global_id(0)
    if i < x.shape[0] and j < x.shape[1]:
        y[i, j] = x[i, j] * x[i, j] * x[i, j]


@dg.kernel
def k_atomic_out(x, out):  # out[i] sums the contributions of every thread with gid_x == i
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, i, x[i] * x[i])


@dg.kernel
def k_scale(a, x, y):  # an Active scalar: the host wrapper adds its gradient atomically
    i = dg.global_id(0)
    if i < len(x):
        y[i] = a * x[i]


@dg.kernel
def k_mod(x, y):  # colliding: threads share x[i % 4] and x[0]
    i = dg.global_id(0)
    if i < len(y):
        y[i] = x[i % 4] * x[0]


@dg.kernel
def k_stencil(x, y):
    i = dg.global_id(0)
    if i >= 1 and i + 1 < len(x):
        y[i] = x[i - 1] + 2.0 * x[i] + x[i + 1]


@dg.kernel
def k_next(x, y):  # x at gid and gid + 1
    i = dg.global_id(0)
    if i + 1 < len(x):
        y[i] = x[i] * x[i + 1]


@dg.kernel
def k_two_inputs(x, w, y):  # two accumulating shadows (could overlap at an offset)
    i = dg.global_id(0)
    if i < len(y):
        y[i] = x[i] * w[i]


@dg.kernel
def k_loop(x, y):
    i = dg.global_id(0)
    if i < len(y):
        s = 0.0
        for j in range(len(x)):
            s += x[j] * x[j]
        y[i] = s


@dg.kernel
def k_gather(x, idx, y):
    i = dg.global_id(0)
    if i < len(y):
        y[i] = x[idx[i]] * 3.0


@dg.kernel
def k_half(x, y):
    i = dg.global_id(0)
    if i < len(y):
        y[i] = x[i // 2] * x[i // 2]


@dg.kernel
def k_tid(x, y):
    i = dg.thread_id(0)
    if i < len(y):
        y[i] = x[i] * x[i]


@dg.kernel
def k_col0(x, y):  # x[gid_x, 0]: threads with different y share the element
    i = dg.global_id(0)
    if i < x.shape[0]:
        y[i, 0] = x[i, 0] * x[i, 0]


@dg.func
def f_sq(x, y, i):
    y[i] = x[i] * x[i]


@dg.kernel
def k_inner(x, dx, y, dy):  # device-side autodiff of a function with an index argument
    i = dg.global_id(0)
    if i < len(x):
        dg.autodiff(f_sq, dg.Duplicated(x, dx), dg.Duplicated(y, dy), i)


# ---------------------------------------------------------------------------
# The analysis outcome on the IR
# ---------------------------------------------------------------------------

def rev_ir(kernel, args, kinds):
    """Text of the generated reverse functions for dg.autodiff(kernel, ...)."""
    from diffgpu.driver.launch import build_module, check_launch_args
    from diffgpu.driver.compiler import compile as compile_ir

    types = check_launch_args(kernel, args).types
    src = build_module(kernel, types, "host", ("reverse", tuple(kinds)))
    text = compile_ir(src.text, "host", "autodiff").text
    funcs = re.findall(r"func\.func (?:private )?@__dg_rev_.*?\n  }\n", text, re.S)
    assert funcs, text
    return "".join(funcs)


def outcome(text):
    """(guarded plain updates, atomics) in the reverse functions."""
    return text.count('"diffgpu.grid_dim"() {dim = 2'), text.count('"diffgpu.atomic_add"')


def f32(*shape):
    return np.zeros(shape, np.float32)


ELIDED = [
    # (plain updates, atomics: the guards' fallbacks and the primal's own)
    ("sq", k_sq, (f32(N), f32(N)), ["dup", "dup"], (3, 3)),  # three loads of x[i]
    ("atomic_out", k_atomic_out, (f32(N), f32(N)), ["dup", "dup"], (2, 3)),
    ("hand_written_gid", k_hand, (f32(N), f32(N)), ["dup", "dup"], (2, 2)),
    ("active_scalar", k_scale, (np.float32(2), f32(N), f32(N)), ["active", "dup", "dup"],
     (1, 1)),
]


@pytest.mark.parametrize("name,kernel,args,kinds,sites", ELIDED, ids=[c[0] for c in ELIDED])
def test_elided_global_id(name, kernel, args, kinds, sites):
    # one guarded plain update per shadow accumulation, whose atomic is only
    # the fallback of its guard
    assert outcome(rev_ir(kernel, args, kinds)) == sites


def test_2d_global_ids_guard_only_dimension_2():
    text = rev_ir(k_2d, (f32(3, 4), f32(3, 4)), ["dup", "dup"])
    assert outcome(text) == (3, 3)  # three loads of x[i, j]
    assert '"diffgpu.grid_dim"() {dim = 1' not in text


def test_column_zero_needs_trivial_y_and_z():
    # x[gid_x, 0]: plain only when dimensions 1 and 2 have a single thread
    text = rev_ir(k_col0, (f32(N, 2), f32(N, 2)), ["dup", "dup"])
    assert outcome(text) == (2, 2)
    assert '"diffgpu.grid_dim"() {dim = 1' in text


KEPT = [
    ("mod_and_zero", k_mod, (f32(4), f32(N)), ["dup", "dup"]),
    ("stencil", k_stencil, (f32(N), f32(N)), ["dup", "dup"]),
    ("two_inputs", k_two_inputs, (f32(N), f32(N), f32(N)), ["dup", "dup", "dup"]),
    ("gid_and_gid_plus_1", k_next, (f32(N), f32(N)), ["dup", "dup"]),
    ("loop_variable", k_loop, (f32(4), f32(N)), ["dup", "dup"]),
    ("index_array", k_gather, (f32(4), np.zeros(N, np.int32), f32(N)),
     ["dup", "const", "dup"]),
    ("gid_floordiv_2", k_half, (f32(N), f32(N)), ["dup", "dup"]),
    ("thread_id_only", k_tid, (f32(N), f32(N)), ["dup", "dup"]),
]


@pytest.mark.parametrize("name,kernel,args,kinds", KEPT, ids=[c[0] for c in KEPT])
def test_atomics_kept(name, kernel, args, kinds):
    guarded, atomics = outcome(rev_ir(kernel, args, kinds))
    assert guarded == 0
    assert atomics >= 1


def test_device_side_autodiff_keeps_atomics():
    # the index is an argument and the op sits in a user kernel: no elision
    from diffgpu.driver.launch import build_module, check_launch_args
    from diffgpu.driver.compiler import compile as compile_ir

    args = (f32(N), f32(N), f32(N), f32(N))
    src = build_module(k_inner, check_launch_args(k_inner, args).types, "host")
    text = compile_ir(src.text, "host", "autodiff").text
    assert '"diffgpu.grid_dim"' not in text
    assert '"diffgpu.atomic_add"' in text


# ---------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------

def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float64)


def test_hand_written_gid_gradient():
    x, dy = rand(N), rand(N, seed=9)
    dx, y = np.zeros(N), np.zeros(N)
    dg.autodiff(k_hand[4, 3], dg.Duplicated(x, dx), dg.Duplicated(y, dy.copy()))
    np.testing.assert_allclose(dx, 4 * x * dy, rtol=1e-12)


@pytest.mark.parametrize("grid,block", [(3, 4), (1, N), (6, 2)])
def test_multi_block_elided_gradient(grid, block):
    x, dy = rand(N), rand(N, seed=1)
    dx, y = np.zeros(N), np.zeros(N)
    dg.autodiff(k_sq[grid, block], dg.Duplicated(x, dx), dg.Duplicated(y, dy.copy()))
    np.testing.assert_allclose(dx, dy * (2 * x + np.cos(x)), rtol=1e-12)
    dg.gradcheck(k_sq[grid, block], dg.Duplicated(rand(N), f32(N).astype(np.float64)),
                 dg.Duplicated(np.zeros(N), np.zeros(N)))


def test_2d_launch_elided_gradient():
    x, dy = rand(3, 4), rand(3, 4, seed=2)
    dx, y = np.zeros((3, 4)), np.zeros((3, 4))
    dg.autodiff(k_2d[(2, 3), (2, 1)], dg.Duplicated(x, dx), dg.Duplicated(y, dy.copy()))
    np.testing.assert_allclose(dx, dy * 3 * x * x, rtol=1e-12)
    dg.gradcheck(k_2d[(2, 2), (2, 2)], dg.Duplicated(rand(3, 4), np.zeros((3, 4))),
                 dg.Duplicated(np.zeros((3, 4)), np.zeros((3, 4))))


@pytest.mark.parametrize("grid", [3, (3, 2), (3, 1, 2)])
def test_guard_falls_back_when_threads_share_gid_x(grid):
    # every (y, z) replica of gid_x adds x[i]^2 into out[i]: the adjoint of
    # x[i] collects one contribution per replica (atomic path when > 1)
    reps = int(np.prod(grid)) // 3
    x, dout = rand(N), rand(N, seed=3)
    dx, out = np.zeros(N), np.zeros(N)
    dg.autodiff(k_atomic_out[grid, 4], dg.Duplicated(x, dx), dg.Duplicated(out, dout))
    np.testing.assert_allclose(dx, reps * 2 * x * dout, rtol=1e-12)


def test_colliding_indices_keep_the_sum():
    x, dy = rand(4), rand(N, seed=4)
    dx, y = np.zeros(4), np.zeros(N)
    dg.autodiff(k_mod[3, 4], dg.Duplicated(x, dx), dg.Duplicated(y, dy.copy()))
    want = np.zeros(4)
    for i in range(N):
        want[i % 4] += dy[i] * x[0]
        want[0] += dy[i] * x[i % 4]
    np.testing.assert_allclose(dx, want, rtol=1e-12)
    dg.gradcheck(k_mod[3, 4], dg.Duplicated(rand(4), np.zeros(4)),
                 dg.Duplicated(np.zeros(N), np.zeros(N)))


@pytest.mark.parametrize("kernel", [k_stencil, k_next, k_loop, k_half], ids=lambda k: k.name)
def test_kept_atomics_gradcheck(kernel):
    n_in = 4 if kernel is k_loop else N
    dg.gradcheck(kernel[3, 4], dg.Duplicated(rand(n_in), np.zeros(n_in)),
                 dg.Duplicated(np.zeros(N), np.zeros(N)))


def test_gather_gradient():
    x, dy = rand(4), rand(N, seed=5)
    idx = (np.arange(N) * 3 % 4).astype(np.int32)
    dx, y = np.zeros(4), np.zeros(N)
    dg.autodiff(k_gather[3, 4], dg.Duplicated(x, dx), dg.Const(idx),
                dg.Duplicated(y, dy.copy()))
    want = np.zeros(4)
    np.add.at(want, idx, 3.0 * dy)
    np.testing.assert_allclose(dx, want, rtol=1e-12)


def test_two_inputs_gradient():
    x, w, dy = rand(N), rand(N, seed=6), rand(N, seed=7)
    dx, dw, y = np.zeros(N), np.zeros(N), np.zeros(N)
    dg.autodiff(k_two_inputs[3, 4], dg.Duplicated(x, dx), dg.Duplicated(w, dw),
                dg.Duplicated(y, dy.copy()))
    np.testing.assert_allclose(dx, dy * w, rtol=1e-12)
    np.testing.assert_allclose(dw, dy * x, rtol=1e-12)


def test_active_scalar_with_elision():
    x, dy = rand(N), rand(N, seed=8)
    dx, y = np.zeros(N), np.zeros(N)
    (ga,) = dg.autodiff(k_scale[3, 4], dg.Active(1.5), dg.Duplicated(x, dx),
                        dg.Duplicated(y, dy.copy()))
    np.testing.assert_allclose(dx, 1.5 * dy, rtol=1e-12)
    np.testing.assert_allclose(ga, np.dot(dy, x), rtol=1e-10)
