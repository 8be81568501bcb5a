"""Affine index analysis: an index as a polynomial in the thread's global ids
and launch-uniform values, read from the IR.

    affine(v)       -> Poly, or a Why (the reason it is not one)
    stencil_index(indices)
                    -> (dims, offsets): position p is gid(dims[p]) + offsets[p],
                       each offset a Poly without global ids; or a Why

A Poly maps monomials to integer coefficients; a monomial is a sorted tuple
of atoms:

- `("gid", d)`: `block_id(d) * block_dim(d) + thread_id(d)` (facts/indices.py
  `global_dim`);
- `("arg", n)`: the integer argument n of the function (a kernel's `W`);
- `("dim", n, k)`: `memref.dim` of argument n along constant axis k;

and the empty monomial `()` holds the constant. Index casts, sign
extensions, `addi`, `subi`, `muli` (of any two polynomials) and integer
constants are read through, and so is a value kept in the reverse sweep's
tape (a private rank-0 alloca stored once: indices.py `_through_tape`). So
`x[i + 1]`, `x[i + a * W + b]` (a, b constants once the derivative's loops
are unrolled), `x[i + W]`, `x[i - 1, j + 2]` are stencil indices; `x[i * W + j]`
is not (the global id has coefficient W), nor `x[i + k]` with `k` a loop
variable or a loaded value.

Every atom is one value for the whole launch, so an offset is the same in
every thread: `materialize(poly, fn)` rebuilds it at the current insertion
point from `fn`'s arguments. Used by the stencil adjoints
(lowering/reduce/stencil_adjoint.py, lowering/autodiff/functional/transpose.py)
and by dg.vjp's access analysis.
"""
from __future__ import annotations

from dataclasses import dataclass

from diffgpu._mlir import arith, ir, memref
from diffgpu.dialects import names as N

from diffgpu.lowering.common.ir_util import is_index, is_int
from diffgpu.lowering.facts.indices import _through_tape, global_dim

#: monomials a polynomial may hold (a product of many sums grows fast)
MAX_TERMS = 32


@dataclass(frozen=True)
class Why:
    """Why a value is not an affine index: `reason`, for remarks."""
    reason: str

    def __bool__(self) -> bool:
        return False


class Poly(dict):
    """{monomial: coefficient} without zero coefficients (see the module docstring)."""

    def key(self) -> tuple:
        """A hashable, order-independent form (equal polynomials, equal keys)."""
        return tuple(sorted(self.items()))

    def gids(self) -> list:
        return [m for m in self if any(a[0] == "gid" for a in m)]

    def without(self, mono) -> "Poly":
        return Poly({m: c for m, c in self.items() if m != mono})

    def const(self):
        """The integer value when the polynomial is a constant, else None."""
        return self.get((), 0) if all(m == () for m in self) else None

    def text(self) -> str:
        if not self:
            return "0"
        parts = []
        order = lambda mc: (not any(a[0] == "gid" for a in mc[0]), not mc[0], mc[0])  # noqa: E731
        for m, c in sorted(self.items(), key=order):
            name = "*".join(_atom_text(a) for a in sorted(m, key=lambda a: a[0] != "gid"))
            if not name:
                parts.append(str(c))
            else:
                parts.append(name if c == 1 else f"{c}*{name}")
        return " + ".join(parts).replace("+ -", "- ")


def _atom_text(a) -> str:
    if a[0] == "gid":
        return f"gid{a[1]}"
    if a[0] == "arg":
        return f"arg{a[1]}"
    return f"dim(arg{a[1]}, {a[2]})"


def _add(p, q, sign=1) -> Poly:
    out = Poly(p)
    for m, c in q.items():
        out[m] = out.get(m, 0) + sign * c
        if not out[m]:
            del out[m]
    return out


def _mul(p, q):
    out = Poly()
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            m = tuple(sorted(m1 + m2))
            out[m] = out.get(m, 0) + c1 * c2
            if not out[m]:
                del out[m]
    return out if len(out) <= MAX_TERMS else Why("index too large an expression")


