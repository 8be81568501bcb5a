"""Helpers of the host-IR tests: hand-written diffgpu IR kernels (docs/IR.md),
compiled once per text with `compile_host`, launched on numpy arrays."""
from __future__ import annotations

import functools

import numpy as np

from diffgpu.lowering.common.targets import HOST_TARGET
from diffgpu.driver.compiler import compile_host as _compile_host
from diffgpu.types import ArrayType


@functools.lru_cache(maxsize=None)
def compile_host(text):
    """Each test module text compiles once per session."""
    return _compile_host(text)


NP = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}
DTYPE = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64"}


def mem(t: str, ndim: int = 1) -> str:
    dims = "?x" * ndim
    strides = ", ".join(["?"] * ndim)
    return f"memref<{dims}{t}, strided<[{strides}], offset: ?>>"


def kernel(name: str, params, body: str, is_kernel: bool = True, results: str = "") -> str:
    """A func.func with the host target; params: [(name, type text)]."""
    args = ", ".join(f"%{n}: {t}" for n, t in params)
    attrs = ("diffgpu.kernel, " if is_kernel else "") + f"diffgpu.target = {HOST_TARGET}"
    res = f" -> {results}" if results else ""
    return f"func.func @{name}({args}){res} attributes {{{attrs}}} {{\n{body}\n}}\n"


def global_id_1d(out: str, out_type: str) -> str:
    """Body prologue: %i = global thread id along x; %in = %i < dim(out, 0)."""
    return f"""  %tid = "diffgpu.thread_id"() {{dim = 0 : i64}} : () -> index
  %bid = "diffgpu.block_id"() {{dim = 0 : i64}} : () -> index
  %bdim = "diffgpu.block_dim"() {{dim = 0 : i64}} : () -> index
  %gi0 = arith.muli %bid, %bdim : index
  %i = arith.addi %gi0, %tid : index
  %c0 = arith.constant 0 : index
  %n = memref.dim %{out}, %c0 : {out_type}
  %in = arith.cmpi slt, %i, %n : index
"""


def elementwise(name: str, in_types, out_type: str, body: str) -> str:
    """`out[i] = body(x0[i], x1[i], ...)`; body defines %r from %x0, %x1, ..."""
    params = [("out", mem(out_type))] + [(f"a{k}", mem(t)) for k, t in enumerate(in_types)]
    loads = "\n".join(f"    %x{k} = memref.load %a{k}[%i] : {mem(t)}"
                      for k, t in enumerate(in_types))
    text = global_id_1d("out", mem(out_type)) + f"""  scf.if %in {{
{loads}
    {body.strip()}
    memref.store %r, %out[%i] : {mem(out_type)}
  }}
  return"""
    return kernel(name, params, text)


def array_types(*arrays):
    return tuple(ArrayType(a.dtype.name, a.ndim) for a in arrays)


def launch_1d(prog, name, arrays, n, block=32):
    """Launch `name` on arrays with enough 1-d blocks for n elements."""
    grid = max(1, -(-n // block))
    prog.launch(name, arrays, array_types(*arrays), (grid, 1, 1), (block, 1, 1))


ROW_SUMS = kernel("rowsum", [("A", mem("f32", 2)), ("out", mem("f32"))],
                  global_id_1d("out", mem("f32")) + """  scf.if %in {
    %c1 = arith.constant 1 : index
    %m = memref.dim %A, %c1 : """ + mem("f32", 2) + """
    %zero = arith.constant 0.0 : f32
    %s = scf.for %j = %c0 to %m step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %A[%i, %j] : """ + mem("f32", 2) + """
      %pos = arith.cmpf ogt, %v, %zero : f32
      %w = scf.if %pos -> (f32) {
        scf.yield %v : f32
      } else {
        %two = arith.constant 2.0 : f32
        %h = arith.divf %v, %two : f32
        scf.yield %h : f32
      }
      %acc2 = arith.addf %acc, %w : f32
      scf.yield %acc2 : f32
    }
    memref.store %s, %out[%i] : """ + mem("f32") + """
  }
  return""")
