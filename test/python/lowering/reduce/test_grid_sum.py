"""The cross-block finish of aggregated float32 sums (lowering/reduce/grid_sum.py):
block sums meet in float64 scratch, the last block adds their total once.

On the CPU emulation (the same algorithm as the GPU: pairwise block sums,
float64 across blocks, one final rounding) 2^26 float32 squares are within
1e-5 of the float64 sum for any data, including data whose block sums are
all equal (the per-block float32 adds were 5.4e-4 off there in blocks of
1024); scripts/gpu_check.py and scripts/gpu_check_grid_sum.py run the same
sums on the GPU.
"""
from __future__ import annotations

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime import specialize

import kernels_elementwise

N = 1 << 26


# the sum of squares of kernels_elementwise.py, as a kernel of its own: the
# tests below count its programs, which other modules' launches must not add to
sumsq = dg.kernel(kernels_elementwise.sumsq.py_func)


@dg.kernel
def sumsq_at(out, k, x):  # the element is a kernel argument: launch-uniform
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, k, x[i] * x[i])


@dg.kernel
def sumsq_return(out, x):  # early return: whole blocks past the end add nothing
    i = dg.global_id(0)
    if i >= len(x):
        return
    dg.atomic_add(out, 0, x[i] * x[i])


@dg.kernel
def two_sums(out, x):  # two grid sums in one kernel: two scratch slots
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, 0, x[i])
        dg.atomic_add(out, 1, x[i] * x[i])


@dg.kernel
def per_block(out, x):  # block-dependent element: per-block adds stay
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(out, dg.block_id(0) % 2, x[i])


@dg.kernel
def count(cnt, x):  # integer adds: exact in any order, no scratch
    i = dg.global_id(0)
    if i < len(x):
        dg.atomic_add(cnt, 0, 1)


def normal(n):
    return np.random.default_rng(11).standard_normal(n).astype(np.float32)


def hashed(n):
    """Values in [0.5, 1.5) from a multiplicative hash of the index."""
    k = np.arange(n, dtype=np.int64) * 2654435761 % 4294967296 // 65536
    return k.astype(np.float32) / np.float32(65536.0) + np.float32(0.5)


def periodic(n):
    """A period of 256: every block of 256 (or 1024) threads has the same sum."""
    return (np.arange(n) % 256).astype(np.float32) / np.float32(256.0) + np.float32(0.5)


def rel_err(out, x):
    ref = np.sum(np.square(x, dtype=np.float64))
    return abs(float(out) - ref) / ref


#: worst-case relative error of the result, for blocks of `block` threads:
#: one rounding per square, log2(block) pairwise levels, float64 across blocks
#: (negligible), one final rounding to float32 (docs/atomics.md, "Accuracy")
def bound(block):
    return (1 + np.log2(block) + 1) * 2.0 ** -24 + 1e-12


