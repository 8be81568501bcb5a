"""Aggregated atomics (lowering/reduce/aggregate_atomics.py, lowering/gpu/atomics.py).

On the host target the block sum runs in shared memory (threads one at a
time); the PTX checks read the GPU code for sm_90 without a GPU: one shuffle
tree per warp, a barrier, one atomic per block (and the per-thread fallback
for blocks that are not a multiple of 32 threads).
"""
from __future__ import annotations

import numpy as np
import pytest

import diffgpu as dg
from kernels_elementwise import sumsq  # defined once
from kernels_sums import sumsq_gen, sumsq_gen_ref  # noqa: F401  (also test_coarsen_reduce's)


@dg.kernel
def sumsq_early_return(out, x):
    i = dg.global_id(0)
    if i >= len(x):
        return
    dg.atomic_add(out, 0, x[i] * x[i])


@dg.kernel
def per_block(out, x):  # out[b] = sum of block b's elements that are positive
    i = dg.global_id(0)
    if i < len(x):
        if x[i] > 0.0:
            dg.atomic_add(out, dg.block_id(0), x[i])


@dg.kernel
def count_and_sum(cnt, out, x):  # two aggregated atomics, an integer one
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(cnt, 0, 1)
        dg.atomic_add(out, 0, x[i])


@dg.kernel
def sum_2d(out, x):
    i = dg.global_id(1)
    j = dg.global_id(0)
    if i < x.shape[0] and j < x.shape[1]:
        dg.atomic_add(out, 0, x[i, j])


@dg.kernel
def scale_loss(loss, a, w, x):  # a (Active) and w[0] are read by every thread
    i = dg.global_id(0)
    if i < len(x):
        r = a * w[0] * x[i]
        dg.atomic_add(loss, 0, r * r)


@dg.kernel
def sumsq_periodic_gen(out, n):  # period 256: every block of 256 or 1024 has the same sum
    i = dg.global_id(0)
    if i < n:
        v = np.float32(i % 256) / np.float32(256.0) + np.float32(0.5)
        dg.atomic_add(out, 0, v * v)


def sumsq_periodic_gen_ref(out, n):
    """float64 sum of the float32 squares sumsq_periodic_gen adds."""
    v = (np.arange(n) % 256).astype(np.float32) / np.float32(256.0) + np.float32(0.5)
    out[0] += np.sum((v * v).astype(np.float64))


def gpu_cases():
    """Cases for scripts/gpu_check.py: (name, kernel, grid, block, mode,
    make(rng), numpy reference or None for the CPU's result)."""
    big = 1 << 26

    def f32(r, n):
        return r.standard_normal(n).astype(np.float32)

    return [
        ("atomics sumsq 2^26 f32 blocks of 256", sumsq_gen, big // 256, 256, "launch",
         lambda r: [np.zeros(1, np.float32), big], sumsq_gen_ref),
        ("atomics sumsq 2^26 f32 blocks of 1024", sumsq_gen, big // 1024, 1024, "launch",
         lambda r: [np.zeros(1, np.float32), big], sumsq_gen_ref),
        ("atomics sumsq 2^26 f32 periodic (equal block sums) blocks of 256",
         sumsq_periodic_gen, big // 256, 256, "launch",
         lambda r: [np.zeros(1, np.float32), big], sumsq_periodic_gen_ref),
        ("atomics sumsq 2^26 f32 periodic (equal block sums) blocks of 1024",
         sumsq_periodic_gen, big // 1024, 1024, "launch",
         lambda r: [np.zeros(1, np.float32), big], sumsq_periodic_gen_ref),
        ("atomics sumsq blocks of 48 (partial warps)", sumsq_gen, 2000, 48, "launch",
         lambda r: [np.zeros(1, np.float32), 95_000], sumsq_gen_ref),
        ("atomics early return f64", sumsq_early_return, 40, 128, "launch",
         lambda r: [np.zeros(1), r.standard_normal(5000)], None),
        ("atomics per-block nested guards", per_block, 8, 128, "launch",
         lambda r: [np.zeros(8), r.standard_normal(1000)], None),
        ("atomics int count and sum", count_and_sum, 47, 64, "launch",
         lambda r: [np.zeros(1, np.int32), np.zeros(1), r.standard_normal(3001)], None),
        ("atomics 3-D blocks", sum_2d, (2, 13, 1), (4, 4, 2), "launch",
         lambda r: [np.zeros(1, np.float32), f32(r, 37 * 6).reshape(37, 6)], None),
        ("atomics divergent loop (partial warps)", divergent_loop, 300, 64, "launch",
         lambda r: [np.zeros(4, np.float32), np.zeros(1, np.int32), 19_111],
         divergent_loop_ref),
        ("atomics reverse Active + shared weight", scale_loss, 8, 128, "reverse",
         lambda r: [dg.Duplicated(np.zeros(1, np.float32), np.ones(1, np.float32)),
                    dg.Active(np.float32(1.3)),
                    dg.Duplicated(np.array([0.7], np.float32), np.zeros(1, np.float32)),
                    dg.Duplicated(f32(r, 1000), np.zeros(1000, np.float32))], None),
    ]


