"""`dg.vjp` of outputs stored once from exclusive branches (`if ...: y[i] = a
else: y[i] = b`): the output is `cot` and a stencil input read in either
branch is a gathered `grad` (lowering/autodiff/functional/access.py's
`stored_once`); the cases that must keep Enzyme's accumulating kinds (two
stores on one path, stores at different indices, a store in a loop) stay
right; the sm_90 PTX of the heat step's vjp has no atomic for its arrays."""
from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.errors import CompileError
from diffgpu.hostdiff import plan as P

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "tape"))
import tape_programs as T  # noqa: E402

RNG = np.random.default_rng(5)


def facts(launcher, *args):
    return P.Call(launcher, args, "access").facts


def fd(launch, args, out, wrt, g, eps=1e-6):
    """Float64 central differences of sum(g * args[out]) in args[wrt]
    (an array, or a float scalar); the output array starts as given."""
    def loss(a):
        a = [x.copy() if isinstance(x, np.ndarray) else x for x in a]
        launch(*a)
        return float(np.sum(a[out] * g))
    base = args[wrt]
    if not isinstance(base, np.ndarray):
        up, dn = list(args), list(args)
        up[wrt], dn[wrt] = base + eps, base - eps
        return (loss(up) - loss(dn)) / (2 * eps)
    res = np.zeros(base.shape)
    for k in np.ndindex(base.shape):
        up, dn = list(args), list(args)
        up[wrt], dn[wrt] = base.copy(), base.copy()
        up[wrt][k] += eps
        dn[wrt][k] -= eps
        res[k] = (loss(up) - loss(dn)) / (2 * eps)
    return res


def enzyme(launch, args, kinds_):
    """Gradients by dg.autodiff (Enzyme's convention: shadows accumulate)
    with cotangent `g` for the output: {position: gradient}."""
    wrapped, shadows = [], {}
    for i, (a, k) in enumerate(zip(args, kinds_)):
        if k == "dup":
            shadows[i] = a[1].copy()
            wrapped.append(dg.Duplicated(a[0].copy(), shadows[i]))
        elif k == "active":
            wrapped.append(dg.Active(a))
        else:
            wrapped.append(dg.Const(a))
    got = dg.autodiff(launch, *wrapped)
    out = dict(shadows)
    act = [i for i, k in enumerate(kinds_) if k == "active"]
    for i, v in zip(act, got or ()):
        out[i] = v
    return out


# -- the tape tests' heat kernels ------------------------------------------
@pytest.mark.parametrize("n,grid,block", [(70, 3, 32), (64, 2, 32), (5, 1, 8)])
def test_lap_step_is_cot_and_a_gathered_stencil(kinds, n, grid, block):
    src, dst, g = RNG.standard_normal(n), np.zeros(n), RNG.standard_normal(n)
    c = 0.3
    launch = T.lap_step[grid, block]
    got = dg.vjp(launch, dst, src, c, cotangents={"dst": g})
    assert kinds == [["cot", "grad", "active"]]
    assert not np.isnan(got["src"]).any()  # every element written (the buffer starts NaN)
    np.testing.assert_allclose(got["src"], fd(launch, (dst, src, c), 0, 1, g),
                               rtol=1e-7, atol=1e-8)
    assert got["c"] == pytest.approx(fd(launch, (dst, src, c), 0, 2, g), rel=1e-7, abs=1e-9)
    ref = enzyme(launch, ((dst, g), (src, np.zeros(n)), c), ["dup", "dup", "active"])
    np.testing.assert_allclose(got["src"], ref[1], rtol=1e-12, atol=1e-14)
    assert got["c"] == pytest.approx(ref[2], rel=1e-12)
    assert np.all(dst == 0.0)  # the output is not written (outputs=False)