@pytest.mark.parametrize("make", [normal, hashed, periodic])
@pytest.mark.parametrize("block", [256, 1024])
def test_2_26_float32_squares_within_1e_5(make, block):
    x = make(N)
    out = np.zeros(1, np.float32)
    sumsq[N // block, block](out, x)
    assert rel_err(out[0], x) <= bound(block) < 1e-5


def test_the_per_block_adds_were_not_enough(monkeypatch):
    """The generic program (no launch facts: no scratch) keeps one float32
    add per block: the periodic data is far off there, so the test above
    measures the finish."""
    x = periodic(1 << 22)
    monkeypatch.setattr(specialize, "ENABLED", False)
    out = np.zeros(1, np.float32)
    sumsq[(1 << 22) // 256, 256](out, x)
    assert rel_err(out[0], x) > 1e-5


def close(got, want, block):
    return abs(float(got) - want) <= bound(block) * abs(want)


def test_adds_to_what_is_there_and_leaves_the_scratch_zero():
    x = hashed(1 << 16)
    out = np.zeros(1, np.float32)
    sumsq[(1 << 16) // 128, 128](out, x)
    total = out[0]
    assert close(total, np.sum(np.square(x, dtype=np.float64)), 128)
    for _ in range(3):  # the last block zeroes the scratch for the next launch
        out[0] = 5.0
        sumsq[(1 << 16) // 128, 128](out, x)
        assert out[0] == np.float32(5.0) + total  # one add of the same total
    (prog,) = [p for p in sumsq._programs.values() if p.host._scratch]
    (scratch,) = prog.host._scratch.values()
    assert not scratch.acc.any() and not scratch.count.any()


def test_an_interrupted_launch_leaves_no_stale_scratch():
    """A launch stopped by Ctrl-C never reaches its last block: the next
    launch of the program zeroes the scratch first."""
    x = hashed(4096)
    out = np.zeros(1, np.float32)
    sumsq_at[16, 256](out, 0, x)
    total = out[0]
    (prog,) = [p for p in sumsq_at._programs.values() if p.host._scratch]
    (scratch,) = prog.host._scratch.values()
    scratch.acc[0], scratch.count[0] = 123.0, 7  # as a launch stopped halfway leaves it
    prog.host._dirty = True
    out[0] = 0
    sumsq_at[16, 256](out, 0, x)
    assert out[0] == total


def test_argument_index_any_grid_shape():
    x = hashed(5000)
    out = np.zeros(3, np.float32)
    sumsq_at[(5, 4, 1), (64, 1, 1)](out, 2, x)  # 20 blocks, the y ones repeat x's
    want = 4 * np.sum(np.square(x[:320], dtype=np.float64))
    assert out[0] == out[1] == 0 and close(out[2], want, 64)


@pytest.mark.parametrize("kernel", [sumsq, sumsq_return], ids=["guard", "return"])
def test_blocks_with_no_thread_in_range_still_count(kernel):
    """Blocks whose threads all fail the guard (or return) count themselves
    too: without them the last count is never reached and nothing is added."""
    x = hashed(1000)
    # 16 blocks cover x, 24 have no element; 32 blocks cover x, 168 have none
    # (whole groups of 64 with no element, groups of 3 and 4 blocks)
    for grid, block in ((40, 64), (200, 32)):
        out = np.zeros(1, np.float32)
        kernel[grid, block](out, x)
        assert close(out[0], np.sum(np.square(x, dtype=np.float64)), block)
        for prog in [p for p in kernel._programs.values() if p.host._scratch]:
            (scratch,) = prog.host._scratch.values()
            assert not scratch.acc.any() and not scratch.count.any()


@pytest.mark.parametrize("blocks", [1, 2, 63, 64, 65, 129, 1000])
def test_any_block_count_groups_of_64(blocks):
    """Block b arrives in group b % 64 (abi.SCRATCH_GROUPS): fewer blocks
    than groups (only `blocks` groups reach the top counter), counts that
    are not multiples of 64 (the first `blocks % 64` groups hold one more
    block), several launches in a row (each finds the scratch zero)."""
    n = blocks * 32 - 5  # the last block is partly out of range
    x = hashed(n)
    want = np.sum(np.square(x, dtype=np.float64))
    out = np.zeros(1, np.float32)
    sumsq[blocks, 32](out, x)
    first = out[0]
    assert close(first, want, 32)
    for _ in range(2):
        out[0] = 0
        sumsq[blocks, 32](out, x)
        assert out[0] == first
    (prog,) = [p for p in sumsq._programs.values() if p.host._scratch]
    (scratch,) = prog.host._scratch.values()
    assert not scratch.acc.any() and not scratch.count.any()


def test_three_dimensional_grid_not_a_multiple_of_64():
    """The linear block index takes all three grid dimensions: 3 * 5 * 7 =
    105 blocks in 64 groups, each block adding a different total."""
    x = hashed(105 * 64)
    out = np.zeros(3, np.float32)
    sumsq_at[(3, 5, 7), (64, 1, 1)](out, 1, x)  # every block sums x[:192]
    want = 35 * np.sum(np.square(x[:192], dtype=np.float64))
    assert out[0] == out[2] == 0 and close(out[1], want, 64)


def test_two_sums_two_slots():
    x = hashed(3000)
    out = np.zeros(2, np.float32)
    two_sums[(3000 + 127) // 128, 128](out, x)
    assert close(out[0], np.sum(x, dtype=np.float64), 128)
    assert close(out[1], np.sum(np.square(x, dtype=np.float64)), 128)
    (prog,) = [p for p in two_sums._programs.values() if p.host._scratch_slots]
    assert prog.host._scratch_slots == {"two_sums": 2}


def test_not_applied_to_block_dependent_or_integer_adds():
    x = hashed(1000)
    out, cnt = np.zeros(2, np.float32), np.zeros(1, np.int32)
    per_block[8, 128](out, x)
    count[8, 128](cnt, x)
    assert cnt[0] == 1000
    ref = [np.sum(x[b * 128:(b + 1) * 128], dtype=np.float64) for b in range(8)]
    np.testing.assert_allclose(out, [sum(ref[0::2]), sum(ref[1::2])], rtol=1e-6)
    for k in (per_block, count):
        assert all(not p.host._scratch_slots for p in k._programs.values())


@dg.kernel
def scale(y, w, x):  # y = w[0] * x: the gradient of w[0] sums over every thread
    i = dg.global_id(0)
    if i < len(x):
        y[i] = w[0] * x[i]


@dg.kernel
def saxpy(y, a, x):
    i = dg.global_id(0)
    if i < len(x):
        y[i] = a * x[i] + y[i]


def test_shadow_of_a_uniform_weight_finishes_across_blocks():
    """dw[0] += x[i] * dy[i] in the reverse kernel: a uniform shadow element,
    summed per block, then across blocks in float64."""
    n = 1 << 20
    x = periodic(n)
    dy = np.ones(n, np.float32)
    w, dw = np.ones(1, np.float32), np.zeros(1, np.float32)
    dg.autodiff(scale[n // 256, 256], dg.Duplicated(np.zeros(n, np.float32), dy),
                dg.Duplicated(w, dw), dg.Const(x))
    ref = np.sum(x, dtype=np.float64)
    assert abs(float(dw[0]) - ref) / ref <= bound(256)
    assert any(p.host._scratch_slots for p in scale._programs.values())


def test_active_scalar_keeps_its_slots():
    """dg.autodiff and dg.vjp of saxpy's `a`: an Active scalar's gradient goes to slot block % ACTIVE_SLOTS (a
    block-dependent element): no scratch; the slots' float64 sum keeps it
    accurate (each slot takes n / (block * 256) sequential adds)."""
    n = 1 << 20
    x = periodic(n)
    y = np.zeros(n, np.float32)
    (da,) = dg.autodiff(saxpy[n // 256, 256], dg.Duplicated(y, np.ones(n, np.float32)),
                        dg.Active(np.float32(2.0)), dg.Const(x))
    assert abs(da - np.sum(x, dtype=np.float64)) / np.sum(x, dtype=np.float64) < 1e-6
    grads = dg.vjp(saxpy[n // 256, 256], y, 2.0, x, cotangents={"y": np.ones(n, np.float32)})
    assert abs(grads["a"] - np.sum(x, dtype=np.float64)) / np.sum(x, dtype=np.float64) < 1e-6
    np.testing.assert_array_equal(grads["x"], np.full(n, 2.0, np.float32))
    assert all(not (p.host and p.host._scratch_slots) for p in saxpy._programs.values())


# ---------------------------------------------------------------------------
# The GPU program (PTX for sm_90, compiled here without a GPU; a CuPy stand-in)
# ---------------------------------------------------------------------------

def _gpu_payload(kernel, args, grid, block):
    from diffgpu.driver.launch import build_payload, facts_for
    from diffgpu.driver.compiler import has_nvptx
    from diffgpu.runtime.args import infer_signature
    if not has_nvptx():
        pytest.skip("these MLIR bindings have no NVPTX backend")
    types = infer_signature(args).types
    facts = facts_for(args, types, "sm_90", grid, block)
    payload, _ = build_payload(kernel, types, "sm_90", facts=facts)
    return payload, types


def test_ptx_scratch_parameters_and_finish():
    """The entry takes the two scratch descriptors after the lean arrays; the
    descriptors predict the PTX parameters; the finish: an f64 add, a fence,
    a counter, and in the last block one f32 add to out."""
    from diffgpu.abi import SCRATCH_WORDS
    from diffgpu.lowering.gpu.nvvm import entry_param_count, lean_param_count
    payload, _ = _gpu_payload(sumsq, (np.zeros(1, np.float32), np.zeros(1 << 16, np.float32)),
                              (256, 1, 1), (256, 1, 1))
    assert payload["abi"][-1] == ["scratch", 1] and payload["lean"] == [True, True]
    got = entry_param_count(payload["ptx"], "sumsq")
    assert got == lean_param_count(payload["abi"], payload["lean"]) == 2 + 2 + SCRATCH_WORDS
    entry = payload["ptx"][payload["ptx"].index(".visible .entry"):]
    assert entry.count("fence.acq_rel.gpu") >= 2 and "atom.global.add.u64" in entry
    assert entry.count("atom.global.add.f32") == 1  # once per launch, by the last block
    # per path (block sum, per-thread fallback): the block's add, the group's
    # take (read, zero) and move to the top, the top's take: a constant
    # number, not one per group (64 results held at once took 255 registers)
    assert 0 < entry.count("atom.global.add.f64") <= 12 and ".local" not in entry


def test_ptx_generic_program_has_no_scratch():
    """Without launch facts (dg.jax's custom call, aot) no scratch: the
    per-block f32 add stays."""
    from diffgpu.driver.launch import build_payload
    from diffgpu.driver.compiler import has_nvptx
    from diffgpu.runtime.args import infer_signature
    if not has_nvptx():
        pytest.skip("these MLIR bindings have no NVPTX backend")
    args = (np.zeros(1, np.float32), np.zeros(64, np.float32))
    payload, _ = build_payload(sumsq, infer_signature(args).types, "sm_90")
    assert payload["abi"][-1][0] == "memref" and "fence" not in payload["ptx"]


def test_gpu_scratch_per_stream(monkeypatch):
    """The runtime appends the scratch of the current stream: one buffer per
    stream, reused by that stream's launches, never shared by two."""
    import os
    import sys
    import types as T
    from diffgpu.abi import SCRATCH_WORDS
    from diffgpu.lowering.gpu.nvvm import entry_param_count
    from diffgpu.runtime import gpu
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "bench"))
    import launch_overhead as LO
    host = (np.zeros(1, np.float32), np.zeros(1 << 12, np.float32))
    payload, types = _gpu_payload(sumsq, host, (16, 1, 1), (256, 1, 1))
    calls = LO.install_standin()
    seen = []
    try:
        cupy = sys.modules["cupy"]
        streams = [T.SimpleNamespace(ptr=p, synchronize=lambda: None) for p in (0, 77)]
        current = [streams[0]]
        monkeypatch.setattr(cupy.cuda, "get_current_stream", lambda: current[0], raising=False)
        prog = gpu.GpuProgram(payload["ptx"], payload["entry"], payload["abi"],
                              payload.get("lean"))
        monkeypatch.setattr(gpu, "_load_function", lambda *a: lambda g, b, args: (
            calls.append(len(args)), seen.append(args[-SCRATCH_WORDS:])))
        dev = [LO.StandinArray(a) for a in host]
        for s in (0, 0, 1, 1, 0):
            current[0] = streams[s]
            prog.launch(dev, types, (1, 1, 1), (256, 1, 1))
    finally:
        sys.modules.pop("cupy", None)
    assert calls == [entry_param_count(payload["ptx"], "sumsq")] * 5
    ptrs = [int(p[0]) for p in seen]  # the accumulator's address (numpy scalars here)
    assert ptrs[0] == ptrs[1] == ptrs[4] != ptrs[2] == ptrs[3]
    assert len(prog.scratch._params) == 2  # one buffer per stream, made once


def test_gpu_launch_path_passes_the_scratch(monkeypatch):
    """Through kernel[grid, block] (full path, then the fast path): every
    call of the entry gets the PTX entry's parameter count, scratch included,
    and a kernel without scratch gets no wrapper around its function."""
    import os
    import sys
    from diffgpu.lowering.gpu.nvvm import entry_param_count
    from diffgpu.driver.compiler import has_nvptx
    from diffgpu.runtime import gpu
    if not has_nvptx():
        pytest.skip("these MLIR bindings have no NVPTX backend")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "bench"))
    import launch_overhead as LO
    calls = LO.install_standin()
    monkeypatch.setattr(gpu, "_chips", {0: "sm_90"})
    try:
        out, x = LO.StandinArray(np.zeros(1, np.float32)), LO.StandinArray(hashed(1 << 14))
        for _ in range(3):
            sumsq[(1 << 14) // 256, 256](out, x)
        y = LO.StandinArray(np.zeros(1 << 14, np.float32))
        w = LO.StandinArray(np.ones(1, np.float32))
        for _ in range(2):
            scale[(1 << 14) // 256, 256](y, w, x)
    finally:
        sys.modules.pop("cupy", None)
    (prog,) = [p for p in sumsq._programs.values() if p.kind == "gpu"]
    (plain,) = [p for p in scale._programs.values() if p.kind == "gpu"]
    assert prog.gpu.scratch is not None and plain.gpu.scratch is None
    assert calls == [entry_param_count(prog.gpu.ptx, "sumsq")] * 3 + \
        [entry_param_count(plain.gpu.ptx, "scale")] * 2
    assert plain.gpu._fns[0].__class__.__name__ == "Function"  # the stand-in's own
