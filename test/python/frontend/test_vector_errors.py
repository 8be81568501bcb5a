"""Bad uses of vectors, matrices and quaternions: a dg.CompileError at the
user's line (file:line:col and a caret), never an internal error."""
import numpy as np
import pytest

import diffgpu as dg


def _compile_error(body: str, args=None, sig="out, x"):
    """Compile a kernel whose body is `body`; return the CompileError text."""
    src = f"def k({sig}):\n    i = dg.global_id(0)\n" + "".join(
        f"    {ln}\n" for ln in body.splitlines())
    ns = {"dg": dg, "np": np}
    import linecache
    name = f"<vec-errors-{abs(hash(src))}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    exec(compile(src, name, "exec"), ns)
    k = dg.kernel(ns["k"])
    args = args or (np.zeros((4, 3)), np.zeros((4, 3)))
    with pytest.raises(dg.CompileError) as e:
        k[1, 4](*args)
    text = str(e.value)
    assert "internal compiler error" not in text
    assert ":3:" in text or ":4:" in text or ":5:" in text, text  # the user's line
    assert "^" in text
    return text


CASES = [
    ("p = dg.load_vec3(x, i) + dg.load_vec2(x, i)", "shapes differ"),
    ("p = dg.load_vec3(x, i)\nq = dg.identity(3) @ dg.vec2(1.0, 2.0)", "shapes differ"),
    ("p = dg.load_vec3(x, i)\nq = p[i]", "constant integer index"),
    ("p = dg.load_vec3(x, i)\nq = p[3]", "out of range"),
    ("p = dg.load_vec3(x, i)\nout[i, 0] = p", "dg.store(A, index, v)"),
    ("p = dg.load_vec3(x, i)\nout[i] = p", "dg.store(A, index, v)"),
    ("p = dg.load_vec3(x, i)\ndg.store(out, (i, 0), p)", "needs 1 index(es)"),
    ("p = dg.load_vec3(x, i)\nq = p + 1.0", "no broadcasting"),
    ("p = dg.load_vec3(x, i)\nif p:\n    out[i, 0] = 1.0", "must be a number, got vec3"),
    ("p = dg.load_vec3(x, i)\nq = dg.exp(p)", "must be a number"),
    ("m = dg.load_mat33(x, i)", "needs 0 index(es) before them, got 1"),
    ("m = dg.load_mat33(out[0, 0], i)", "needs an array"),
    ("s = dg.shared_array(4, np.float64)\nm = dg.load_vec2(s, i)", "last axes of size 2"),
    ("p = dg.load_vec3(x)", "needs 1 index"),
    ("p = dg.load_vec3(x, i)\nq = p @ p", "'@' is not defined"),
    ("q = dg.quat_mul(dg.load_quat(x, i), dg.load_quat(x, i)) * dg.quat()", "quat_mul"),
    ("m = dg.identity(3) * dg.identity(3)", "'@' for the matrix product"),
    ("p = dg.cross(dg.vec2(1.0, 2.0), dg.vec2(1.0, 2.0))", "two vec3"),
    ("p = dg.vec3(1.0, 2.0)", "takes 3 components"),
    ("m = dg.mat22(dg.vec3(), dg.vec3())", "row vectors of 2"),
    ("d = dg.determinant(dg.outer(dg.vec3(), dg.vec2()))", "square matrix"),
    ("p = dg.dot(dg.vec3(), 2.0)", "must be a vec or quat"),
    ("p = dg.vec3()\nif i > 0:\n    p = dg.vec2()\nout[i, 0] = p[0]", "must keep its shape"),
    ("p = 1.0\nfor k in range(3):\n    p = dg.vec3()\nout[i, 0] = 1.0",
     "holds weak float64 on one path and a vec3 on another"),
    ("p = dg.vec3()\np[0] = dg.vec3()", "must be a number"),
    ("p = dg.load_vec3(x, i)\nq = p.w", "unknown attribute 'w'"),
    ("p = dg.vec3()\nq = p[0:2]", "slicing"),
    ("dg.store(out, i, dg.identity(2))", "size 2x2"),
    ("q = dg.vec3() if i > 0 else dg.vec2()", "values of the conditional expression differ"),
    ("q = dg.load_vec3(x, i) if i > 0 else 1.0", "values of the conditional expression differ"),
]


@pytest.mark.parametrize("body, message", CASES)
def test_error(body, message):
    if "size 2x2" in message:  # a static shape: a shared array
        body = ("s = dg.shared_array((4, 3, 3), np.float64)\n"
                "dg.store(s, i, dg.identity(2))")
        message = "last axes of size 2x2"
    text = _compile_error(body)
    assert message in text, text


def test_load_vec3_on_a_shorter_last_axis_is_out_of_bounds_on_the_cpu():
    """The last axis of a kernel argument is not known when compiling: on the
    CPU a load_vec3 of an (N, 2) array reads past the row and the launch
    reports it (dg.OutOfBoundsError); docs/vectors.md says so."""
    @dg.kernel
    def k(out, x):
        i = dg.global_id(0)
        if i < x.shape[0]:
            dg.store(out, i, dg.load_vec3(x, i))
    with pytest.raises(dg.OutOfBoundsError):
        k[1, 4](np.zeros((4, 3)), np.zeros((4, 2)))


def test_returning_vectors_of_different_shapes():
    @dg.func
    def f(s):
        if s > 0.0:
            return dg.vec3()
        return dg.vec2()

    @dg.kernel
    def k(out, s):
        out[0] = f(s)[0]
    with pytest.raises(dg.CompileError, match="different shapes|value\\(s\\)"):
        k[1, 1](np.zeros(1), 1.0)


def test_vector_result_of_an_in_kernel_autodiff():
    @dg.func
    def f(x):
        return dg.vec3(x, x, x)

    @dg.kernel
    def k(out, x):
        out[0] = dg.autodiff(f, dg.Active(x[0]))[0]
    with pytest.raises(dg.CompileError, match="returning one scalar"):
        k[1, 1](np.zeros(1), np.ones(1))


def test_in_kernel_fwddiff_tangent_of_another_shape():
    @dg.func
    def f(v):
        return dg.length(v)

    @dg.kernel
    def k(out, x):
        out[0] = dg.fwddiff(f, dg.Duplicated(dg.load_vec3(x, 0), dg.vec2()))
    with pytest.raises(dg.CompileError, match="shadow of argument 0 must be a vec3"):
        k[1, 1](np.zeros(1), np.ones((1, 3)))


def test_in_kernel_autodiff_vector_activity_checked():
    @dg.func
    def f(v):
        return dg.length(v)

    @dg.kernel
    def k(out, x):
        out[0] = dg.autodiff(f, dg.Duplicated(dg.load_vec3(x, 0), dg.vec3()))[0][0]
    with pytest.raises(dg.CompileError, match="Active in reverse mode"):
        k[1, 1](np.zeros(1), np.ones((1, 3)))
