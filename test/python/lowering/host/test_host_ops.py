"""Every math / arith op the frontend may emit, lowered for the host target and
run in f32 and f64 (i32 and i64 for integers) against numpy."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from host_ir_helpers import NP, compile_host, elementwise, launch_1d


# ---------------------------------------------------------------------------
# Every math / arith op the frontend may emit, f32 and f64, against numpy
# ---------------------------------------------------------------------------

def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


#: name -> (op, domain, reference on float64); body `%r = op %x0 : T`
MATH_UNARY = {
    "exp": ("math.exp", (-10, 10), np.exp),
    "log": ("math.log", (1e-3, 1e3), np.log),
    "log1p": ("math.log1p", (-0.9, 5), np.log1p),
    "expm1": ("math.expm1", (-3, 3), np.expm1),
    "sin": ("math.sin", (-7, 7), np.sin),
    "cos": ("math.cos", (-7, 7), np.cos),
    "tan": ("math.tan", (-1.5, 1.5), np.tan),
    "tanh": ("math.tanh", (-6, 6), np.tanh),
    "sinh": ("math.sinh", (-5, 5), np.sinh),
    "cosh": ("math.cosh", (-5, 5), np.cosh),
    "sqrt": ("math.sqrt", (0, 100), np.sqrt),
    "rsqrt": ("math.rsqrt", (1e-2, 100), lambda x: 1 / np.sqrt(x)),
    "absf": ("math.absf", (-9, 9), np.abs),
    "erf": ("math.erf", (-4, 4), _erf),
    "floor": ("math.floor", (-9, 9), np.floor),
    "ceil": ("math.ceil", (-9, 9), np.ceil),
    "trunc": ("math.trunc", (-9, 9), np.trunc),
    "atan": ("math.atan", (-9, 9), np.arctan),
    "exp2": ("math.exp2", (-9, 9), np.exp2),
    "log2": ("math.log2", (1e-3, 1e3), np.log2),
    "log10": ("math.log10", (1e-3, 1e3), np.log10),
    "cbrt": ("math.cbrt", (-9, 9), np.cbrt),
    "negf": ("arith.negf", (-9, 9), np.negative),
    "asin": ("math.asin", (-1, 1), np.arcsin),
    "acos": ("math.acos", (-1, 1), np.arccos),
    "asinh": ("math.asinh", (-9, 9), np.arcsinh),
    "acosh": ("math.acosh", (1, 9), np.arccosh),
    "atanh": ("math.atanh", (-0.99, 0.99), np.arctanh),
    "erfc": ("math.erfc", (-4, 4), lambda x: 1 - _erf(x)),
    "round": ("math.round", (-9, 9), lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5)),
    "roundeven": ("math.roundeven", (-9, 9), np.rint),
}
#: name -> (op, domain of x, domain of y, reference); body `%r = op %x0, %x1 : T`
FLOAT_BINARY = {
    "powf": ("math.powf", (0.01, 5), (-4, 4), np.power),
    "atan2": ("math.atan2", (-3, 3), (-3, 3), np.arctan2),
    "addf": ("arith.addf", (-9, 9), (-9, 9), np.add),
    "subf": ("arith.subf", (-9, 9), (-9, 9), np.subtract),
    "mulf": ("arith.mulf", (-9, 9), (-9, 9), np.multiply),
    "divf": ("arith.divf", (-9, 9), (0.5, 9), np.divide),
    "remf": ("arith.remf", (-9, 9), (0.5, 3), np.fmod),
    "minimumf": ("arith.minimumf", (-9, 9), (-9, 9), np.minimum),
    "maximumf": ("arith.maximumf", (-9, 9), (-9, 9), np.maximum),
    "minnumf": ("arith.minnumf", (-9, 9), (-9, 9), np.fmin),
    "maxnumf": ("arith.maxnumf", (-9, 9), (-9, 9), np.fmax),
    "copysign": ("math.copysign", (-9, 9), (-9, 9), np.copysign),
}
CMPF = ("oeq", "one", "olt", "ole", "ogt", "oge", "ueq", "une", "ult", "ule", "ugt", "uge",
        "ord", "uno")
N = 257


def _sample(rng, lo, hi, dtype):
    x = rng.uniform(lo, hi, N)
    x[:5] = np.clip([0.0, 1e-7, -1e-7, 0.5, -0.5], lo, hi)  # edge values in range
    return x.astype(dtype)


def _float_module(t):
    parts = []
    for name, (op, _, _) in MATH_UNARY.items():
        parts.append(elementwise(name, [t], t, f"%r = {op} %x0 : {t}"))
    for name, (op, _, _, _) in FLOAT_BINARY.items():
        parts.append(elementwise(name, [t, t], t, f"%r = {op} %x0, %x1 : {t}"))
    parts.append(elementwise("fma", [t, t, t], t, f"%r = math.fma %x0, %x1, %x2 : {t}"))
    parts.append(elementwise("fpowi", [t, "i32"], t, f"%r = math.fpowi %x0, %x1 : {t}, i32"))
    for p in CMPF:
        parts.append(elementwise("cmpf_" + p, [t, t], "i32",
                                 f"%c = arith.cmpf {p}, %x0, %x1 : {t}\n"
                                 "    %r = arith.extui %c : i1 to i32"))
    parts.append(elementwise("select", [t, t], t, f"%c = arith.cmpf olt, %x0, %x1 : {t}\n"
                             f"    %r = arith.select %c, %x1, %x0 : {t}"))
    return "".join(parts)


@functools.lru_cache(maxsize=None)
def _program(family, t):
    return compile_host({"float": _float_module, "int": _int_module,
                         "cast": lambda _: _cast_module()}[family](t))


def _tol(t):
    # numpy's float32 functions and libm may differ by a few ulp
    return dict(rtol=4e-6, atol=2e-7) if t == "f32" else dict(rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("name", list(MATH_UNARY))
def test_float_unary(name, t):
    _, domain, ref = MATH_UNARY[name]
    x = _sample(np.random.default_rng(3), *domain, NP[t])
    out = np.zeros(N, NP[t])
    launch_1d(_program("float", t), name, (out, x), N)
    expect = ref(x.astype(np.float64)).astype(NP[t])
    np.testing.assert_allclose(out, expect, **_tol(t))


@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("name", list(FLOAT_BINARY))
def test_float_binary(name, t):
    _, dx, dy, ref = FLOAT_BINARY[name]
    rng = np.random.default_rng(4)
    x, y = _sample(rng, *dx, NP[t]), _sample(rng, *dy, NP[t])
    out = np.zeros(N, NP[t])
    launch_1d(_program("float", t), name, (out, x, y), N)
    with np.errstate(all="ignore"):
        expect = ref(x, y)  # in the array's own precision (exact ops must be equal)
    np.testing.assert_allclose(out, expect, **_tol(t))


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_min_max_propagate_nan(t):
    """minimumf/maximumf propagate NaN (np.minimum); minnumf/maxnumf drop it (np.fmin)."""
    x = np.array([np.nan, 1.0, np.nan, -0.0], NP[t])
    y = np.array([2.0, np.nan, np.nan, 0.0], NP[t])
    for name, ref in (("minimumf", np.minimum), ("maximumf", np.maximum),
                      ("minnumf", np.fmin), ("maxnumf", np.fmax)):
        out = np.zeros(4, NP[t])
        launch_1d(_program("float", t), name, (out, x, y), 4)
        np.testing.assert_array_equal(out[:3], ref(x, y)[:3], err_msg=name)


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_fma(t):
    rng = np.random.default_rng(5)
    x, y, z = (_sample(rng, -9, 9, NP[t]) for _ in range(3))
    out = np.zeros(N, NP[t])
    launch_1d(_program("float", t), "fma", (out, x, y, z), N)
    expect = (x.astype(np.float64) * y + z).astype(NP[t])
    np.testing.assert_allclose(out, expect, **_tol(t))


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_fpowi(t):
    x = np.linspace(-3, 3, 25).astype(NP[t])
    n = np.arange(-12, 13, dtype=np.int32)
    out = np.zeros(25, NP[t])
    launch_1d(_program("float", t), "fpowi", (out, x, n), 25)
    with np.errstate(all="ignore"):
        expect = (x.astype(np.float64) ** n).astype(NP[t])
    np.testing.assert_allclose(out, expect, **_tol(t))


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_cmpf_all_predicates_and_select(t):
    vals = np.array([-1.0, 0.0, 1.0, np.nan], NP[t])
    x, y = (a.ravel().copy() for a in np.meshgrid(vals, vals))
    nan = np.isnan(x) | np.isnan(y)
    base = {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y}
    with np.errstate(invalid="ignore"):
        for p in CMPF:
            if p == "ord":
                expect = ~nan
            elif p == "uno":
                expect = nan
            elif p == "one":
                expect = (x != y) & ~nan
            elif p[0] == "o":
                expect = base[p[1:]] & ~nan
            else:
                expect = base[p[1:]] | nan
            out = np.full(x.size, 7, np.int32)
            launch_1d(_program("float", t), "cmpf_" + p, (out, x, y), x.size)
            np.testing.assert_array_equal(out, expect.astype(np.int32), err_msg=p)
    out = np.zeros(x.size, NP[t])
    launch_1d(_program("float", t), "select", (out, x, y), x.size)
    np.testing.assert_array_equal(out, np.where(x < y, y, x))


INT_BINARY = ("addi", "subi", "muli", "divsi", "remsi", "floordivsi", "ceildivsi",
              "minsi", "maxsi", "andi", "ori", "xori", "shli", "shrsi")
CMPI = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


def _int_module(t):
    parts = [elementwise(op, [t, t], t, f"%r = arith.{op} %x0, %x1 : {t}") for op in INT_BINARY]
    for p in CMPI:
        parts.append(elementwise("cmpi_" + p, [t, t], "i32",
                                 f"%c = arith.cmpi {p}, %x0, %x1 : {t}\n"
                                 "    %r = arith.extui %c : i1 to i32"))
    # Python's `%` (sign of the divisor) from floordivsi: a - (a // b) * b
    parts.append(elementwise("pymod", [t, t], t, f"%q = arith.floordivsi %x0, %x1 : {t}\n"
                             f"    %m = arith.muli %q, %x1 : {t}\n"
                             f"    %r = arith.subi %x0, %m : {t}"))
    return "".join(parts)


def _int_ref(op, a, b):
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    trunc_div = np.sign(a64) * np.sign(b64) * (np.abs(a64) // np.abs(b64))
    return {"addi": a + b, "subi": a - b, "muli": a * b,
            "divsi": trunc_div,                       # C: rounds toward zero
            "remsi": np.fmod(a64, b64),               # C: sign of the dividend
            "floordivsi": np.floor_divide(a64, b64),  # Python //
            "ceildivsi": -np.floor_divide(-a64, b64),
            "minsi": np.minimum(a, b), "maxsi": np.maximum(a, b),
            "andi": a & b, "ori": a | b, "xori": a ^ b,
            "shli": a << b, "shrsi": a >> b,  # b in [0, 9] for these
            "pymod": np.remainder(a64, b64)}[op]      # Python %


@pytest.mark.parametrize("t", ["i32", "i64"])
@pytest.mark.parametrize("op", INT_BINARY + ("pymod",))
def test_int_binary(op, t):
    rng = np.random.default_rng(6)
    big = np.iinfo(NP[t]).max
    a = rng.integers(-1000, 1000, N).astype(NP[t])
    b = rng.integers(-9, 10, N).astype(NP[t])
    b[b == 0] = 3
    if op in ("shli", "shrsi"):
        b = np.abs(b)
    if op in ("addi", "subi", "muli", "andi", "ori", "xori", "minsi", "maxsi"):
        a[:4] = [big, -big - 1, big, 12345]  # wrap-around like numpy
        b[:4] = [1, -1, 2, -7]
    out = np.zeros(N, NP[t])
    launch_1d(_program("int", t), op, (out, a, b), N)
    with np.errstate(over="ignore"):
        expect = _int_ref(op, a, b).astype(NP[t])
    np.testing.assert_array_equal(out, expect)


@pytest.mark.parametrize("t", ["i32", "i64"])
def test_int_division_never_traps(t):
    """x / 0 and MIN / -1 would kill the process with SIGFPE on x86; on the
    host they give x (divisor taken as 1), MIN (wrap-around) and 0 (rem)."""
    lo = np.iinfo(NP[t]).min
    a = np.array([7, -7, lo, lo, 9], NP[t])
    b = np.array([0, 0, -1, 0, 2], NP[t])
    expect = {"divsi": [7, -7, lo, lo, 4], "remsi": [0, 0, 0, 0, 1],
              "floordivsi": [7, -7, lo, lo, 4], "ceildivsi": [7, -7, lo, lo, 5]}
    for op, exp in expect.items():
        out = np.full(5, 99, NP[t])
        launch_1d(_program("int", t), op, (out, a, b), 5)
        np.testing.assert_array_equal(out, np.array(exp, NP[t]), err_msg=op)


@pytest.mark.parametrize("t", ["i32", "i64"])
def test_cmpi_all_predicates(t):
    vals = np.array([-2, -1, 0, 1, 5], NP[t])
    x, y = (a.ravel().copy() for a in np.meshgrid(vals, vals))
    ux, uy = x.astype(np.uint64 if t == "i64" else np.uint32), y.astype(
        np.uint64 if t == "i64" else np.uint32)
    refs = {"eq": x == y, "ne": x != y, "slt": x < y, "sle": x <= y, "sgt": x > y,
            "sge": x >= y, "ult": ux < uy, "ule": ux <= uy, "ugt": ux > uy, "uge": ux >= uy}
    for p in CMPI:
        out = np.full(x.size, 7, np.int32)
        launch_1d(_program("int", t), "cmpi_" + p, (out, x, y), x.size)
        np.testing.assert_array_equal(out, refs[p].astype(np.int32), err_msg=p)


#: name -> (in type, out type, body)
CASTS = {
    "sitofp_i32_f32": ("i32", "f32", "%r = arith.sitofp %x0 : i32 to f32"),
    "sitofp_i64_f64": ("i64", "f64", "%r = arith.sitofp %x0 : i64 to f64"),
    "sitofp_i32_f64": ("i32", "f64", "%r = arith.sitofp %x0 : i32 to f64"),
    "sitofp_i64_f32": ("i64", "f32", "%r = arith.sitofp %x0 : i64 to f32"),
    "uitofp_i32_f64": ("i32", "f64", "%r = arith.uitofp %x0 : i32 to f64"),
    "fptosi_f32_i32": ("f32", "i32", "%r = arith.fptosi %x0 : f32 to i32"),
    "fptosi_f64_i64": ("f64", "i64", "%r = arith.fptosi %x0 : f64 to i64"),
    "fptosi_f64_i32": ("f64", "i32", "%r = arith.fptosi %x0 : f64 to i32"),
    "extf": ("f32", "f64", "%r = arith.extf %x0 : f32 to f64"),
    "truncf": ("f64", "f32", "%r = arith.truncf %x0 : f64 to f32"),
    "extsi": ("i32", "i64", "%r = arith.extsi %x0 : i32 to i64"),
    "extui": ("i32", "i64", "%r = arith.extui %x0 : i32 to i64"),
    "trunci": ("i64", "i32", "%r = arith.trunci %x0 : i64 to i32"),
    "index_cast_i32": ("i32", "i64", "%x = arith.index_cast %x0 : i32 to index\n"
                       "    %r = arith.index_cast %x : index to i64"),
    "index_cast_i64": ("i64", "i32", "%x = arith.index_cast %x0 : i64 to index\n"
                       "    %r = arith.index_cast %x : index to i32"),
}


def _cast_module():
    return "".join(elementwise(name, [i], o, body) for name, (i, o, body) in CASTS.items())


@pytest.mark.parametrize("name", list(CASTS))
def test_casts(name):
    src_t, dst_t, _ = CASTS[name]
    rng = np.random.default_rng(7)
    if src_t.startswith("f"):
        x = rng.uniform(-1e4, 1e4, N).astype(NP[src_t])
        x[:4] = [0.5, -0.5, 1.9999, -2.7]  # truncation toward zero
    elif src_t == "i64":
        x = rng.integers(-2**62, 2**62, N, dtype=np.int64)
        x[:3] = [-1, 2**40 + 5, -(2**33) - 7]
    else:
        x = rng.integers(-2**31, 2**31 - 1, N, dtype=np.int64).astype(np.int32)
        x[:2] = [-1, -(2**31)]
    out = np.zeros(N, NP[dst_t])
    launch_1d(_program("cast", ""), name, (out, x), N)
    if name == "extui":
        expect = x.astype(np.int64) & 0xFFFFFFFF
    elif name == "uitofp_i32_f64":
        expect = x.view(np.uint32).astype(np.float64)
    else:
        expect = x.astype(NP[dst_t])  # numpy: truncation, wrap-around, rounding
    np.testing.assert_array_equal(out, expect)
