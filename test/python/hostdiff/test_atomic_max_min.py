"""dg.vjp / dg.jvp of launches using dg.atomic_max / dg.atomic_min: the
cotangent of each final element goes to exactly one contribution, the one
that won (the original value on ties with it), the tangent of the final
element is the winner's (docs/collectives.md, atomic max and min). Against
numpy references of the winners and float64 central finite differences;
the in-kernel derivatives stay a CompileError."""
import importlib.util

import numpy as np
import pytest

import diffgpu as dg
import kernels_rmw as K

TOL = {np.float64: 1e-12, np.float32: 1e-5}


def _x(dt, n, seed=0):
    """n well separated values (no ties): 0.37 apart, shuffled."""
    rs = np.random.RandomState(seed)
    return (rs.permutation(n) * 0.37 - n * 0.15).astype(dt)


def _grads(kind, A0, X, cot, dv):
    """numpy reference: (dX, dA) of sum(cot * A_final), dv = dv/dx."""
    idx = np.arange(len(X)) % A0.size
    vals = X * X if kind == "max" else X * X * X
    final, win = K.winners(kind, A0, idx, vals)
    dX = np.zeros_like(X)
    for i, t in enumerate(win.ravel()):
        if t >= 0:
            dX[t] = cot.ravel()[i] * dv[t]
    return final, dX, np.where(win < 0, cot, 0)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_vjp_distinct_values(kind, dt):
    X = _x(dt, 40)
    k = K.max_k if kind == "max" else K.min_k
    A0 = np.array([0.0, -50.0, 50.0, 1e9 if kind == "min" else -1e9], dt)
    A0[0] = 1e9 if kind == "max" else -1e9  # the original value wins element 0
    cot = np.array([1.5, -2.0, 3.0, 0.5], dt)
    dv = 2 * X if kind == "max" else 3 * X * X
    final, dX, dA = _grads(kind, A0, X, cot, dv)
    A = A0.copy()
    g = dg.vjp(k[2, 32], A, X, cotangents={"A": cot})
    np.testing.assert_allclose(g["X"], dX, rtol=TOL[dt], atol=TOL[dt])
    np.testing.assert_array_equal(g["A"], dA)
    assert g["A"][0] == cot[0] and (g["X"][np.arange(40) % 4 == 0] == 0).all()
    np.testing.assert_array_equal(A, A0)  # outputs=False: the caller's arrays unchanged


@pytest.mark.parametrize("kind", ["max", "min"])
def test_vjp_against_finite_differences(kind):
    X = _x(np.float64, 24, seed=3)
    k = K.max_k if kind == "max" else K.min_k
    A0 = np.array([-100.0, 100.0, 0.0]) * (1 if kind == "max" else -1)  # 100 wins
    cot = np.array([0.7, -1.3, 2.1])
    g = dg.vjp(k[1, 24], A0.copy(), X, cotangents={"A": cot})["X"]
    h = 1e-6
    fd = np.zeros_like(X)
    for j in range(len(X)):
        out = []
        for s in (h, -h):
            Xp, A = X.copy(), A0.copy()
            Xp[j] += s
            k[1, 24](A, Xp)
            out.append((cot * A).sum())
        fd[j] = (out[0] - out[1]) / (2 * h)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
    vals = X * X if kind == "max" else X * X * X
    _, win = K.winners(kind, A0, np.arange(24) % 3, vals)
    assert np.count_nonzero(g) == (win >= 0).sum() >= 1  # one winner per element


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_ties_one_contribution_gets_the_cotangent(dt):
    """Equal contributions: exactly one thread gets the whole cotangent; on
    the CPU in reverse mode the lowest global thread index."""
    X = np.array([2.0, -3.0, 2.0, 1.0, -2.0, 3.0, 2.0, 3.0], dt)  # X*X: ties 4, 9
    cot = np.array([5.0, 7.0], dt)
    g = dg.vjp(K.max_k[2, 4], np.zeros(2, dt), X, cotangents={"A": cot})
    # element 0: t = 0, 2, 4, 6 -> 4, 4, 4, 4; element 1: t = 1, 3, 5, 7 -> 9, 1, 9, 9
    want = np.zeros(8, dt)
    want[0] = 5.0 * 2 * X[0]
    want[1] = 7.0 * 2 * X[1]
    np.testing.assert_array_equal(g["X"], want)
    np.testing.assert_array_equal(g["A"], [0, 0])


