"""Text emission of one MLIR function body.

Upstream ops are written in their custom syntax, diffgpu ops in generic syntax;
every op gets the location `self.loc`, which the visitor keeps set to the
Python node being lowered. Regions are captured with `capture()`.
"""
from __future__ import annotations

import math
import struct
from contextlib import contextmanager

from diffgpu.frontend.source import FrontendError
from diffgpu.frontend.types_infer import Scalar
from diffgpu.frontend.values import Const, Value

INT_RANGE = {"i1": (0, 1), "i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1),
             "index": (-2**63, 2**63 - 1)}
I1 = Scalar("i1")
I64 = Scalar("i64")
INDEX = Scalar("index")


def float_literal(v: float, ty: str) -> str:
    if math.isfinite(v):
        r = repr(float(v))  # shortest round-trip; MLIR needs a '.' in the mantissa
        mant, e, exp = r.partition("e")
        if "." not in mant:
            mant += ".0"
        return mant + e + exp
    if ty == "f32":
        return "0x%08X" % struct.unpack("<I", struct.pack("<f", v))[0]
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", v))[0]


class Emitter:
    def __init__(self):
        self.count = 0
        self.buf: list[str] = []
        self.loc = "loc(unknown)"
        #: i64 value ref -> the index Value it was cast from (cast back for free)
        self.index_origin: dict[str, Value] = {}

    def fresh(self) -> str:
        self.count += 1
        return f"%v{self.count}"

    def line(self, text: str) -> None:
        self.buf.append(f"{text} {self.loc}")

    def raw(self, text: str) -> None:
        self.buf.append(text)

    def op(self, text: str, ty) -> Value:
        name = self.fresh()
        self.line(f"{name} = {text}")
        return Value(name, ty)

    def multi(self, text: str, types: list) -> list[Value]:
        """An op with len(types) results."""
        if not types:
            self.line(text)
            return []
        if len(types) == 1:
            return [self.op(text, types[0])]
        name = self.fresh()
        self.line(f"{name}:{len(types)} = {text}")
        return [Value(f"{name}#{k}", t) for k, t in enumerate(types)]

    @contextmanager
    def capture(self):
        """Collect the lines emitted inside the block into a new list."""
        saved, self.buf = self.buf, []
        lines = self.buf
        try:
            yield lines
        finally:
            self.buf = saved

    @contextmanager
    def into(self, lines: list):
        saved, self.buf = self.buf, lines
        try:
            yield
        finally:
            self.buf = saved

    # constants and conversions -------------------------------------------
    def constant(self, v, ty: Scalar) -> Value:
        t = ty.ty
        if t in ("f32", "f64"):
            if t == "f32" and math.isfinite(v) and abs(v) > 3.4028234663852886e38:
                v = math.copysign(math.inf, v)
            return self.op(f"arith.constant {float_literal(float(v), t)} : {t}", ty)
        if t == "i1":
            return self.op(f"arith.constant {'true' if v else 'false'}", ty)
        v = int(v)
        lo, hi = INT_RANGE[t]
        if not lo <= v <= hi:
            raise FrontendError(f"integer constant {v} does not fit in {ty}")
        return self.op(f"arith.constant {v} : {t}", ty)

    def value(self, v, ty: Scalar | None = None) -> Value:
        """Materialize a Const (in `ty`, or its own type) or cast a Value."""
        if isinstance(v, Const):
            target = ty or v.type
            val = v.value
            if target.ty in ("i32", "i64", "index", "i1") and isinstance(val, float):
                if not math.isfinite(val):
                    raise FrontendError(f"cannot convert {val} to an integer")
                val = int(val)
            out = self.constant(val, target.strong())
            return Value(out.ref, target)
        if ty is None:
            return v
        return self.cast(v, ty)

    def cast(self, v: Value, ty: Scalar) -> Value:
        """Numeric conversion (numpy `astype` semantics) of a scalar Value."""
        src, dst = v.type.ty, ty.ty
        if src == dst:
            return Value(v.ref, ty)
        if dst == "i1":
            return self.truth(v)
        s = f"{v.ref} : {src} to {dst}"
        if dst == "index" and v.ref in self.index_origin:
            return self.index_origin[v.ref]
        if src == "index" and dst == "i64":
            out = self.op(f"arith.index_cast {s}", ty)
            self.index_origin[out.ref] = v
            return out
        if "index" in (src, dst):
            if src in ("f32", "f64"):
                v = self.cast(v, I64)
                s = f"{v.ref} : i64 to index"
            elif src == "i1":
                v = self.cast(v, I64)
                s = f"{v.ref} : i64 to index"
            elif dst in ("f32", "f64"):
                v = self.cast(v, I64)
                return self.cast(v, ty)
            return self.op(f"arith.index_cast {s}", ty)
        fs, fd = src in ("f32", "f64"), dst in ("f32", "f64")
        if fs and fd:
            opname = "arith.extf" if dst == "f64" else "arith.truncf"
        elif fs:
            opname = "arith.fptosi"
        elif fd:
            opname = "arith.uitofp" if src == "i1" else "arith.sitofp"
        else:
            wide = {"i1": 1, "i32": 32, "i64": 64}
            if wide[dst] > wide[src]:
                opname = "arith.extui" if src == "i1" else "arith.extsi"
            else:
                opname = "arith.trunci"
        return self.op(f"{opname} {s}", ty)

    def truth(self, v: Value) -> Value:
        """Python truthiness as i1."""
        t = v.type.ty
        if t == "i1":
            return v
        zero = self.constant(0.0 if t in ("f32", "f64") else 0, Scalar(t))
        if t in ("f32", "f64"):
            return self.op(f"arith.cmpf une, {v.ref}, {zero.ref} : {t}", I1)
        return self.op(f"arith.cmpi ne, {v.ref}, {zero.ref} : {t}", I1)

    def to_index(self, v: Value) -> Value:
        return self.cast(v, INDEX)
