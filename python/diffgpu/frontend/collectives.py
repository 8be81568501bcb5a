"""Calls of the collective builtins (docs/collectives.md): warp and block
reductions, shuffles, the block scan, and the atomics beside `atomic_add`.

    dg.warp_sum(v)          "diffgpu.warp_reduce"(%v) {kind = "sum"}
    dg.block_max(v)         "diffgpu.block_reduce"(%v) {kind = "max"}
    dg.block_scan(v)        "diffgpu.block_scan"(%v) {reverse = false}
    dg.shfl_xor(v, 16)      "diffgpu.shuffle"(%v, %c16_i32) {mode = "xor"}
    dg.shfl_idx(v, lane)    "diffgpu.shuffle"(%v, %lane_i32) {mode = "idx"}
    dg.atomic_max(A, i, v)  "diffgpu.atomic_rmw"(%A, %v, %i) {kind = "max"}
    dg.atomic_sub(A, i, v)  "diffgpu.atomic_add"(%A, -v, %i)

A constant offset of `shfl_xor`/`shfl_up`/`shfl_down` must be in 0..31 (a
compile error otherwise) and becomes the op's mode; an offset that is a
value (a loop variable) becomes `shfl_idx` of the source lane `lane ^ k`,
`lane - k` or `lane + k`, the thread's own lane where that is not a lane of
the warp. The lane of `shfl_idx` is any integer, of which the low five bits
count (lane & 31, as on NVIDIA GPUs).
"""
from __future__ import annotations

import ast

from diffgpu.dialects import names as N
from diffgpu.frontend.emitter import I64
from diffgpu.frontend.source import FrontendError
from diffgpu.frontend.types_infer import DTYPE_OF, STORAGE, Scalar
from diffgpu.frontend.values import Const, Value, describe

I32 = Scalar("i32")
#: builtin -> (op, kind)
REDUCTIONS = {f"{scope}_{kind}": ({"warp": N.WARP_REDUCE, "block": N.BLOCK_REDUCE}[scope], kind)
              for scope in ("warp", "block") for kind in N.REDUCE_KINDS}