def _op(v):
    owner = v.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _arg_number(v):
    """n when `v` is argument n of the function's entry block, else None."""
    owner = v.owner
    if not isinstance(owner, ir.Block):
        return None
    parent = owner.owner
    parent = getattr(parent, "operation", parent)
    if parent is None or parent.name != "func.func" or owner != parent.regions[0].blocks[0]:
        return None
    return ir.BlockArgument(v).arg_number


def affine(v, depth: int = 0):
    """The Poly of integer/index value `v`, or a Why."""
    if depth > 64:
        return Why("index too deep an expression")
    v = _through_tape(v)
    d = global_dim(v)
    if d is not None:
        return Poly({(("gid", d),): 1})
    n = _arg_number(v)
    if n is not None:
        return Poly({(("arg", n),): 1}) if is_int(v.type) or is_index(v.type) else \
            Why("index is not an integer")
    op = _op(v)
    if op is None:
        return Why("index depends on a loop variable")
    name = op.name
    if name == "arith.constant":
        attr = op.attributes["value"]
        if not isinstance(attr, ir.IntegerAttr):
            return Why("index is not an integer constant")
        c = ir.IntegerAttr(attr).value
        return Poly({(): c}) if c else Poly()
    if name in ("arith.index_cast", "arith.extsi"):
        return affine(op.operands[0], depth + 1)
    if name == "memref.dim":
        n = _arg_number(op.operands[0])
        k = affine(op.operands[1], depth + 1)
        if n is None or not k or k.const() is None:
            return Why("index uses the size of an array that is not an argument")
        return Poly({(("dim", n, k.const()),): 1})
    if name in ("arith.addi", "arith.subi", "arith.muli"):
        a = affine(op.operands[0], depth + 1)
        if not isinstance(a, Poly):
            return a
        b = affine(op.operands[1], depth + 1)
        if not isinstance(b, Poly):
            return b
        if name == "arith.muli":
            return _mul(a, b)
        return _add(a, b, 1 if name == "arith.addi" else -1)
    if name == "memref.load":
        return Why("index is loaded from memory")
    if name in (N.THREAD_ID, N.BLOCK_ID):
        return Why("index uses the thread or block id outside a global id")
    return Why(f"index computed by '{name}'")


def stencil_index(indices):
    """(dims, offsets) when every index position is gid(d) + offset (offset
    a Poly of launch-uniform atoms, distinct d per position), else a Why."""
    dims, offs = [], []
    for v in indices:
        p = affine(v)
        if not isinstance(p, Poly):
            return p
        g = p.gids()
        if len(g) != 1 or len(g[0]) != 1 or p[g[0]] != 1:
            return Why(f"index [{p.text()}] not affine in one thread id with coefficient 1"
                       if g else f"index [{p.text()}] does not depend on the thread id")
        dims.append(g[0][0][1])
        offs.append(p.without(g[0]))
    if len(set(dims)) != len(dims):
        return Why("two index positions use the same thread id")
    return tuple(dims), tuple(offs)


def materialize(poly, fn):
    """The index value of `poly` (no gid atoms), built at the current
    insertion point from the arguments of `fn`."""
    index = ir.IndexType.get()
    args = fn.regions[0].blocks[0].arguments
    total = None
    for mono, c in sorted(poly.items()):
        term = arith.constant(index, c)
        for a in mono:
            if a[0] == "arg":
                x = args[a[1]]
                x = x if is_index(x.type) else arith.index_cast(index, x)
            elif a[0] == "dim":
                x = memref.dim(args[a[1]], arith.constant(index, a[2]))
            else:
                raise ValueError("materialize: a global id in an offset")
            term = arith.muli(term, x)
        total = term if total is None else arith.addi(total, term)
    return total if total is not None else arith.constant(index, 0)


__all__ = ["Poly", "Why", "affine", "stencil_index", "materialize"]
