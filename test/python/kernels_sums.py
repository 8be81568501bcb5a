"""A sum of squares whose terms are made from the index (no input array to
ship to a GPU), and its float64 reference: test_atomics and
test_coarsen_reduce share it (defined once, imported)."""
import numpy as np

import diffgpu as dg


@dg.kernel
def sumsq_gen(out, n):  # terms made from the index: no input array to ship to a GPU
    i = dg.global_id(0)
    if i < n:
        k = (i * 2654435761) % 4294967296 // 65536  # a multiplicative hash, 16 bits
        v = np.float32(k) / np.float32(65536.0) + np.float32(0.5)
        dg.atomic_add(out, 0, v * v)


def sumsq_gen_ref(out, n):
    """float64 sum of the float32 squares sumsq_gen adds (one rounding each)."""
    k = np.arange(n, dtype=np.int64) * 2654435761 % 4294967296 // 65536
    v = k.astype(np.float32) / np.float32(65536.0) + np.float32(0.5)
    out[0] += np.sum((v * v).astype(np.float64))
