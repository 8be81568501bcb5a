"""4-d array kernels (test_rank4.py): indexing, shape, atomics, derivatives."""
import numpy as np

import diffgpu as dg


@dg.kernel
def scale4(A, B, s):
    """B[i, j, k, l] = s * A[i, j, k, l]**2 + l, over A's whole shape (one
    thread per i, loops over j, k, l)."""
    i = dg.global_id()
    if i < A.shape[0]:
        for j in range(A.shape[1]):
            for k in range(A.shape[2]):
                for l in range(A.shape[3]):
                    B[i, j, k, l] = s * A[i, j, k, l] * A[i, j, k, l] + l


@dg.kernel
def sum_last4(A, out):
    """out[i, j, k, 0] += sum over l of sin(A[i, j, k, l]) (atomics with 4 indices)."""
    i = dg.global_id()
    if i < A.shape[0]:
        for j in range(A.shape[1]):
            for k in range(A.shape[2]):
                for l in range(A.shape[3]):
                    dg.atomic_add(out, (i, j, k, 0), dg.sin(A[i, j, k, l]))


@dg.kernel
def d_scale4(A, dA, B, dB, s):
    dg.autodiff(scale4, dg.Duplicated(A, dA), dg.Duplicated(B, dB), s)


@dg.kernel
def rank_info(A, out):
    out[0] = A.ndim
    out[1] = A.shape[3]
    out[2] = len(A)


@dg.kernel
def shared4(A, out):
    """A 4-d shared array: each thread writes its slot, thread 0 sums them."""
    S = dg.shared_array((2, 2, 2, 2), np.float32)
    t = dg.thread_id()
    S[t // 8, (t // 4) % 2, (t // 2) % 2, t % 2] = A[t]
    dg.syncthreads()
    if t == 0:
        acc = 0.0
        for i in range(16):
            acc += S[i // 8, (i // 4) % 2, (i // 2) % 2, i % 2] * (i + 1)
        out[0] = acc
