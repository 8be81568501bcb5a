"""Frontend IR shape: types, weak literals, SSA through control flow, locations.

Every module the frontend produces here is parsed and verified with
dialects.make_context().
"""
import math
import re

import numpy as np
import pytest

import diffgpu as dg
from diffgpu.frontend import build_diff_module, build_module
from diffgpu.lowering.common.targets import HOST_TARGET, nvvm_target
from diffgpu.types import ArrayType, ScalarType

F32, F64, I32, I64 = (ScalarType(t) for t in ("float32", "float64", "int32", "int64"))
A32, A64 = ArrayType("float32", 1), ArrayType("float64", 1)
AI32 = ArrayType("int32", 1)
M32 = ArrayType("float32", 2)
TILE = 8


def verify(text):
    from diffgpu._mlir import ir
    from diffgpu.dialects import make_context
    ctx = make_context()
    module = ir.Module.parse(text, ctx)
    assert module.operation.verify()
    return module


def ir_of(defn, *types, target=HOST_TARGET):
    ms = build_module(defn, types, target)
    verify(ms.text)
    return ms


def func_text(text, name):
    """The text of func.func @name."""
    m = re.search(rf"func\.func @{re.escape(name)}\(.*?\n}} loc", text, re.S)
    assert m, f"no @{name} in\n{text}"
    return m.group(0)


@dg.func
def square(x):
    return x * x


@dg.kernel
def weak_scale(x):
    i = dg.global_id(0)
    x[i] = 2.0 * x[i] + 1


def test_weak_float_literal_stays_f32():
    t = ir_of(weak_scale, A32).text
    assert "arith.constant 2.0 : f32" in t
    assert "arith.mulf" in t and ": f64" not in t and "arith.extf" not in t


@dg.kernel
def mixed(x, y, a):
    i = dg.thread_id(0)
    x[i] = x[i] + y[i] * a


def test_f32_with_f64_promotes():
    t = ir_of(mixed, A32, A64, F32).text
    assert "arith.extf" in t and "arith.addf" in t and re.search(r"addf .* : f64", t)
    assert "arith.truncf" in t  # stored back into float32


@dg.kernel
def int_ops(A, B, n):
    i = dg.thread_id(0)
    A[i] = n / 2          # true division: f64
    B[i] = n // 3 + n % 3  # floor division / modulo with Python signs


def test_integer_division_semantics():
    t = ir_of(int_ops, A32, ArrayType("int64", 1), I64).text
    assert "arith.sitofp" in t and re.search(r"arith\.divf .* : f64", t)
    assert "arith.divsi" in t and "arith.remsi" in t and "arith.select" in t


@dg.kernel
def int32_data(A, B):
    i = dg.thread_id(0)
    B[i] = A[i] * 3 + 1 < 5


def test_int32_values_and_comparisons():
    t = ir_of(int32_data, AI32, AI32).text
    assert re.search(r"arith\.muli .* : i32", t) and re.search(r"arith\.cmpi slt, .* : i32", t)
    assert "arith.extui" in t  # i1 stored into int32


@dg.kernel
def branches(A, c):
    s = 0.0
    if c > 0:
        s = A[0]
    elif c < -1:
        s = 2 * A[1]
    A[2] = s


def test_if_results_are_ssa():
    t = ir_of(branches, A32, I64).text
    assert re.search(r"= scf\.if %\w+ -> \(f32\)", t)
    assert t.count("scf.yield") >= 4


@dg.kernel
def loops(A, n, step):
    acc = 0.0
    for i in range(n):
        acc += A[i]
    for j in range(n - 1, -1, -1):
        acc = acc * 0.5 + A[j]
    for k in range(0, n, step):
        acc -= A[k]
    while n > 0:
        n = n // 2
        acc += 1
    A[0] = acc + i


def test_loops_carry_values():
    t = ir_of(loops, A32, I64, I64).text
    assert re.search(r"scf\.for %\w+ = .* iter_args\(.*\) -> \(f32, i64\)", t)
    assert t.count("scf.for") == 3 and "arith.divsi" in t and "arith.maxsi" in t
    assert re.search(r"scf\.while \(.*\) : \(i64, f32\) -> \(i64, f32\)", t)


@dg.kernel
def exits(A, n):
    total = 0.0
    for i in range(n):
        if A[i] < 0:
            continue
        if A[i] > 10:
            break
        total += A[i]
    j = 0
    while True:
        j += 1
        if j >= n:
            break
    A[0] = total + j


