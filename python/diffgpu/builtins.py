"""In-kernel builtins: `dg.thread_id`, `dg.atomic_add`, `dg.exp`, ...

These are compiled by the frontend, which recognizes each by its
`__diffgpu_builtin__` tag (so `dg.exp`, `from diffgpu import exp` and the
`math` module's functions all work). Called from ordinary Python they raise a
clear error. Importing this never imports MLIR.
"""
from __future__ import annotations

_DOCS = {
    "thread_id": "thread_id(axis=0): index of the thread in its block along axis 0, 1, 2.",
    "block_id": "block_id(axis=0): index of the block in the grid.",
    "block_dim": "block_dim(axis=0): threads per block.",
    "grid_dim": "grid_dim(axis=0): blocks per grid.",
    "global_id": "global_id(axis=0): block_id(axis) * block_dim(axis) + thread_id(axis).",
    "atomic_add": "atomic_add(A, index, value): atomically A[index] += value; "
                  "returns the old value. index: an int or a tuple.",
    "shared_array": "shared_array(shape, dtype): a block-shared array of constant "
                    "shape (int or tuple) and numpy dtype.",
    "syncthreads": "syncthreads(): barrier for all threads of the block.",
    # collectives (docs/collectives.md): every thread of the warp / block calls them
    "warp_sum": "warp_sum(v): sum of v over the 32 lanes of the warp, in every lane.",
    "warp_max": "warp_max(v): maximum of v over the warp, in every lane.",
    "warp_min": "warp_min(v): minimum of v over the warp, in every lane.",
    "block_sum": "block_sum(v): sum of v over the block, in every thread.",
    "block_max": "block_max(v): maximum of v over the block, in every thread.",
    "block_min": "block_min(v): minimum of v over the block, in every thread.",
    "block_scan": "block_scan(v): inclusive prefix sum of v over the block's linear "
                  "thread index.",
    "shfl_xor": "shfl_xor(v, mask): v of lane (lane ^ mask); own v where that is no lane.",
    "shfl_up": "shfl_up(v, d): v of lane (lane - d), own v where lane < d.",
    "shfl_down": "shfl_down(v, d): v of lane (lane + d), own v where lane + d > 31.",
    "shfl_idx": "shfl_idx(v, lane): v of lane (lane & 31).",
    "atomic_max": "atomic_max(A, index, value): atomically A[index] = max(A[index], value); "
                  "returns the old value.",
    "atomic_min": "atomic_min(A, index, value): atomically A[index] = min(A[index], value); "
                  "returns the old value.",
    "atomic_sub": "atomic_sub(A, index, value): atomically A[index] -= value; returns the "
                  "old value.",
    "stop_gradient": "stop_gradient(v): v, held constant by differentiation (no adjoint "
                     "flows back through it, its tangent is 0), as JAX's lax.stop_gradient.",
}

#: math functions: name -> number of arguments
MATH_FUNCTIONS = {
    "exp": 1, "exp2": 1, "log": 1, "log2": 1, "log10": 1, "log1p": 1, "expm1": 1,
    "sin": 1, "cos": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1,
    "sinh": 1, "cosh": 1, "tanh": 1, "asinh": 1, "acosh": 1, "atanh": 1,
    "sqrt": 1, "rsqrt": 1, "cbrt": 1, "erf": 1, "erfc": 1,
    "floor": 1, "ceil": 1, "trunc": 1, "fabs": 1,
    "pow": 2, "atan2": 2, "copysign": 2, "fma": 3,
}