class CollectiveMixin:
    """`builtin_<name>` methods found by BuiltinMixin.visit_Call."""

    def _collective_value(self, node, name):
        v = self.eval_scalar(node, f"{name}() value")
        t = v.type
        if t.ty not in ("f32", "f64", "i32", "i64"):
            raise FrontendError(f"{name}() takes a float or integer value, got {describe(v)}",
                                node)
        if isinstance(v, Const) and t.weak:  # a literal: float64 / int64, as elsewhere
            t = t.strong()
        return self.em.value(v, t.strong())

    def _reduce(self, node, name):
        (a,) = self.call_args(node, 1, 1, name)
        x = self._collective_value(a, name)
        op, kind = REDUCTIONS[name]
        return self.em.op(f'"{op}"({x.ref}) {{kind = "{kind}"}} : ({x.type.ty}) -> {x.type.ty}',
                          x.type)

    def builtin_warp_sum(self, node):
        return self._reduce(node, "warp_sum")

    def builtin_warp_max(self, node):
        return self._reduce(node, "warp_max")

    def builtin_warp_min(self, node):
        return self._reduce(node, "warp_min")

    def builtin_block_sum(self, node):
        return self._reduce(node, "block_sum")

    def builtin_block_max(self, node):
        return self._reduce(node, "block_max")

    def builtin_block_min(self, node):
        return self._reduce(node, "block_min")

    def builtin_block_scan(self, node):
        (a,) = self.call_args(node, 1, 1, "block_scan")
        x = self._collective_value(a, "block_scan")
        t = x.type.ty
        return self.em.op(f'"{N.BLOCK_SCAN}"({x.ref}) {{reverse = false}} : ({t}) -> {t}', x.type)

    def _shuffle(self, node, mode):
        name = f"shfl_{mode}"
        v_node, k_node = self.call_args(node, 2, 2, name)
        x = self._collective_value(v_node, name)
        if mode == "idx":
            k = self.eval_scalar(k_node, f"{name}() lane")
            if not (k.type.is_int or k.type.ty == "index"):
                raise FrontendError(f"{name}() lane must be an integer, got {describe(k)}",
                                    k_node)
            if isinstance(k, Const):
                lane = self.em.constant(k.value & (N.WARP_SIZE - 1), I32)
            else:
                lane = self.em.cast(self.em.value(k), I32)
        else:
            what = "mask" if mode == "xor" else "offset"
            k = self.eval_scalar(k_node, f"{name}() {what}")
            if not (k.type.is_int or k.type.ty == "index"):
                raise FrontendError(f"{name}() {what} must be an integer, got {describe(k)}",
                                    k_node)
            if not isinstance(k, Const):  # a value: the same exchange through shfl_idx
                mode, lane = "idx", self._source_lane(mode, k)
            elif not 0 <= k.value < N.WARP_SIZE:
                raise FrontendError(f"{name}() {what} must be in 0..{N.WARP_SIZE - 1} (lanes "
                                    f"of a warp), got {k.value}", k_node)
            else:
                lane = self.em.constant(k.value, I32)
        t = x.type.ty
        return self.em.op(f'"{N.SHUFFLE}"({x.ref}, {lane.ref}) {{mode = "{mode}"}} : '
                          f'({t}, i32) -> {t}', x.type)

    def _source_lane(self, mode, k):
        """i32 source lane of shfl_xor/up/down by a non-constant `k`: lane ^ k,
        lane - k, lane + k where that is a lane of the warp (0..31), else
        the thread's own lane (its own value)."""
        em = self.em
        g = [self._geometry(n, d) for n, d in (("thread_id", 0), ("thread_id", 1),
                                                ("thread_id", 2), ("block_dim", 0),
                                                ("block_dim", 1))]
        t0, t1, t2, b0, b1 = (em.cast(v, I64) for v in g)
        lin = em.op(f"arith.muli {b1.ref}, {t2.ref} : i64", I64)
        lin = em.op(f"arith.addi {t1.ref}, {lin.ref} : i64", I64)
        lin = em.op(f"arith.muli {b0.ref}, {lin.ref} : i64", I64)
        lin = em.op(f"arith.addi {t0.ref}, {lin.ref} : i64", I64)
        c32 = em.constant(N.WARP_SIZE, I64)
        lane = em.op(f"arith.remui {lin.ref}, {c32.ref} : i64", I64)
        kk = em.cast(em.value(k), I64)
        op = {"xor": "arith.xori", "up": "arith.subi", "down": "arith.addi"}[mode]
        src = em.op(f"{op} {lane.ref}, {kk.ref} : i64", I64)
        ok = em.op(f"arith.cmpi ult, {src.ref}, {c32.ref} : i64", Scalar("i1"))  # 0..31
        pick = em.op(f"arith.select {ok.ref}, {src.ref}, {lane.ref} : i64", I64)
        return em.cast(pick, I32)

    def builtin_shfl_xor(self, node):
        return self._shuffle(node, "xor")

    def builtin_shfl_up(self, node):
        return self._shuffle(node, "up")

    def builtin_shfl_down(self, node):
        return self._shuffle(node, "down")

    def builtin_shfl_idx(self, node):
        return self._shuffle(node, "idx")

    # atomics ------------------------------------------------------------------
    def _atomic_operands(self, node, name):
        arr_node, idx_node, val_node = self.call_args(node, 3, 3, name)
        arr = self.visit(arr_node)
        if not (isinstance(arr, Value) and arr.is_array):
            raise FrontendError(f"{name}() needs an array, got {describe(arr)}", arr_node)
        if arr.type.elem in STORAGE:
            raise FrontendError(f"{name}() on a {DTYPE_OF[arr.type.elem]} array is not "
                                "supported (16-bit arrays take dg.atomic_add); use a float32 "
                                "array", arr_node)
        fake = ast.copy_location(ast.Subscript(arr_node, idx_node, ast.Load()), idx_node)
        idx = self.indices(arr, fake)
        v = self.eval_scalar(val_node, f"{name}() value")
        et = Scalar(arr.type.elem)
        return arr, idx, self.em.value(v, et), et

    def _atomic_rmw(self, node, kind):
        arr, idx, x, et = self._atomic_operands(node, f"atomic_{kind}")
        operands = ", ".join([arr.ref, x.ref] + [i.ref for i in idx])
        types = ", ".join([arr.type.mlir(), et.ty] + ["index"] * len(idx))
        return self.em.op(f'"{N.ATOMIC_RMW}"({operands}) {{kind = "{kind}"}} : ({types}) -> '
                          f'{et.ty}', et)

    def builtin_atomic_max(self, node):
        return self._atomic_rmw(node, "max")

    def builtin_atomic_min(self, node):
        return self._atomic_rmw(node, "min")

    def builtin_atomic_sub(self, node):
        """atomic_add of -v: its derivative is the add's (dv = -dA[idx])."""
        arr, idx, x, et = self._atomic_operands(node, "atomic_sub")
        if et.is_float:
            neg = self.em.op(f"arith.negf {x.ref} : {et.ty}", et)
        else:
            zero = self.em.constant(0, et)
            neg = self.em.op(f"arith.subi {zero.ref}, {x.ref} : {et.ty}", et)
        operands = ", ".join([arr.ref, neg.ref] + [i.ref for i in idx])
        types = ", ".join([arr.type.mlir(), et.ty] + ["index"] * len(idx))
        return self.em.op(f'"{N.ATOMIC_ADD}"({operands}) : ({types}) -> {et.ty}', et)
