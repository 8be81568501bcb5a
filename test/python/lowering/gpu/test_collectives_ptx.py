"""The collectives in sm_90 PTX (no GPU needed): shuffles and barriers
counted, every collective kernel of test/python/kernels_collectives.py
builds, atomic max/min become the right atomics."""
import re

import numpy as np
import pytest

import diffgpu as dg
import kernels_collectives as K


@dg.kernel
def _block_sum(X, Y):
    t = dg.thread_id(0)
    Y[t] = dg.block_sum(X[t])


@dg.kernel
def _warp_sum(X, Y):
    t = dg.thread_id(0)
    Y[t] = dg.warp_sum(X[t])


@dg.kernel
def _int_atomics(M, X):
    t = dg.global_id(0)
    dg.atomic_max(M, 0, X[t])
    dg.atomic_min(M, 1, X[t])


def _count(ptx, pattern):
    return len(re.findall(pattern, ptx))


def _ptx(kernel, *args):
    return kernel.ir(*args, stage="ptx", target="sm_90")


def test_block_sum_is_shuffles_and_one_barrier():
    """256 threads: 5 shuffles per warp, 5 over the warps' slots, 1 barrier
    (the kernel's last collective needs none after its read), no tree of 8
    barriers, and no code for blocks that are not whole warps (the runtime
    refuses those launches): a trap for them, 64 float32 slots of shared
    memory (256 bytes), no loop over a 1024-element staging array."""
    x = np.zeros(256, np.float32)
    ptx = _ptx(_block_sum, x, x.copy())
    assert _count(ptx, r"shfl\.sync\.bfly") == 10
    assert _count(ptx, r"bar\.sync") == 1
    assert _count(ptx, r"\btrap;") == 1
    assert re.findall(r"\.shared \.align \d+ \.b8 (\w+)\[(\d+)\]", ptx) == [
        ("__dg_warp_slots_f32", "256")]
    assert _count(ptx, r"ld\.shared") == 1 and _count(ptx, r"st\.shared") == 1


@dg.kernel
def _three_sums(X, Y):
    t = dg.thread_id(0)
    a = dg.block_sum(X[t])
    b = dg.block_max(X[t] - a)
    Y[t] = dg.block_sum(X[t] * b)


@dg.kernel
def _sums_in_loop(X, Y):
    t = dg.thread_id(0)
    s = X[t]
    for k in range(len(Y) // 256):  # a trip count the compiler does not know
        s = dg.block_sum(s) * 0.5
    Y[t] = s


def test_consecutive_block_collectives_alternate_slots():
    """Three block collectives in a row: one barrier each, their slots
    alternating between the two 32-element halves of the slot array (lit: lower-to-gpu/collectives.mlir); in a loop of unknown trip
    count the one collective keeps a barrier after its read (the next
    iteration's could overwrite the slots): 2 barriers."""
    x = np.zeros(256, np.float32)
    ptx = _ptx(_three_sums, x, x.copy())
    assert _count(ptx, r"shfl\.sync\.bfly") == 30
    assert _count(ptx, r"bar\.sync") == 3
    loop = _ptx(_sums_in_loop, x, np.zeros(512, np.float32))
    assert _count(loop, r"bar\.sync") == 2


def test_warp_sum_is_five_shuffles():
    x = np.zeros(64, np.float64)
    ptx = _ptx(_warp_sum, x, x.copy())
    assert _count(ptx, r"shfl\.sync\.bfly\.b32") == 10  # 5 per f64, in two 32-bit halves
    assert _count(ptx, r"bar\.sync") == 0 and ".shared" not in ptx


@pytest.mark.parametrize("name", sorted(K.OPS))
def test_every_collective_builds(name):
    x = np.zeros((1, 64), np.float32)
    ptx = _ptx(K.OPS[name], x, x.copy())
    assert _count(ptx, r"shfl\.sync") >= 1 and _count(ptx, r"\btrap;") == 1


def test_float_atomic_max_min_are_compare_and_swap_loops():
    ptx = _ptx(K.atomics_k, np.zeros(3, np.float32), np.zeros(64, np.float32))
    assert _count(ptx, r"max\.NaN\.f32") == 1 and _count(ptx, r"min\.NaN\.f32") == 1
    assert _count(ptx, r"atom\.[a-z_.]*cas\.b32") == 2


def test_integer_atomic_max_min():
    ptx = _ptx(_int_atomics, np.zeros(2, np.int32), np.zeros(64, np.int32))
    assert _count(ptx, r"atom\.global\.max\.s32") == 1
    assert _count(ptx, r"atom\.global\.min\.s32") == 1
