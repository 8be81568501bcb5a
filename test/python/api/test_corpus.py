"""The kernel corpus (kernels_corpus.py): IR verifies, and each kernel run on
the CPU through the public API matches its numpy reference, in float32 and
float64."""
import numpy as np
import pytest

from kernels_corpus import CASES
from diffgpu.frontend import build_module
from diffgpu.lowering.common.targets import HOST_TARGET, nvvm_target
from diffgpu.types import ArrayType, ScalarType

DTYPES = [np.float32, np.float64]
IDS = [c.name for c in CASES]


def arg_types(args):
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(ArrayType(a.dtype.name, a.ndim))
        elif isinstance(a, (bool, int)):
            out.append(ScalarType("int64"))
        else:
            out.append(ScalarType("float64"))
    return tuple(out)


def test_corpus_size():
    assert len(CASES) >= 40
    assert len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("target", [HOST_TARGET, nvvm_target("sm_90")], ids=["host", "sm_90"])
def test_corpus_ir_verifies(case, dtype, target):
    from diffgpu._mlir import ir
    from diffgpu.dialects import make_context
    ms = build_module(case.kernel, arg_types(case.make(dtype, np)), target)
    module = ir.Module.parse(ms.text, make_context())
    assert module.operation.verify()
    assert ms.entry == case.kernel.name


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_corpus_cpu_matches_numpy(case, dtype):
    args = case.make(dtype, np)
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    case.ref(*expected)
    case.kernel[case.grid, case.block](*args)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    for k, (got, want) in enumerate(zip(args, expected)):
        if isinstance(got, np.ndarray):
            np.testing.assert_allclose(got, want, err_msg=f"argument {k}", **tol)


# --- random kernels against Python itself -------------------------------------
LEAVES = ["x[i]", "y[i]", "k", "i", "f", "1", "2", "0.5", "3.0", "True", "-2", "a", "b", "m[i]"]
BINARY = ["+", "-", "*", "/", "//", "%", "**", "<", "<=", "==", "!=", ">", "&", "|", "^"]
CALLS = ["math.exp", "dg.sin", "math.sqrt", "dg.tanh", "math.floor", "np.exp", "dg.erf"]


def _expr(rng, d=0):
    if d > 3 or rng.random() < 0.3:
        return rng.choice(LEAVES)
    c, sub = rng.random(), (lambda: _expr(rng, d + 1))
    if c < 0.4:
        op, left, right = rng.choice(BINARY), sub(), sub()
        if op == "**":
            right = rng.choice(["2", "3", "0", "0.5", "-1"])
        if op in "&|^":
            left, right = f"int({left})", f"int({right})"
        return f"({left} {op} {right})"
    if c < 0.5:
        return f"({sub()} if {sub()} > 0 else {sub()})"
    if c < 0.6:  # and/or: Python's value semantics (the deciding operand)
        return f"({sub()} {rng.choice(['and', 'or'])} {sub()})"
    if c < 0.65:
        return f"(not {sub()})"
    if c < 0.75:
        return f"{rng.choice(['abs', 'int', 'float', 'round'])}({sub()})"
    if c < 0.85:
        return f"{rng.choice(['min', 'max'])}({sub()}, {sub()})"
    return f"{rng.choice(CALLS)}(abs({sub()}) * 0.01)"


def _stmts(rng, depth, ind):
    out, p = [], "    " * ind
    for _ in range(rng.randint(1, 3)):
        c = rng.random()
        if c < 0.4 or depth > 2:
            target = rng.choice(["a", "b", "a", "y[i]", "m[i]"])
            out.append(f"{p}{target} {rng.choice(['=', '+=', '-=', '*='])} {_expr(rng)}")
        elif c < 0.6:
            out += [f"{p}if {_expr(rng)}:"] + _stmts(rng, depth + 1, ind + 1)
            if rng.random() < 0.5:
                out += [f"{p}else:"] + _stmts(rng, depth + 1, ind + 1)
        elif c < 0.75:
            rng_args = rng.choice(["k", "3", "k, 0, -1", "1, k, 2", "0, 4, k + 1"])
            out += [f"{p}for j in range({rng_args}):"] + _stmts(rng, depth + 1, ind + 1)
            if rng.random() < 0.3:
                out.append(f"{p}    if a > 1: break")
            if rng.random() < 0.3:
                out.append(f"{p}    if b < 0: continue")
            out.append(f"{p}    a += j")
        elif c < 0.85:
            c = f"c{depth}"  # one counter per nesting depth: the loop ends
            out += [f"{p}{c} = 0", f"{p}while {c} < k and {_expr(rng)}:"]
            out += _stmts(rng, depth + 1, ind + 1) + [f"{p}    {c} += 1"]
        else:
            out += [f"{p}if {_expr(rng)}:", f"{p}    return"]
    return out


def _random_kernel(seed, path):
    import random
    rng = random.Random(seed)
    body = _stmts(rng, 0, 1)  # (may return inside loops)
    src = ["import math", "import numpy as np", "import diffgpu as dg", "", "",
           "@dg.kernel", "def kk(x, y, m, k, f):", "    i = dg.global_id(0)",
           "    if i >= len(x):", "        return", "    a = 0", "    b = 1.5",
           *body, "    y[i] = a + b", ""]
    path.write_text("\n".join(src))
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"random_kernel_{seed}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.kk


@pytest.mark.parametrize("seed", range(24))
def test_random_kernels_match_python(seed, tmp_path):
    """A random kernel (expressions, if/for/while/break/continue/return, weak
    literals, int32 data) run on the CPU equals the same Python function run
    thread by thread on numpy scalars (NumPy 2 promotion = our weak typing)."""
    import math
    import types
    import warnings
    import diffgpu as dg
    kernel = _random_kernel(seed, tmp_path / f"k{seed}.py")
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-3, 3, 7), rng.uniform(-3, 3, 7)
    m = rng.integers(-5, 5, 7).astype(np.int32)
    k, f = 3, np.float32(0.75)
    want = [x.copy(), y.copy(), m.copy()]
    tid = [0]
    fake_dg = types.SimpleNamespace(global_id=lambda axis=0: np.int64(tid[0]), sin=np.sin,
                                    tanh=np.tanh, erf=np.vectorize(math.erf))
    pyf = types.FunctionType(kernel.py_func.__code__,
                             dict(kernel.py_func.__globals__, dg=fake_dg))
    try:
        with np.errstate(all="ignore", divide="raise"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for tid[0] in range(8):
                pyf(*want, np.int64(k), f)
    except (ZeroDivisionError, ValueError, OverflowError, TypeError, FloatingPointError):
        pytest.skip("Python raises (x // 0, int(nan), ...): unspecified in kernels")
    try:
        kernel[1, 8](x, y, m, k, f)
    except dg.CompileError as exc:
        assert "internal" not in str(exc)
        pytest.skip(f"rejected: {exc.msg}")
    np.testing.assert_allclose(y, want[1], rtol=1e-6, atol=1e-9, equal_nan=True)