def test_break_and_continue():
    t = ir_of(exits, A32, I64).text
    assert "scf.for" not in t  # a for loop with break becomes scf.while
    assert t.count("scf.while") == 2
    # carried: the index counter, total, and the break flag
    assert re.search(r"scf\.while \(.*\) : \(index, f32, i1\) -> \(index, f32, i1\)", t)
    assert re.search(r"scf\.if .* -> \(index, f32, i1\)", t)  # rest of the body under the if


@dg.kernel
def only_continue(A, n):
    for i in range(n):
        if A[i] < 0:
            continue
        A[i] = 1.0


def test_continue_keeps_scf_for():
    t = ir_of(only_continue, A32, I64).text
    assert "scf.for" in t and "scf.while" not in t


@dg.kernel
def guard(A, n):
    i = dg.global_id(0)
    if i >= n:
        return
    A[i] = square(A[i])


def test_early_return_structures_rest_under_if():
    ms = ir_of(guard, A32, I64)
    k = func_text(ms.text, "guard")
    assert "scf.if" in k and "func.call @square" in k and k.count("func.return") == 1
    assert "diffgpu.kernel" in k
    assert "diffgpu.kernel" not in func_text(ms.text, "square")


@dg.func
def sign_split(x):
    if x < 0:
        return -x, -1.0
    return x, 1.0


@dg.kernel
def use_tuple(A):
    v, s = sign_split(A[0])
    A[0] = v * s + len(A) + A.shape[0]


def test_tuple_returns_and_unpacking():
    t = ir_of(use_tuple, A32).text
    f = func_text(t, "sign_split")
    assert re.search(r"-> \(f32, f64\)", f) and re.search(r"scf\.if .* -> \(f32, f64\)", f)  # -1.0: weak f64
    assert "memref.dim" in t


@dg.kernel
def twice(A, B):
    A[0] = square(A[0])
    B[0] = square(B[0])


def test_specializations_are_mangled():
    t = ir_of(twice, A32, A64).text
    assert "func.func @square(" in t and "func.func @square_1(" in t


@dg.kernel
def shared(A):
    s = dg.shared_array((TILE, 2), np.float32)
    t = dg.thread_id(0)
    s[t, 0] = A[t]
    dg.syncthreads()
    dg.atomic_add(A, 0, s[TILE - 1 - t, 0])
    dg.atomic_add(A, (1,), 1)


def test_shared_barrier_atomic():
    t = ir_of(shared, A32).text
    assert '"diffgpu.shared_alloc"() : () -> memref<8x2xf32, #gpu.address_space<workgroup>>' in t
    assert '"diffgpu.barrier"()' in t and t.count('"diffgpu.atomic_add"') == 2


@dg.kernel
def mathy(A):
    i = dg.thread_id(0)
    A[i] = math.exp(A[i]) + dg.tanh(A[i]) + math.floor(A[i]) + abs(A[i]) \
        + max(A[i], 0.0, 1) + min(A[i], 2) + A[i] ** 2 + A[i] ** 0.5 + math.pi


def test_math_functions():
    t = ir_of(mathy, A32).text
    for op in ("math.exp", "math.tanh", "math.floor", "math.absf", "math.powf"):
        assert op in t
    assert "arith.fptosi" in t  # math.floor gives an int, as in Python
    assert re.search(r"math\.exp .* : f32", t)


@dg.kernel
def grad_in_kernel(A, dA, x, out):
    (gx,) = dg.autodiff(square, dg.Active(x))
    g = dg.autodiff(square, dg.Active(x), seed=2.0)
    t = dg.fwddiff(square, dg.Duplicated(x, 1.0))
    dg.autodiff(weak_scale, dg.Duplicated(A, dA))
    out[0] = gx + g[0] + t


def test_autodiff_ops_in_kernel():
    target = nvvm_target("sm_90")
    t = ir_of(grad_in_kernel, A32, A32, F32, A32, target=target).text
    assert t.count('"diffgpu.autodiff"') == 3 and t.count('"diffgpu.fwddiff"') == 1
    assert 'activity = ["active"]' in t and 'activity = ["dup"]' in t
    # seed and active x: one argument of one operand, one run of two f32 operands
    assert "groups = array<i32: 1>, operandSegmentSizes = array<i32: 2, 0," in t
    assert f"diffgpu.target = {target}" in t
    assert "func.func @weak_scale(" in t


def test_build_diff_module_reverse_with_active():
    ms = build_diff_module(mixed, "reverse", ("dup", "const", "active"), (A32, A64, F32),
                           HOST_TARGET)
    verify(ms.text)
    assert ms.entry == "__dg_reverse_mixed"
    entry = func_text(ms.text, ms.entry)
    assert '"diffgpu.autodiff"' in entry and '"diffgpu.atomic_add"' in entry
    assert entry.count("memref<?xf32") >= 3 and "diffgpu.kernel" in entry