def test_divergent_loop_counts_exactly(monkeypatch):
    out, cnt = np.zeros(4, np.float32), np.zeros(1, np.int32)
    divergent_loop[300, 64](out, cnt, 19_111)
    ref, rcnt = np.zeros(4, np.float32), np.zeros(1, np.int32)
    divergent_loop_ref(ref, rcnt, 19_111)
    assert cnt[0] == rcnt[0] and np.array_equal(out, ref)  # halves: exact in float32
    # the loop's adds summed per thread (diffgpu-combine-adds), then per block
    assert ptx(divergent_loop, out, cnt, 5).count("bar.sync") == 2
    monkeypatch.setenv("DIFFGPU_COMBINE_ADDS", "0")  # in the loop: per warp
    text = ptx(divergent_loop, out, cnt, 5)
    assert text.count("activemask.b32") == 2 and text.count("bar.sync") == 0


def test_generated_sum_of_squares_matches_its_reference():
    out, ref = np.zeros(1, np.float32), np.zeros(1)
    sumsq_gen[40, 256](out, 10_000)
    sumsq_gen_ref(ref, 10_000)
    assert np.isclose(out[0], ref[0], rtol=1e-6)


@dg.kernel
def divergent_loop(out, cnt, n):  # warp-aggregated adds under divergent trip counts
    i = dg.global_id(0)
    if i < n:
        for k in range(i % 5):
            dg.atomic_add(out, dg.block_id(0) % 4, 0.5)
            dg.atomic_add(cnt, 0, 1)