#: scalar builtins with their own lowering (frontend/scalar_builtins.py) -> doc
SCALAR_FUNCTIONS = {
    "sign": "sign(x): -1 if x < 0, else 1 (as in Warp; np.sign gives 0 at 0). "
            "Derivative 0.",
    "step": "step(x): 1 if x < 0, else 0 (as in Warp). Derivative 0.",
    "clamp": "clamp(x, lo, hi): min(max(lo, x), hi); the gradient goes to the "
             "operand that is returned (x on ties).",
    "lerp": "lerp(a, b, t): a * (1 - t) + b * t.",
    "smoothstep": "smoothstep(e0, e1, x): t = clamp((x - e0) / (e1 - e0), 0, 1), "
                  "then t * t * (3 - 2 * t).",
    "frac": "frac(x): x - trunc(x), the fractional part with the sign of x. "
            "Derivative 1.",
    "rint": "rint(x): the nearest integer as a float, ties to even. Derivative 0.",
    "mod": "mod(a, b): remainder of truncated division, with the sign of a (C fmod; "
           "Python's % floors instead).",
    "erfinv": "erfinv(x): inverse error function on [-1, 1]; derivative "
              "sqrt(pi)/2 * exp(erfinv(x)**2).",
    "erfcinv": "erfcinv(x): inverse complementary error function on [0, 2]; "
               "derivative -sqrt(pi)/2 * exp(erfcinv(x)**2).",
}

#: vector, matrix and quaternion builtins (frontend/vectors.py, vector_builtins.py)
VECTOR_FUNCTIONS = {
    **{f"{k}": f"{k}(...): a {k} value (docs/vectors.md) from its components, "
                "rows, or nothing (zeros)" for k in ("vec2", "vec3", "vec4", "mat22",
                                                      "mat33", "mat44", "quat")},
    **{f"load_{k}": f"load_{k}(A, index): the {k} in the last axes of A at index"
       for k in ("vec2", "vec3", "vec4", "mat22", "mat33", "mat44", "quat")},
    "store": "store(A, index, v): write vector/matrix v into the last axes of A at index",
    "identity": "identity(n): the n x n identity matrix (n = 2, 3, 4)",
    "quat_identity": "quat_identity(): the quaternion (0, 0, 0, 1)",
    "dot": "dot(a, b): sum of the products of the components",
    "cross": "cross(a, b): cross product of two vec3",
    "length": "length(v): sqrt(dot(v, v)); 0 with gradient 0 at v = 0",
    "length_sq": "length_sq(v): dot(v, v)",
    "normalize": "normalize(v): v / length(v); the zero vector (gradient 0) at v = 0",
    "outer": "outer(a, b): the matrix a[i] * b[j]",
    "transpose": "transpose(m): the transposed matrix",
    "determinant": "determinant(m): determinant of a square matrix",
    "inverse": "inverse(m): inverse of a square matrix; zeros where it is singular",
    "trace": "trace(m): sum of the diagonal",
    "skew": "skew(v): the matrix of the cross product with vec3 v",
    "quat_mul": "quat_mul(a, b): the quaternion product",
    "quat_rotate": "quat_rotate(q, v): vec3 v rotated by unit quaternion q",
    "quat_rotate_inv": "quat_rotate_inv(q, v): vec3 v rotated by the inverse of q",
    "quat_inverse": "quat_inverse(q): the conjugate (-x, -y, -z, w) of q",
    "quat_from_axis_angle": "quat_from_axis_angle(axis, angle): rotation by angle about "
                            "the (unit) vec3 axis",
    "quat_to_matrix": "quat_to_matrix(q): the rotation matrix of unit quaternion q",
}


def _make(name: str, doc: str):
    def builtin(*args, **kwargs):
        raise RuntimeError(
            f"diffgpu.{name}() can only be used inside a @dg.kernel or @dg.func "
            "function that diffgpu compiles")
    builtin.__name__ = builtin.__qualname__ = name
    builtin.__doc__ = doc
    builtin.__module__ = __name__
    builtin.__diffgpu_builtin__ = name
    return builtin


for _name, _doc in _DOCS.items():
    globals()[_name] = _make(_name, _doc)
for _name, _doc in SCALAR_FUNCTIONS.items():
    globals()[_name] = _make(_name, _doc)
for _name, _doc in VECTOR_FUNCTIONS.items():
    globals()[_name] = _make(_name, _doc)
for _name, _n in MATH_FUNCTIONS.items():
    globals()[_name] = _make(_name, f"{_name}: elementwise math on scalars "
                                    f"({_n} argument{'s' if _n > 1 else ''}).")

__all__ = list(_DOCS) + list(SCALAR_FUNCTIONS) + list(VECTOR_FUNCTIONS) + list(MATH_FUNCTIONS)
