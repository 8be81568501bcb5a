"""On a GPU (skipped without CuPy and a device): a collective on a partial
warp and a heap tape larger than the malloc heap are LaunchErrors before
the launch, with device arrays, and the launches that fit run right."""
import numpy as np
import pytest

import diffgpu as dg
from diffgpu.runtime import gpu
from diffgpu.runtime import launch_checks as LC
from kernels_loop_tapes import scan_written_grad

pytestmark = pytest.mark.skipif(not gpu.available(), reason="needs CuPy and a GPU")


@dg.kernel
def warp_total(Y, X):
    i = dg.global_id(0)
    Y[i] = dg.warp_sum(X[i])


def test_partial_warps_refused_on_the_gpu():
    import cupy as cp

    X = cp.arange(64, dtype=cp.float32)
    Y = cp.zeros(64, cp.float32)
    warp_total[1, 64](Y, X)
    want = np.repeat([np.arange(32).sum(), np.arange(32, 64).sum()], 32)
    assert (cp.asnumpy(Y) == want).all()
    Y[:] = 5.0
    for _ in range(2):
        with pytest.raises(dg.LaunchError, match=r"kernel 'warp_total' uses dg.warp_sum.*"
                                                 r"block \(48, 1, 1\) has 48 threads"):
            warp_total[1, 48](Y[:48], X[:48])
    assert (cp.asnumpy(Y) == 5.0).all()


def test_a_heap_tape_larger_than_the_heap_is_refused_on_the_gpu():
    import cupy as cp

    heap, held = gpu.heap_room(0)
    per = LC.tape_bytes(4096, 128)  # 4096 trips: 8 * (4096 + 2048) bytes a thread
    if held * per <= heap:
        pytest.skip(f"the device holds {held} threads at once: {held * per} bytes fit the "
                    f"heap of {heap}")
    threads = min(held, -(-heap // per) * 2)  # twice what the heap takes
    blocks = -(-threads // 256)
    r = np.random.default_rng(0)
    a = cp.asarray(r.uniform(-1, 1, (blocks * 256, 4097)))
    x = cp.asarray(r.uniform(-1, 1, blocks * 256))
    da, dx = cp.zeros_like(a), cp.ones_like(x)
    before = cp.asnumpy(a)
    with pytest.raises(dg.LaunchError, match="kernel 'scan_written_grad': .* 4096 words"):
        scan_written_grad[blocks, 256](a, da, x, dx, 4096)
    assert (cp.asnumpy(a) == before).all() and not cp.asnumpy(da).any()
    small = 64  # threads: 64 x 49152 bytes = 3 MiB
    a2, da2 = a[:small].copy(), cp.zeros((small, 4097))
    x2, dx2 = x[:small].copy(), cp.ones(small)
    scan_written_grad[1, small](a2, da2, x2, dx2, 4096)
    ha, hda, hx, hdx = (cp.asnumpy(v) for v in (a[:small], cp.zeros((small, 4097)), x[:small],
                                                cp.ones(small)))
    scan_written_grad[1, small](ha, hda, hx, hdx, 4096)  # the CPU's, the same program
    np.testing.assert_allclose(cp.asnumpy(dx2), hdx, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cp.asnumpy(da2), hda, rtol=1e-10, atol=1e-12)