def divergent_loop_ref(out, cnt, n):
    i = np.arange(n)
    np.add.at(out, (i // 64) % 4, 0.5 * (i % 5))
    cnt[0] += np.sum(i % 5)


def rand(n, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


@pytest.mark.parametrize("block", [1, 7, 32, 48, 256, 1024])
@pytest.mark.parametrize("kernel", [sumsq, sumsq_early_return], ids=["guard", "return"])
def test_sum_of_squares_any_block(kernel, block):
    x = rand(5000, np.float64)
    out = np.zeros(1)
    kernel[(len(x) + block - 1) // block, block](out, x)
    assert np.isclose(out[0], np.sum(x * x), rtol=1e-12)


def test_per_block_uniform_index_under_nested_guards():
    x = rand(1000, np.float64)
    out = np.zeros(8)
    per_block[8, 128](out, x)
    ref = [np.sum(np.where(c > 0, c, 0)) for c in np.split(np.pad(x, (0, 24)), 8)]
    np.testing.assert_allclose(out, ref, rtol=1e-12)


def test_integer_count_and_float_sum():
    x = rand(3001, np.float64)
    cnt, out = np.zeros(1, np.int32), np.zeros(1)
    count_and_sum[(3001 + 63) // 64, 64](cnt, out, x)
    assert cnt[0] == 3001 and np.isclose(out[0], np.sum(x), rtol=1e-12)


@pytest.mark.parametrize("block", [(8, 4, 1), (16, 3, 1), (4, 4, 2)])
def test_multi_dimensional_blocks(block):
    x = rand(6 * 37, np.float64).reshape(37, 6)
    out = np.zeros(1)
    grid = ((6 + block[0] - 1) // block[0], (37 + block[1] - 1) // block[1], 1)
    sum_2d[grid, block](out, x)
    # 3-D blocks repeat each element once per z thread
    assert np.isclose(out[0], block[2] * np.sum(x), rtol=1e-12)


@pytest.mark.parametrize("block", [256, 1024])
def test_float32_sum_of_2_26(block):
    """The block sums are pairwise; what remains sequential is one float32
    rounding per block at the target, each off by up to half an ulp of the
    running sum. For these terms the roundings behave like independent ones,
    a random walk of n / block steps (docs/atomics.md: block sums that vary
    by less than an ulp round the same way and drift further). Per-thread
    atomics (one rounding per element, 2^26 of them) were 18% off."""
    n = 1 << 26
    x = np.random.default_rng(3).random(n, dtype=np.float32) + np.float32(0.5)
    out = np.zeros(1, np.float32)
    sumsq[n // block, block](out, x)
    ref = np.sum(np.square(x, dtype=np.float64))
    ulp = float(np.spacing(np.float32(ref)))
    sigma = ulp / np.sqrt(12) * np.sqrt(n // block)  # uniform rounding errors
    assert abs(float(out[0]) - ref) <= 4 * sigma
    assert 4 * sigma / ref < 1e-4  # 2^18 roundings: within ~1e-5 typically


def test_active_scalar_and_shared_weight_gradients():
    x = rand(1000, np.float64)
    w = np.array([0.7])
    a = 1.3
    dloss, dw, dx = np.ones(1), np.zeros(1), np.zeros(1000)
    (da,) = dg.autodiff(scale_loss[8, 128], dg.Duplicated(np.zeros(1), dloss), dg.Active(a),
                        dg.Duplicated(w, dw), dg.Duplicated(x, dx))
    r = a * w[0] * x
    assert np.isclose(da, np.sum(2 * r * w[0] * x), rtol=1e-12)
    assert np.isclose(dw[0], np.sum(2 * r * a * x), rtol=1e-12)
    np.testing.assert_allclose(dx, 2 * r * a * w[0], rtol=1e-12)


@pytest.mark.parametrize("grid, block", [(8, 128), ((3, 5), (16, 2)), (1, 1), (300, 7)])
def test_active_gradient_over_slots(grid, block):
    """Each block adds its share at slot block % ACTIVE_SLOTS of the gradient
    buffer; the gradient is the slots' sum (any grid shape, more blocks than
    slots too)."""
    from diffgpu.hostdiff.diff import ACTIVE_SLOTS
    x = rand(1000, np.float64, seed=5)
    (da,) = dg.autodiff(scale_loss[grid, block], dg.Duplicated(np.zeros(1), np.ones(1)),
                        dg.Active(1.3), dg.Const(np.array([0.7])), dg.Const(x))
    g, b = np.atleast_1d(grid), np.atleast_1d(block)
    nx, reps = g[0] * b[0], np.prod(g[1:]) * np.prod(b[1:])  # threads sharing gid x
    r = 1.3 * 0.7 * x[:nx]
    want = reps * np.sum(2 * r * 0.7 * x[:nx])
    assert ACTIVE_SLOTS > 1 and np.isclose(da, want, rtol=1e-12)


# ---------------------------------------------------------------------------
# The GPU code (PTX for sm_90, compiled here without a GPU)
# ---------------------------------------------------------------------------

def ptx(kernel, *args):
    return kernel.ir(*args, stage="ptx", target="sm_90")


def generic_ptx(kernel, *args):
    """PTX of the generic program (no launch facts: what `dg.jax` launches)."""
    from diffgpu.driver.launch import build_module, check_launch_args
    from diffgpu.driver.compiler import compile_ptx
    types = check_launch_args(kernel, args).types
    return compile_ptx(build_module(kernel, types, "sm_90").text, "sm_90").ptx


def test_ptx_sum_of_squares_one_atomic_per_block():
    text = generic_ptx(sumsq, np.zeros(1, np.float32), np.zeros(64, np.float32))
    # the block sum: two warp trees (5 + 5 shuffles) around one barrier; blocks
    # that are not a multiple of 32 threads: one tree per full warp (5 more),
    # else one atomic per thread; LLVM may merge the atomics of these paths
    assert text.count("shfl.sync.bfly.b32") == 15
    assert text.count("bar.sync") == 1
    assert text.count("activemask.b32") == 1
    assert 1 <= text.count("atom.global.add.f32") <= 3


def test_ptx_two_sums_in_one_guard_both_per_block():
    """The first add of the guard is moved too once the second one's block sum
    follows the guard (shared memory, shuffles and a barrier observe nothing
    of a global array)."""
    text = ptx(count_and_sum, np.zeros(1, np.int32), np.zeros(1), np.zeros(64))
    assert text.count("bar.sync") == 2


def test_ptx_shared_weight_gradient_is_warp_aggregated():
    from diffgpu.driver.launch import build_module, check_launch_args
    from diffgpu.driver.compiler import compile_ptx

    args = (np.zeros(1, np.float32), np.float32(1), np.zeros(1, np.float32),
            np.zeros(8, np.float32))
    types = check_launch_args(scale_loss, args).types
    src = build_module(scale_loss, types, "sm_90", ("reverse", ("dup", "active", "dup", "dup")))
    text = compile_ptx(src.text, "sm_90").ptx
    # dw[0] += ... in the derivative function (under the guard): shuffle tree per
    # full warp; da: the wrapper kernel's block sum
    assert text.count("activemask.b32") >= 1
    assert text.count("bar.sync") == 1
    assert text.count("shfl.sync.bfly.b32") >= 15


def _reverse_with_facts(kernel, primals, shadows, grid, block, target="host"):
    """Compile and run (host) or compile (GPU) the reverse program of `kernel`
    specialised for disjoint arrays, as a launch that proved it would."""
    from diffgpu.driver.launch import check_launch_args, facts_for, get_program, run_program
    from diffgpu.runtime.args import infer_signature

    flat = [a for p, s in zip(primals, shadows) for a in (p, s)]
    types = check_launch_args(kernel, primals).types
    sig = infer_signature(flat, None, kernel.name)
    facts = facts_for(flat, sig.types, target, grid, block)
    assert facts is not None and facts.noalias
    diff = ("reverse", ("dup",) * len(primals))
    if target != "host":
        from diffgpu.driver.launch import build_module
        from diffgpu.driver.compiler import compile_ptx
        src = build_module(kernel, types, target, diff, facts)
        return compile_ptx(src.text, target).ptx
    run_program(get_program(kernel, types, target, diff=diff, facts=facts), flat, sig, grid,
                block)
    return None


def test_noalias_reverse_kernel_sums_the_replayed_primal_add_per_block():
    """The reverse kernel replays the primal's add in the derivative function;
    with disjoint arrays it moves to the kernel and is summed per block."""
    n, b = 1000, 64
    x = rand(n, np.float64)
    out, dout, dx = np.zeros(1), np.array([1.5]), np.zeros(n)
    _reverse_with_facts(sumsq, (out, x), (dout, dx), ((n + b - 1) // b, 1, 1), (b, 1, 1))
    assert np.isclose(out[0], np.sum(x * x), rtol=1e-12)
    np.testing.assert_allclose(dx, 2 * x * 1.5, rtol=1e-12)
    text = _reverse_with_facts(sumsq, (np.zeros(1, np.float32), np.zeros(n, np.float32)),
                               (np.zeros(1, np.float32), np.zeros(n, np.float32)),
                               (16, 1, 1), (64, 1, 1), target="sm_90")
    # the kernel entry sums per block (one barrier, a 10-shuffle tree), then
    # across blocks in f64 scratch (lowering/reduce/grid_sum.py); blocks that are not
    # a multiple of 32 threads add each thread's value in f64 (a per-warp tree
    # of 5 f64 shuffles, two shfl.b32 each) and meet at a second barrier. The
    # coarsened program's tail function (last partial group of elements) only
    # aggregates per warp, without a barrier
    entry = text[text.index(".visible .entry"):]
    assert text.count("bar.sync") == 2 and entry.count("bar.sync") == 2
    assert entry.count("shfl.sync.bfly.b32") == 20
    assert entry.count("fence.acq_rel.gpu") >= 2


def test_noalias_reverse_kernel_updates_the_gradient_without_atomics():
    """Disjoint arrays (launch facts): each shadow is judged on its own by the
    atomic elision, so dx[gid] is updated plainly although dout is read at
    [0]; the only atomics left are the block's sum of the replayed primal add
    and its per-thread fallback."""
    n = 64
    text = _reverse_with_facts(sumsq, (np.zeros(1, np.float32), np.zeros(n, np.float32)),
                               (np.zeros(1, np.float32), np.zeros(n, np.float32)),
                               (1, 1, 1), (64, 1, 1), target="sm_90")
    assert 1 <= text.count("atom.global.add.f32") <= 2
    assert text.count("st.global.b32") >= 1
