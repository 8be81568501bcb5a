"""The CPU runtime's program API and errors: LLVM-text round trip, launch and
scalar checks, out-of-bounds reporting, tapes, barrier errors."""
from __future__ import annotations

import numpy as np
import pytest

from diffgpu.errors import CompileError, LaunchError
from diffgpu.runtime.cpu import HostProgram, OutOfBoundsError
from diffgpu.types import ArrayType, ScalarType
from host_ir_helpers import (HOST_TARGET, ROW_SUMS, array_types, compile_host, kernel,
                             launch_1d, mem)


# ---------------------------------------------------------------------------
# Program API and errors
# ---------------------------------------------------------------------------

def test_llvm_text_round_trip_without_recompiling():
    prog = compile_host(ROW_SUMS)
    assert "llvm.func @_mlir_ciface_rowsum" in prog.llvm_text
    assert '"diffgpu.' not in prog.llvm_text  # no diffgpu op left
    again = HostProgram.from_llvm_text(prog.llvm_text)
    A = np.ones((5, 3), np.float32)
    out = np.zeros(5, np.float32)
    launch_1d(again, "rowsum", (A, out), 5)
    np.testing.assert_array_equal(out, 3)


def test_launch_errors_leave_inputs_untouched():
    prog = compile_host(ROW_SUMS)
    A = np.ones((5, 3), np.float32)
    out = np.zeros(5, np.float32)
    types = array_types(A, out)
    bad = [
        ((A,), types[:1], (1, 1, 1), (8, 1, 1), "takes 1 arguments"),  # name check below
        ((A, out), types, (0, 1, 1), (8, 1, 1), "grid sizes"),
        ((A, out), types, (1, 1), (8, 1, 1), "grid must be a tuple of 3"),
        ((A, out.astype(np.float64)), types, (1, 1, 1), (8, 1, 1), "float64"),
        ((A, 3.0), types, (1, 1, 1), (8, 1, 1), "expected a numpy array"),
    ]
    for args, tys, grid, block, msg in bad[1:]:
        with pytest.raises(LaunchError, match=msg):
            prog.launch("rowsum", args, tys, grid, block)
    with pytest.raises(LaunchError, match="takes 2 arguments, got 1"):
        prog.launch("rowsum", (A,), types, (1, 1, 1), (8, 1, 1))
    with pytest.raises(LaunchError, match="no host kernel named 'nope'"):
        prog.launch("nope", (A, out), types, (1, 1, 1), (8, 1, 1))
    assert not out.any()


def test_scalar_arguments_are_checked():
    prog = compile_host(kernel("put", [("A", mem("i32")), ("v", "i32")], """
  %c0 = arith.constant 0 : index
  memref.store %v, %A[%c0] : """ + mem("i32") + """
  return"""))
    A = np.zeros(1, np.int32)
    types = (ArrayType("int32", 1), ScalarType("int32"))
    with pytest.raises(LaunchError, match="does not fit in int32"):
        prog.launch("put", (A, 2**31), types, (1, 1, 1), (1, 1, 1))
    with pytest.raises(LaunchError, match="expected an integer"):
        prog.launch("put", (A, 1.5), types, (1, 1, 1), (1, 1, 1))
    prog.launch("put", (A, np.int64(-7)), types, (1, 1, 1), (1, 1, 1))
    assert A[0] == -7


def test_recursion_through_barriers_is_a_compile_error():
    text = kernel("f", [], """
  "diffgpu.barrier"() : () -> ()
  func.call @f() : () -> ()
  return""", is_kernel=False) + kernel("k", [], """
  func.call @f() : () -> ()
  return""")
    with pytest.raises(CompileError, match="nest too deeply"):
        compile_host(text)


OOB = kernel("oob", [("A", mem("f32", 2)), ("B", mem("i64")), ("i", "index"), ("j", "index")], f"""
  %s = "diffgpu.shared_alloc"() : () -> memref<4xi64, #gpu.address_space<workgroup>>
  %c0 = arith.constant 0 : index
  %v = memref.load %A[%i, %j] : {mem("f32", 2)}
  memref.store %v, %A[%c0, %c0] : {mem("f32", 2)}
  %one = arith.constant 1 : i64
  memref.store %one, %s[%j] : memref<4xi64, #gpu.address_space<workgroup>>
  %old = "diffgpu.atomic_add"(%B, %one, %i) : ({mem("i64")}, i64, index) -> i64
  return""")


@pytest.mark.parametrize("i, j, where", [
    (0, 0, None), (1, 3, None), (4, 0, ":5:8"), (0, 5, ":5:8"), (-1, 0, ":5:8"),
    (2, 4, ":8:3"), (3, 1, ":9:10")])
def test_out_of_bounds_is_an_error_not_a_crash(i, j, where):
    """Out-of-range (also negative) indices of loads, stores, shared memory
    and atomics raise OutOfBoundsError naming the first access; they never
    touch memory outside the arrays."""
    prog = compile_host(OOB)
    parent = np.zeros((6, 7), np.float32)
    A = parent[1:5, 1:6]  # 4 x 5 view: out-of-bounds reads would see the parent
    A[...] = 1
    parent[0] = parent[5] = 9
    B = np.zeros(3, np.int64)
    types = (ArrayType("float32", 2), ArrayType("int64", 1), ScalarType("int64"),
             ScalarType("int64"))
    if where is None:
        prog.launch("oob", (A, B, i, j), types, (1, 1, 1), (1, 1, 1))
        assert B[i] == 1
        return
    with pytest.raises(OutOfBoundsError, match=f"kernel 'oob': array index out of bounds at .*{where}"):
        prog.launch("oob", (A, B, i, j), types, (1, 1, 1), (1, 1, 1))
    assert (parent[0] == 9).all() and (parent[5] == 9).all() and not parent[1:5, 6].any()
    assert B.sum() <= 1
    prog.launch("oob", (A, B, 0, 0), types, (1, 1, 1), (1, 1, 1))  # status was cleared


TAPE = kernel("tape", [("A", mem("i64"))], f"""
  %box = memref.alloca() : memref<1xmemref<?xi64>>
  %buf = memref.alloca() : memref<4xi64>
  %cast = memref.cast %buf : memref<4xi64> to memref<?xi64>
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  memref.store %cast, %box[%c0] : memref<1xmemref<?xi64>>
  %seven = arith.constant 7 : i64
  %t = memref.load %box[%c0] : memref<1xmemref<?xi64>>
  memref.store %seven, %t[%c3] : memref<?xi64>
  %v = memref.load %buf[%c3] : memref<4xi64>
  memref.store %v, %A[%c0] : {mem("i64")}
  return""")


def test_memref_of_memref_tapes_compile():
    """Loads/stores of memref values (autodiff's tapes) are not bounds-checked
    (no zero value to give): they used to abort MLIR."""
    prog = compile_host(TAPE)
    A = np.zeros(1, np.int64)
    prog.launch("tape", (A,), array_types(A), (1, 1, 1), (1, 1, 1))
    assert A[0] == 7


def test_gpu_target_functions_are_refused():
    text = ROW_SUMS + kernel("g", [], "  return").replace(
        HOST_TARGET, '#nvvm.target<O = 3, chip = "sm_90">')
    with pytest.raises(CompileError, match="'@g' targets sm_90"):
        compile_host(text)


def test_invalid_ir_is_a_compile_error():
    with pytest.raises(CompileError, match="invalid diffgpu IR"):
        compile_host("func.func @k(")
