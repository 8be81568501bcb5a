"""Kernels of the scalar builtins' tests: `k_<name>` computes
Y[i] = <builtin>(X0[i], ...) for each builtin of BUILTINS (a module of its
own: kernels are compiled from their source file)."""
import numpy as np

import diffgpu as dg


@dg.kernel
def k_sign(X0, Y):
    i = dg.global_id()
    Y[i] = dg.sign(X0[i])


@dg.kernel
def k_step(X0, Y):
    i = dg.global_id()
    Y[i] = dg.step(X0[i])


@dg.kernel
def k_clamp(X0, X1, X2, Y):
    i = dg.global_id()
    Y[i] = dg.clamp(X0[i], X1[i], X2[i])


@dg.kernel
def k_lerp(X0, X1, X2, Y):
    i = dg.global_id()
    Y[i] = dg.lerp(X0[i], X1[i], X2[i])


@dg.kernel
def k_smoothstep(X0, X1, X2, Y):
    i = dg.global_id()
    Y[i] = dg.smoothstep(X0[i], X1[i], X2[i])


@dg.kernel
def k_frac(X0, Y):
    i = dg.global_id()
    Y[i] = dg.frac(X0[i])


@dg.kernel
def k_rint(X0, Y):
    i = dg.global_id()
    Y[i] = dg.rint(X0[i])


@dg.kernel
def k_mod(X0, X1, Y):
    i = dg.global_id()
    Y[i] = dg.mod(X0[i], X1[i])


@dg.kernel
def k_erfinv(X0, Y):
    i = dg.global_id()
    Y[i] = dg.erfinv(X0[i])


@dg.kernel
def k_erfcinv(X0, Y):
    i = dg.global_id()
    Y[i] = dg.erfcinv(X0[i])


@dg.kernel
def k_np_sign(X0, Y):
    i = dg.global_id()
    Y[i] = np.sign(X0[i])


@dg.kernel
def k_np_clip(X0, X1, X2, Y):
    i = dg.global_id()
    Y[i] = np.clip(X0[i], X1[i], X2[i])


@dg.kernel
def k_np_rint(X0, Y):
    i = dg.global_id()
    Y[i] = np.rint(X0[i])


@dg.kernel
def k_np_fmod(X0, X1, Y):
    i = dg.global_id()
    Y[i] = np.fmod(X0[i], X1[i])


@dg.kernel
def k_int_builtins(A, B, Y):
    """Integer arguments keep their type: sign, step, clamp, mod (C's %)."""
    i = dg.global_id()
    Y[i, 0] = dg.sign(A[i])
    Y[i, 1] = dg.step(A[i])
    Y[i, 2] = dg.clamp(A[i], -3, 4)
    Y[i, 3] = dg.mod(A[i], B[i])
    Y[i, 4] = np.sign(A[i])
    Y[i, 5] = np.clip(A[i], -3, 4)


@dg.kernel
def k_clip_one_bound(X, Y):
    i = dg.global_id()
    Y[i, 0] = np.clip(X[i], None, 0.25)
    Y[i, 1] = np.clip(X[i], -0.25, None)


@dg.kernel
def k_special_grad(X, Y):
    """erfinv / erfcinv inside a larger expression, for dg.gradcheck."""
    i = dg.global_id()
    Y[i] = dg.erfinv(X[i] * 0.5) * dg.erfcinv(X[i] + 1.0) + dg.smoothstep(-1.0, 1.0, X[i])