def test_tie_with_the_original_value_goes_to_the_original():
    X = np.array([1.0, 2.0, -2.0, 0.5])  # X*X: 1, 4, 4, 0.25 into A[0]
    g = dg.vjp(K.max_k[1, 4], np.array([4.0]), X, cotangents={"A": np.array([3.0])})
    np.testing.assert_array_equal(g["X"], np.zeros(4))
    np.testing.assert_array_equal(g["A"], [3.0])


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_two_dimensional_index(dt):
    X = _x(dt, 30, seed=7)
    A0 = np.full((2, 3), -1e9, dt)
    A0[1, 2] = 1e9  # the original wins there
    cot = np.arange(1.0, 7.0, dtype=dt).reshape(2, 3)
    g = dg.vjp(K.max2d_k[1, 30], A0.copy(), X, cotangents={"A": cot})
    t = np.arange(30)
    r, c = t % 2, (t // 2) % 3
    want = np.zeros_like(X)
    for i in range(2):
        for j in range(3):
            if (i, j) == (1, 2):
                continue
            sel = np.where((r == i) & (c == j))[0]
            w = sel[np.argmax(X[sel])]
            want[w] = cot[i, j] * 3.0
    np.testing.assert_allclose(g["X"], want, rtol=TOL[dt])
    np.testing.assert_array_equal(g["A"], np.where(A0 == 1e9, cot, 0))
    tan = dg.jvp(K.max2d_k[1, 30], A0.copy(), X,
                 tangents={"A": np.ones((2, 3), dt), "X": np.arange(30, dtype=dt)})["A"]
    want_t = np.ones((2, 3), dt)
    for i in range(2):
        for j in range(3):
            if (i, j) != (1, 2):
                sel = np.where((r == i) & (c == j))[0]
                want_t[i, j] = 3.0 * sel[np.argmax(X[sel])]
    np.testing.assert_allclose(tan, want_t, rtol=TOL[dt])


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_jvp_is_the_winners_tangent(kind, dt):
    X = _x(dt, 40, seed=1)
    k = K.max_k if kind == "max" else K.min_k
    big = 1e9 if kind == "max" else -1e9
    A0 = np.array([big, -big, -big, -big], dt)
    tA = np.array([4.0, 5.0, 6.0, 7.0], dt)
    tX = np.random.RandomState(2).randn(40).astype(dt)
    dv = 2 * X if kind == "max" else 3 * X * X
    idx = np.arange(40) % 4
    vals = X * X if kind == "max" else X * X * X
    _, win = K.winners(kind, A0, idx, vals)
    want = np.where(win < 0, tA, dv[np.maximum(win, 0)] * tX[np.maximum(win, 0)])
    t = dg.jvp(k[2, 32], A0.copy(), X, tangents={"A": tA, "X": tX})["A"]
    np.testing.assert_allclose(t, want, rtol=TOL[dt], atol=TOL[dt])
    # <cot, J t> == <J^T cot, t>
    cot = np.array([0.5, -1.0, 2.0, 3.0], dt)
    g = dg.vjp(k[2, 32], A0.copy(), X, cotangents={"A": cot})
    lhs = float((cot * t).sum())
    rhs = float((g["X"] * tX).sum() + (g["A"] * tA).sum())
    assert abs(lhs - rhs) <= 1e-4 * max(1.0, abs(lhs))


def test_jvp_ties_one_tangent():
    """Tied contributions: the tangent is exactly one of theirs, on the CPU
    the lowest thread index's, as in reverse mode (the two stay transposes:
    <cot, J t> = <J^T cot, t> with ties)."""
    X = np.array([2.0, 3.0, -2.0, -3.0, 2.0, 1.0])  # X*X: A[0] 4, 4, 4; A[1] 9, 9, 1
    tX = np.array([1.0, 10.0, 100.0, 1000.0, 1e4, 1e5])
    tA = np.array([7.0, 8.0])
    t = dg.jvp(K.max_k[1, 6], np.zeros(2), X, tangents={"A": tA, "X": tX})["A"]
    np.testing.assert_array_equal(t, [2 * X[0] * tX[0], 2 * X[1] * tX[1]])
    cot = np.array([0.5, -1.5])
    g = dg.vjp(K.max_k[1, 6], np.zeros(2), X, cotangents={"A": cot})
    assert (cot * t).sum() == (g["X"] * tX).sum() + (g["A"] * tA).sum()


def test_outputs_and_other_written_arrays():
    """outputs=True: the caller's arrays end as one launch leaves them (Y
    added to once, A the maximum), the gradients as without."""
    X = _x(np.float64, 16, seed=4)
    A, Y = np.full(2, -1e9), np.ones(16)
    cA, cY = np.array([2.0, 3.0]), np.linspace(1, 2, 16)
    g0 = dg.vjp(K.max_and_store_k[1, 16], A.copy(), Y.copy(), X,
                cotangents={"A": cA, "Y": cY})
    g = dg.vjp(K.max_and_store_k[1, 16], A, Y, X, cotangents={"A": cA, "Y": cY},
               outputs=True)
    np.testing.assert_array_equal(Y, 1 + 2 * X)
    np.testing.assert_array_equal(A, [X[0::2].max(), X[1::2].max()])
    for n in ("X", "A", "Y"):
        np.testing.assert_array_equal(g[n], g0[n])
    want = 2 * cY
    want[2 * np.argmax(X[0::2])] += 2.0
    want[2 * np.argmax(X[1::2]) + 1] += 3.0
    np.testing.assert_allclose(g["X"], want, rtol=1e-12)
    A, Y = np.full(2, -1e9), np.ones(16)
    dg.jvp(K.max_and_store_k[1, 16], A, Y, X, outputs=True,
           tangents={"A": np.zeros(2), "Y": np.zeros(16), "X": np.ones(16)})
    np.testing.assert_array_equal(Y, 1 + 2 * X)
    np.testing.assert_array_equal(A, [X[0::2].max(), X[1::2].max()])


def test_replayed_call_runs_the_forward_again():
    """A repeated call with the same arrays (a kept recipe) computes the
    final values of the new data, not the first call's."""
    X = _x(np.float64, 12, seed=5)
    A0, cot = np.full(3, -1e9), np.array([1.0, 2.0, 3.0])
    for _ in range(3):
        g = dg.vjp(K.max_k[1, 12], A0, X, cotangents={"A": cot})["X"]
        _, want, _ = _grads("max", A0, X, cot, 2 * X)
        np.testing.assert_allclose(g, want, rtol=1e-12)
        X[:] = X[::-1] * 1.1  # new winners, same memory


def test_in_kernel_autodiff_is_refused():
    with pytest.raises(dg.CompileError) as e:
        K.inkernel_k[1, 4](np.zeros(1), np.ones(1), np.ones(4))
    msg = str(e.value)
    assert "dg.atomic_max" in msg and "no derivative here" in msg
    assert "dg.vjp / dg.jvp" in msg


def test_old_value_used_is_refused():
    @dg.kernel
    def used(A, Y, X):
        t = dg.global_id(0)
        Y[t] = dg.atomic_max(A, 0, X[t])

    with pytest.raises(dg.CompileError) as e:
        dg.vjp(used[1, 4], np.zeros(1), np.zeros(4), np.ones(4),
               cotangents={"A": np.ones(1), "Y": np.ones(4)})
    assert "old value returned by dg.atomic_max" in str(e.value)


def test_race_checker_sees_no_race():
    """The derivative program only reads the final values (its forward
    atomics are dropped) and exchanges the shadow atomically."""
    X = _x(np.float64, 8, seed=6)
    with dg.racecheck():
        g = dg.vjp(K.max_k[2, 4], np.zeros(3), X, cotangents={"A": np.ones(3)})
        t = dg.jvp(K.max_k[2, 4], np.zeros(3), X, tangents={"A": np.ones(3), "X": np.ones(8)})
    _, want, _ = _grads("max", np.zeros(3), X, np.ones(3), 2 * X)
    np.testing.assert_allclose(g["X"], want, rtol=1e-12)
    assert np.count_nonzero(t["A"] != 1.0) == np.count_nonzero(want)


def test_constant_contributions_still_consume_the_cotangent():
    """X held constant: where one of its values won, the original value's
    gradient is 0 (the final value does not depend on it)."""
    X = np.array([3.0, -1.0, 0.5, -2.0])  # X*X: A[0] 9, 0.25; A[1] 1, 4
    A0 = np.array([20.0, 0.0])
    g = dg.vjp(K.max_k[1, 4], A0, dg.Const(X), cotangents={"A": np.array([5.0, 6.0])})
    np.testing.assert_array_equal(g["A"], [5.0, 0.0])
    t = dg.jvp(K.max_k[1, 4], A0, dg.Const(X), tangents={"A": np.array([5.0, 6.0])})
    np.testing.assert_array_equal(t["A"], [5.0, 0.0])


def test_tape_gradient_through_two_launches():
    """dg.Tape: two launches into the same array; the second one's equal
    values tie with what the first left, so the first launch's winners
    keep the cotangent."""
    X = _x(np.float64, 9, seed=8)
    A = np.array([-50.0, -50.0, 50.0])
    with dg.Tape() as tape:
        K.max_k[1, 9](A, X)
        K.max_k[1, 9](A, X)
    cot = np.array([1.0, 2.0, 3.0])
    gX, gA = tape.gradient(A, [X, A], cotangents=cot)
    _, want, wantA = _grads("max", np.array([-50.0, -50.0, 50.0]), X, cot, 2 * X)
    np.testing.assert_allclose(gX, want, rtol=1e-12)  # once: the second launch's tie lost
    np.testing.assert_array_equal(gA, wantA)


def _ptx_atoms(mode):
    from diffgpu.driver import compiler
    from diffgpu.driver.launch import build_module
    from diffgpu.runtime.args import infer_signature

    sig = infer_signature([np.zeros(3, np.float32), np.ones(8, np.float32)],
                          K.max_k.arg_names, "max_k")
    src = build_module(K.max_k, sig.types, "sm_90", diff=(mode, ("rmw", "dup")))
    ptx = compiler.compile(src.text, "sm_90", "ptx").text
    return [line.split()[0] for line in ptx.splitlines() if line.strip().startswith("atom")]


def test_sm90_ptx():
    """The derivative programs for sm_90: no compare-and-swap loop (the
    forward's atomic max on the final values is dropped); reverse one
    exchange of the cotangent (and dX's adds), forward an exchange and the
    one putting a number back."""
    rev, fwd = _ptx_atoms("reverse"), _ptx_atoms("forward")
    assert rev.count("atom.global.exch.b32") == 1 and not any(".cas." in a for a in rev)
    assert all(a in ("atom.global.exch.b32", "atom.global.add.f32") for a in rev)
    assert fwd == ["atom.global.exch.b32"] * 2


#: the GPU tests below compile as they go (the CPU's program and the GPU's); on
#: a GPU machine without MLIR the GPU check's "rmw" cases cover the same vjp
HAS_MLIR = importlib.util.find_spec("mlir") is not None
needs_mlir = pytest.mark.skipif(not HAS_MLIR, reason="compiles at run time: needs MLIR")


@pytest.mark.gpu
@needs_mlir
@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_gpu_equals_cpu(kind, dt):
    """Distinct values over 8 blocks into 5 elements: the GPU's vjp and jvp
    equal the CPU's."""
    import cupy
    k = K.max_k if kind == "max" else K.min_k
    big = 1e9 if kind == "max" else -1e9
    A0 = np.full(5, -big, dt)
    A0[0] = big
    X = _x(dt, 1024, seed=9)
    cot = np.random.RandomState(1).randn(5).astype(dt)
    tX = np.random.RandomState(2).randn(1024).astype(dt)
    tA = np.arange(5, dtype=dt)
    g = dg.vjp(k[8, 128], A0, X, cotangents={"A": cot})
    gg = dg.vjp(k[8, 128], cupy.asarray(A0), cupy.asarray(X), cotangents={"A": cupy.asarray(cot)})
    t = dg.jvp(k[8, 128], A0, X, tangents={"A": tA, "X": tX})["A"]
    tg = dg.jvp(k[8, 128], cupy.asarray(A0), cupy.asarray(X),
                tangents={"A": cupy.asarray(tA), "X": cupy.asarray(tX)})["A"]
    np.testing.assert_allclose(cupy.asnumpy(gg["X"]), g["X"], rtol=TOL[dt], atol=TOL[dt])
    np.testing.assert_array_equal(cupy.asnumpy(gg["A"]), g["A"])
    np.testing.assert_allclose(cupy.asnumpy(tg), t, rtol=TOL[dt], atol=TOL[dt])


@pytest.mark.gpu
@needs_mlir
def test_gpu_ties_exactly_one():
    """Every thread of 16 blocks gives the same value to one element: on the
    GPU exactly one of them (any) gets the whole cotangent / gives its
    tangent."""
    import cupy
    n = 16 * 256
    X = cupy.full(n, 2.0, cupy.float32)
    g = dg.vjp(K.max_k[16, 256], cupy.zeros(1, cupy.float32), X,
               cotangents={"A": cupy.full(1, 3.0, cupy.float32)})["X"]
    g = cupy.asnumpy(g)
    assert np.count_nonzero(g) == 1 and g.sum() == 3.0 * 4.0
    tX = cupy.arange(n, dtype=cupy.float32)
    t = dg.jvp(K.max_k[16, 256], cupy.zeros(1, cupy.float32), X,
               tangents={"A": cupy.zeros(1, cupy.float32), "X": tX})["A"]
    v = float(cupy.asnumpy(t)[0]) / 4.0
    assert v == int(v) and 0 <= v < n


@dg.func
def _put_max(A, v):
    dg.atomic_max(A, 0, v)


@dg.kernel
def _through_function(A, X):
    t = dg.global_id(0)
    _put_max(A, X[t])


@dg.kernel
def _max_and_add(A, X):
    t = dg.global_id(0)
    dg.atomic_max(A, 0, X[t])
    dg.atomic_add(A, 1, X[t])


@pytest.mark.parametrize("call", ["host autodiff", "host fwddiff", "through a function",
                                  "max and add"])
def test_refused_where_the_winner_is_unknown(call):
    """A CompileError naming dg.atomic_max, and no array changed."""
    A, X, dA = np.zeros(2), np.ones(4), np.ones(2)
    with pytest.raises(dg.CompileError) as e:
        if call == "host autodiff":
            dg.autodiff(K.max_k[1, 4], dg.Duplicated(A, dA), dg.Duplicated(X, np.zeros(4)))
        elif call == "host fwddiff":
            dg.fwddiff(K.max_k[1, 4], dg.Duplicated(A, dA), dg.Duplicated(X, np.ones(4)))
        elif call == "through a function":
            dg.vjp(_through_function[1, 4], A, X, cotangents={"A": dA})
        else:
            dg.vjp(_max_and_add[1, 4], A, X, cotangents={"A": dA})
    msg = str(e.value)
    assert "dg.atomic_max (diffgpu.atomic_rmw)" in msg and "no derivative here" in msg, msg
    assert "only by dg.atomic_max, or only by dg.atomic_min" in msg
    assert (A == 0).all() and (dA == 1).all() and (X == 1).all()


@dg.kernel
def _count_max(A, C, X):
    t = dg.global_id(0)
    dg.atomic_max(A, 0, X[t])
    dg.atomic_add(C, 0, 1)


@dg.kernel
def _count_store(A, C, X):
    t = dg.global_id(0)
    A[t] = X[t]
    dg.atomic_add(C, 0, 1)


def test_the_forward_first_leaves_integer_arrays_alone():
    """The launch giving the final values runs on copies of integer arrays
    too: an integer array the kernel writes ends as after the dg.vjp / dg.jvp
    of a kernel without atomic max."""
    X = np.ones(4)
    want = np.zeros(1, np.int32)
    dg.vjp(_count_store[1, 4], np.zeros(4), want, X, cotangents={"A": np.ones(4)})
    for fn in ("vjp", "jvp"):
        C = np.zeros(1, np.int32)
        if fn == "vjp":
            dg.vjp(_count_max[1, 4], np.zeros(1), C, X, cotangents={"A": np.ones(1)})
        else:
            dg.jvp(_count_max[1, 4], np.zeros(1), C, X,
                   tangents={"A": np.ones(1), "X": np.ones(4)})
        np.testing.assert_array_equal(C, want)


def test_loop_and_two_arrays():
    """Contributions from a loop (the reverse replays it backwards) into a
    max array and a min array: one winner each, in both modes."""
    X = np.random.RandomState(0).permutation(32) * 0.1 - 1.6
    cx, cn = np.array([1.0, 2.0]), np.array([5.0])
    Mx, Mn = np.full(2, -1e9), np.full(1, 1e9)
    g = dg.vjp(K.loop_two_k[2, 4], Mx, Mn, X, cotangents={"Mx": cx, "Mn": cn})
    part = np.arange(32) % 4 % 2
    win = [np.where(part == e)[0][np.argmax(X[part == e] ** 2)] for e in range(2)]
    want = np.zeros(32)
    for e in range(2):
        want[win[e]] += cx[e] * 2 * X[win[e]]
    want[np.argmin(X)] += 5.0 * 3.0
    np.testing.assert_allclose(g["X"], want, rtol=1e-12)
    np.testing.assert_array_equal(g["Mx"], [0, 0])
    np.testing.assert_array_equal(g["Mn"], [0])
    tX = np.random.RandomState(1).randn(32)
    t = dg.jvp(K.loop_two_k[2, 4], Mx, Mn, X,
               tangents={"Mx": np.ones(2), "Mn": np.ones(1), "X": tX})
    np.testing.assert_allclose(t["Mx"], [2 * X[w] * tX[w] for w in win], rtol=1e-12)
    np.testing.assert_allclose(t["Mn"], [3 * tX[np.argmin(X)]], rtol=1e-12)


def test_loop_of_run_time_length_against_finite_differences():
    n = 6
    X = np.random.RandomState(0).randn(4 * n)
    A0, w = np.full(2, -1e9), np.array([1.0, 2.0])
    tX = np.random.RandomState(3).randn(4 * n)

    def loss(Xp):
        A = A0.copy()
        K.recurrence_k[1, 4](A, Xp, n)
        return A

    h = 1e-6
    fd = np.array([(w * (loss(X + h * e) - loss(X - h * e))).sum() / (2 * h)
                   for e in np.eye(4 * n)])
    g = dg.vjp(K.recurrence_k[1, 4], A0, X, n, cotangents={"A": w})["X"]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)
    t = dg.jvp(K.recurrence_k[1, 4], A0, X, n, tangents={"A": np.zeros(2), "X": tX})["A"]
    np.testing.assert_allclose(t, (loss(X + h * tX) - loss(X - h * tX)) / (2 * h),
                               rtol=1e-6, atol=1e-6)