@pytest.mark.parametrize("n,grid,block", [(70, 3, 32), (33, 1, 64)])
def test_flux_is_cot_and_gathered(kinds, n, grid, block):
    u, kappa = RNG.standard_normal(n), RNG.uniform(0.1, 0.4, n)
    f, g = np.zeros(n), RNG.standard_normal(n)
    launch = T.flux[grid, block]
    got = dg.vjp(launch, f, u, kappa, cotangents={"f": g})
    assert kinds == [["cot", "grad", "grad"]]
    assert not np.isnan(got["u"]).any() and not np.isnan(got["kappa"]).any()
    np.testing.assert_allclose(got["u"], fd(launch, (f, u, kappa), 0, 1, g), rtol=1e-7,
                               atol=1e-8)
    np.testing.assert_allclose(got["kappa"], fd(launch, (f, u, kappa), 0, 2, g),
                               rtol=1e-7, atol=1e-8)
    ref = enzyme(launch, ((f, g), (u, np.zeros(n)), (kappa, np.zeros(n))), ["dup"] * 3)
    np.testing.assert_allclose(got["u"], ref[1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got["kappa"], ref[2], rtol=1e-12, atol=1e-14)


def test_lap_step_with_its_scalar_held_needs_no_slots(kinds):
    """wrt=["src"]: `c` is held (no gradient, no slot array), the kinds
    (cot, grad, const)."""
    n = 40
    src, dst, g = RNG.standard_normal(n), np.zeros(n), RNG.standard_normal(n)
    got = dg.vjp(T.lap_step[2, 32], dst, src, 0.3, cotangents={"dst": g}, wrt=["src"])
    assert kinds == [["cot", "grad", "const"]] and list(got) == ["src"]
    np.testing.assert_allclose(got["src"], fd(T.lap_step[2, 32], (dst, src, 0.3), 0, 1, g),
                               rtol=1e-7, atol=1e-8)


def test_access_facts_of_the_branch_stores():
    n = 16
    z = np.zeros(n)
    lap = facts(T.lap_step[1, 32], z, z, 0.3)
    assert lap[0]["store_key"] == [0] and lap[1]["stencil"] == [-1, 0, 1]
    assert lap[0]["store_guards"] == [[0, 1, 0]]  # under i < len(src), every path stores
    fl = facts(T.flux[1, 32], z, z, z)
    assert fl[0]["store_key"] == [0] and fl[1]["stencil"] == [-1, 0, 1]
    assert fl[2]["load_key"] == [0]
    three = facts(three_way[1, 32], z, z)
    assert three[0]["store_key"] == [0]
    assert three[0]["store_guards"] == [[0, 1, 0]]
    some = facts(some_paths[1, 32], z, z)[0]
    assert some["store_key"] == [0] and some["store_guards"] is None  # a path stores nothing
    for k, args in ((sequential, (z, z)), (later, (z, z)), (shifted, (np.zeros(n + 1), z)),
                    (looped, (z, z, 2))):
        assert facts(k[1, 32], *args)[0]["store_key"] is None, k.name


# -- nested exclusive branches ----------------------------------------------
@dg.kernel
def three_way(y, x):
    """if / elif / else: three stores of y[i], on three paths."""
    i = dg.global_id(0)
    n = len(x)
    if i < n:
        if i == 0:
            y[i] = x[i] * x[i + 1]
        elif i < n - 1:
            y[i] = dg.sin(x[i - 1]) + x[i] * x[i + 1]
        else:
            y[i] = 2.0 * x[i - 1]


def test_three_exclusive_stores_are_cot(kinds):
    n = 50
    x, y, g = RNG.standard_normal(n), np.zeros(n), RNG.standard_normal(n)
    launch = three_way[2, 32]
    got = dg.vjp(launch, y, x, cotangents={"y": g})
    assert kinds == [["cot", "grad"]]
    assert not np.isnan(got["x"]).any()
    np.testing.assert_allclose(got["x"], fd(launch, (y, x), 0, 1, g), rtol=1e-7, atol=1e-8)


@dg.kernel
def some_paths(y, x):
    """Stored once, but the path x[i] <= 0.5, i == 0 stores nothing."""
    i = dg.global_id(0)
    if i < len(x):
        if x[i] > 0.5:
            y[i] = x[i] * 2.0
        else:
            if i > 0:
                y[i] = x[i - 1] * x[i]


def test_some_paths_storing_nothing_are_still_cot(kinds):
    n = 40
    x, y, g = RNG.uniform(0, 1, n), np.zeros(n), RNG.standard_normal(n)
    got = dg.vjp(some_paths[2, 32], y, x, cotangents={"y": g})
    assert kinds == [["cot", "grad"]]
    np.testing.assert_allclose(got["x"], fd(some_paths[2, 32], (y, x), 0, 1, g), rtol=1e-7,
                               atol=1e-8)


@pytest.mark.parametrize("k,every", [(T.lap_step, True), (some_paths, False)])
def test_jvp_leaves_the_tangent_unfilled_only_where_every_path_stores(kinds, k, every,
                                                                      monkeypatch):
    """written_once (plan.py): lap_step's dst gets an uninitialised tangent
    buffer (here NaN-filled: every element is written), some_paths' a
    zero-filled one (its unwritten elements keep a zero tangent)."""
    n = 40
    made = []
    real = P.Call.written_once

    def spy(self, i):
        made.append(real(self, i))
        return made[-1]
    monkeypatch.setattr(P.Call, "written_once", spy)
    x, dx = RNG.uniform(0, 1, n), RNG.standard_normal(n)
    args = (np.zeros(n), x, 0.3) if k is T.lap_step else (np.zeros(n), x)
    tans = {"src": dx, "c": 0.0} if k is T.lap_step else {"x": dx}
    got = dg.jvp(k[2, 32], *args, tangents=tans)
    out = k.arg_names[0]
    assert made == [every]
    assert not np.isnan(got[out]).any()
    eps = 1e-6
    up, dn = [list(args), list(args)]
    up[1], dn[1] = x + eps * dx, x - eps * dx
    ys = []
    for a in (up, dn):
        a[0] = np.zeros(n)
        k[2, 32](*a)
        ys.append(a[0])
    np.testing.assert_allclose(got[out], (ys[0] - ys[1]) / (2 * eps), rtol=1e-7, atol=1e-8)


def test_tape_reverses_the_heat_steps_with_the_functional_kinds(kinds):
    """dg.Tape reverses a launch with dg.vjp where every element of its
    outputs is written (`written_once`): lap_step and flux now, with their
    scalars held (the tape's convention)."""
    for prog, want in (("heat_pingpong", ("lap_step", ["cot", "grad", "const"])),
                       ("heat_inplace", ("flux", ["cot", "grad", "grad"]))):
        inp = T.make(prog, n=40)
        tape, a = T.taped(prog, inp)
        kinds.clear()
        grads = tape.gradient(a["loss"], wrt=[a[w] for w in T.WRT[prog]])
        assert want[1] in kinds, kinds
        for w, got in zip(T.WRT[prog], grads):
            np.testing.assert_allclose(got, T.finite_differences(prog, inp, w), rtol=1e-6,
                                       atol=1e-8)


# -- cases that keep Enzyme's kinds -------------------------------------------
@dg.kernel
def sequential(y, x):
    """Two stores of y[i] one after the other on one path."""
    i = dg.global_id(0)
    if i < len(x):
        y[i] = x[i] * x[i]
        y[i] = 3.0 * x[i]


@dg.kernel
def later(y, x):
    """A store in a branch, then another after the `if` on the same path."""
    i = dg.global_id(0)
    if i < len(x):
        if x[i] > 0.0:
            y[i] = x[i] * x[i]
        y[i] = 2.0 * x[i]


@dg.kernel
def shifted(y, x):
    """The two branches store different elements (y[i] and y[i + 1]); no
    element is written by two threads (y has len(x) + 1 elements)."""
    i = dg.global_id(0)
    n = len(x)
    if i < n:
        if i < n // 2:
            y[i] = x[i] * x[i]
        else:
            y[i + 1] = 3.0 * x[i]


@dg.kernel
def looped(y, x, reps):
    """A store in a loop (a runtime trip count) in one branch."""
    i = dg.global_id(0)
    if i < len(x):
        if x[i] > 0.0:
            for k in range(reps):
                y[i] = x[i] * (k + 1.0)
        else:
            y[i] = x[i] * x[i]


def _neg_cases():
    n = 40
    x = RNG.standard_normal(n)
    return [("sequential", sequential, (np.zeros(n), x), []),
            ("later", later, (np.zeros(n), x), []),
            ("shifted", shifted, (np.zeros(n + 1), x), []),
            ("looped", looped, (np.zeros(n), x, 3), [3])]


@pytest.mark.parametrize("case", _neg_cases(), ids=lambda c: c[0])
def test_outputs_not_stored_once_keep_the_accumulating_kind(kinds, case):
    _, k, args, _ = case
    y, x = args[0], args[1]
    g = RNG.standard_normal(len(y))
    launch = k[2, 32]
    got = dg.vjp(launch, *args, cotangents={"y": g})
    assert kinds[0][0] == "dup"
    np.testing.assert_allclose(got["x"], fd(launch, args, 0, 1, g), rtol=1e-7, atol=1e-8)
    wrapped = [(y, g), (x, np.zeros(len(x)))] + list(args[2:])
    ref = enzyme(launch, wrapped, ["dup", "dup"] + ["const"] * len(args[2:]))
    np.testing.assert_allclose(got["x"], ref[1], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("k,n_extra", [(sequential, 0), (later, 0), (looped, 1)])
def test_forced_cot_on_stores_on_one_path_is_a_compile_error(k, n_extra):
    """The reverse function's own check (kinds.py `_cot`): asking for `cot`
    where the stores are not stored once is a CompileError, not a wrong
    gradient."""
    from diffgpu.driver.launch import get_program
    from diffgpu.types import ArrayType, ScalarType

    types = (ArrayType("float64", 1),) * 2 + (ScalarType("int64"),) * n_extra
    with pytest.raises(CompileError, match="'cot' but its stores are neither stored once"):
        get_program(k, types, "host", ("reverse", ("cot", "dup") + ("const",) * n_extra))


# -- the sm_90 PTX ------------------------------------------------------------
def _has_nvptx():
    from diffgpu.driver.compiler import has_nvptx
    return has_nvptx()


def _counts(ptx):
    body = ptx[ptx.index(".entry"):]  # the entry's body (most threads' path)
    return (len(re.findall(r"\b(?:atom|red)\.global\.", ptx)),
            len(re.findall(r"\b(?:atom|red)\.global\.", body)),
            len(re.findall(r"\bst\.global\.", body)))


@pytest.mark.skipif(not _has_nvptx(), reason="MLIR bindings without NVPTX")
def test_heat_step_ptx_has_no_array_atomics():
    """The generic sm_90 programs of the kinds dg.vjp selects for the heat
    step: flux (cot, grad, grad) and lap_step with its scalar held (cot,
    grad, const) have no global atomic and store each gradient once; with
    `c`'s gradient (cot, grad, active) the one atomic left is its slot add,
    after a block sum. Enzyme's form of lap_step adds src's four adjoint
    terms and c's with atomics and stores dst and the consumed cotangent."""
    from diffgpu.driver.launch import get_program
    from diffgpu.types import ArrayType, ScalarType

    a, s = ArrayType("float32", 1), ScalarType("float64")

    def counts(k, types, kinds_):
        return _counts(get_program(k, types, "sm_90", ("reverse", kinds_)).payload["ptx"])
    assert counts(T.flux, (a, a, a), ("cot", "grad", "grad")) == (0, 0, 2)
    assert counts(T.lap_step, (a, a, s), ("cot", "grad", "const")) == (0, 0, 1)
    new = get_program(T.lap_step, (a, a, s), "sm_90", ("reverse", ("cot", "grad", "active")))
    assert _counts(new.payload["ptx"]) == (1, 1, 1) and "bar.sync" in new.payload["ptx"]
    old = counts(T.lap_step, (a, a, s), ("dup", "dup", "active"))
    assert old[1] >= 6 and old[2] >= 3


# -- random branch structures ------------------------------------------------
def _branchy_source(seed: int) -> str:
    """A kernel `kk(y, x)` storing y[i] from random nested if / elif / else
    (conditions on i and on x), sometimes twice on one path, reading x at
    i, i + 1, i + 2 (x has two more elements than y)."""
    import random

    r = random.Random(seed)

    def expr(d=0):
        leaf = r.choice(["x[i]", "x[i + 1]", "x[i + 2]", "0.5", "t"])
        if d > 2 or r.random() < 0.3:
            return leaf
        return r.choice([f"({expr(d + 1)} * {expr(d + 1)})", f"({expr(d + 1)} + {expr(d + 1)})",
                         f"dg.sin({expr(d + 1)})", f"({expr(d + 1)} - 2.0 * {expr(d + 1)})"])

    def cond():
        return r.choice(["x[i] > 0.0", "x[i + 1] < 0.3", "i > 0", "i < n - 2", "i == 3",
                         "i % 2 == 0"])

    def block(ind, d):
        p = "    " * ind
        k = r.random()
        if d >= 3 or k < 0.3:
            out = [f"{p}y[i] = {expr()}"]
            if r.random() < 0.15:  # a second store on the same path
                out.append(f"{p}y[i] = {expr()}")
            return out
        if k < 0.45:
            return [f"{p}if {cond()}:", *block(ind + 1, d + 1)]  # no else: paths with no store
        out = [f"{p}if {cond()}:", *block(ind + 1, d + 1)]
        if r.random() < 0.3:
            out += [f"{p}elif {cond()}:", *block(ind + 1, d + 1)]
        out += [f"{p}else:", *block(ind + 1, d + 1)]
        if r.random() < 0.1:  # a store after the if on every path
            out.append(f"{p}y[i] = {expr()}")
        return out

    body = block(2, 0)
    return "\n".join(["import diffgpu as dg", "", "", "@dg.kernel", "def kk(y, x):",
                      "    i = dg.global_id(0)", "    n = len(y)", "    if i < n:",
                      "        t = x[i + 1] * 0.25", *body, ""])


SEEDS = range(24)


def test_random_branch_stores_equal_enzyme(tmp_path, kinds):
    """dg.vjp of random branch structures equals dg.autodiff (Enzyme's
    convention) to rounding, whichever kinds it picks; most seeds are
    stored once (cot and a gathered stencil), some are not."""
    import importlib.util

    picked = []
    for seed in SEEDS:
        src = _branchy_source(seed)
        path = tmp_path / f"branchy_{seed}.py"
        path.write_text(src)
        spec = importlib.util.spec_from_file_location(f"branchy_{seed}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        rng = np.random.default_rng(seed)
        n = 37
        x, y, g = rng.uniform(-1, 1, n + 2), np.zeros(n), rng.standard_normal(n)
        launch = mod.kk[2, 32]
        kinds.clear()
        got = dg.vjp(launch, y, x, cotangents={"y": g})["x"]
        picked.append(tuple(kinds[0]))
        dx = np.zeros(n + 2)
        dg.autodiff(launch, dg.Duplicated(y.copy(), g.copy()), dg.Duplicated(x, dx))
        np.testing.assert_allclose(got, dx, rtol=1e-12, atol=1e-13, err_msg=src)
    assert picked.count(("cot", "grad")) >= len(SEEDS) // 2, picked
    assert any(p[0] == "dup" for p in picked), picked


# -- a stencil input whose loads reach no active result -----------------------
@dg.kernel
def dead_1d(y, x):
    i = dg.global_id(0)
    if i < len(y):
        t = x[i + 1] * 0.25  # noqa: F841  (read, never used)
        y[i] = 0.5


@dg.kernel
def dead_2d(y, x):
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < y.shape[1] and j < y.shape[0]:
        t = x[j, i + 1] * 0.25  # noqa: F841
        y[j, i] = 0.5


@pytest.mark.parametrize("k,shapes,grid,block", [
    (dead_1d, ((37,), (39,)), 2, 32),
    (dead_2d, ((3, 5), (3, 7)), (1, 3), (8, 1))])
def test_stencil_with_no_adjoint_writes_a_zero_gradient(kinds, k, shapes, grid, block):
    """No add reaches the gathered gradient (transpose.py / gather.py): each
    element is still written, with 0 (the buffer starts NaN)."""
    y, x = np.zeros(shapes[0]), RNG.standard_normal(shapes[1])
    got = dg.vjp(k[grid, block], y, x, cotangents={"y": RNG.standard_normal(shapes[0])})
    assert kinds == [["cot", "grad"]]
    np.testing.assert_array_equal(got["x"], np.zeros(shapes[1]))