def test_build_diff_module_forward():
    ms = build_diff_module(mixed, "forward", ("dup", "dupnoneed", "dup"), (A32, A64, F32),
                           nvvm_target("sm_80"))
    verify(ms.text)
    assert ms.entry == "__dg_forward_mixed" and '"diffgpu.fwddiff"' in ms.text


def test_every_op_has_a_location_in_this_file():
    module = verify(build_module(loops, (A32, I64, I64), HOST_TARGET).text)
    seen = 0

    def walk(op):
        nonlocal seen
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    loc = str(inner.location)
                    assert "test_frontend_ir.py" in loc, (inner.name, loc)
                    seen += 1
                    walk(inner.operation)
    walk(module.operation)
    assert seen > 30


@dg.kernel
def nested_def_cols(A):
    A[0] = 1.0


def test_nested_definition_columns_exact():
    @dg.kernel
    def inner(A):
        A[0] = 1.0
    t = ir_of(inner, A32).text
    line = inner.py_func.__code__.co_firstlineno + 2
    assert f'test_frontend_ir.py":{line}:9)' in t


@pytest.mark.parametrize("target", [HOST_TARGET, nvvm_target("sm_90")])
def test_target_on_every_function(target):
    t = ir_of(guard, A32, I64, target=target).text
    assert t.count(f"diffgpu.target = {target}") == 2


EPS = np.float32(0.5)  # a numpy scalar: strongly typed
DEBUG = False


def make_scaler(k):
    @dg.kernel
    def scaler(A):
        A[dg.global_id()] *= k  # closure variable, default axis 0
    return scaler


def test_closure_constant():
    t = ir_of(make_scaler(3), A64).text
    assert "arith.constant 3.0 : f64" in t


@dg.kernel
def static_and_strong(A, n):
    if DEBUG:  # resolved at compile time: no scf.if
        A[0] = -1.0
    A[1] = n * EPS


def test_static_if_and_numpy_scalar_constant():
    t = ir_of(static_and_strong, A64, I64).text
    assert "scf.if" not in t and "-1.0" not in t
    # int64 with a strong float32 constant: float32 (a weak 0.5 would give f64)
    assert "arith.constant 0.5 : f32" in t and re.search(r"arith\.mulf .* : f32", t)


@dg.kernel
def accumulate_while(A, n):
    s = 0  # weak int: the loop body makes it float32
    k = 0
    while k < n:
        s = s + A[k]
        k += 1
    rows, = A.shape
    A[0] = s / rows


def test_loop_types_reach_fixpoint():
    t = ir_of(accumulate_while, A32, I64).text
    assert re.search(r"scf\.while \(.*\) : \(f32, i64\) -> \(f32, i64\)", t)


@dg.func
def mutual_a(x):
    return mutual_b(x)


@dg.func
def mutual_b(x):
    return mutual_a(x)


@dg.kernel
def mutual(A):
    A[0] = mutual_a(A[0])


def test_mutual_recursion_rejected():
    with pytest.raises(dg.CompileError, match="recursion is not supported"):
        build_module(mutual, (A32,), HOST_TARGET)


@dg.kernel
def weak_args(A):
    A[0] = square(2.0) * A[0]


def test_weak_arguments_specialize_callees():
    t = ir_of(weak_args, A32).text
    assert "func.call @square(" in t and re.search(r"arith\.mulf .* : f32", func_text(t, "weak_args"))


@dg.kernel
def int_div(a, b, q):
    i = dg.global_id(0)
    q[i] = a[i] // b[i] + a[i] % b[i] + a[i] // 4


def test_integer_division_by_zero_does_not_trap():
    AI64 = ArrayType("int64", 1)
    ir_of(int_div, AI64, AI64, AI64)
    a = np.array([7, -7, 3], np.int64)
    b = np.array([0, -1, 2], np.int64)
    q = np.zeros(3, np.int64)
    int_div[1, 3](a, b, q)  # x // 0 is unspecified in kernels, but never a crash (host lowering)
    assert q[1] == 7 + 0 - 2 and q[2] == 1 + 1 + 0


@dg.kernel
def float_literals(A, B):
    A[0] = 1e16 + 5e-324 + 1e-50 + 1e300 + math.inf - 2.5e-7
    B[0] = 1e16 * B[0] + 1e-50 + 1e300 - math.inf + math.nan * 0


def test_float_literals_parse():
    # '1e+16' must print with a '.', out-of-range float32 constants become inf
    t = ir_of(float_literals, A32, A64).text
    assert "1.0e+16" in t and "0x7F800000 : f32" in t and "0x7FF0000000000000 : f64" in t
