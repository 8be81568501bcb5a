"""lowering/facts/affine.py: indices as polynomials of global ids and
launch-uniform values, read from the frontend's IR of real kernels."""
from __future__ import annotations

import numpy as np

import diffgpu as dg
from diffgpu._mlir import ir
from diffgpu.lowering.common import session
from diffgpu.lowering.common.ir_util import walk
from diffgpu.lowering.facts.affine import Poly, Why, stencil_index


@dg.kernel
def forms(y, x, idx, W):
    i = dg.global_id(0)
    j = dg.global_id(1)
    if i < y.shape[0] and j < y.shape[1]:
        a = x[i + 1, j - 2]              # a 2-D stencil index
        b = x[i + 2 * W + 3, j]          # a runtime offset
        c = x[i * W, j]                  # the thread id scaled by W
        d = x[idx[i], j]                 # a loaded index
        e = x[3, j + W * W]              # a constant position
        f = x[i + y.shape[1], j]         # an array size in the offset
        s = 0.0
        for k in range(2):
            s += x[i + k, j]             # a loop variable (the primal keeps the loop)
        y[i, j] = a + b + c + d + e + f + s


def _loads():
    """stencil_index of every load of x in `forms`, in program order."""
    y, x = np.zeros((4, 4)), np.zeros((8, 8))
    text = forms.ir(y, x, np.zeros(4, np.int64), 2, stage="dialect")
    out = []
    with session.context(), ir.Location.unknown():
        m = ir.Module.parse(text)
        fn = [o for o in m.body.operations if "diffgpu.kernel" in o.attributes][0]
        x_arg = fn.regions[0].blocks[0].arguments[1]
        for op in walk(fn):  # program order
            if op.name == "memref.load" and op.operands[0] == x_arg:
                out.append(stencil_index(list(op.operands)[1:]))
    return out


def test_each_index_form():
    got = _loads()
    assert len(got) == 7
    a, b, c, d, e, f, s = got
    assert a == ((0, 1), (Poly({(): 1}), Poly({(): -2})))
    assert b[0] == (0, 1) and b[1][0] == Poly({(): 3, (("arg", 3),): 2}) and b[1][1] == Poly()
    assert b[1][0].text() == "2*arg3 + 3"
    assert isinstance(c, Why) and "[gid0*arg3]" in c.reason and "not affine" in c.reason
    assert isinstance(d, Why) and d.reason == "index is loaded from memory"
    assert isinstance(e, Why) and "does not depend on the thread id" in e.reason
    assert f[1][0] == Poly({(("dim", 0, 1),): 1})
    assert isinstance(s, Why) and s.reason == "index depends on a loop variable"
    assert not Why("x")  # a Why is falsy


def test_keys_are_order_independent():
    p = Poly({(): 1, (("arg", 2),): 3})
    q = Poly({(("arg", 2),): 3, (): 1})
    assert p.key() == q.key() and p.const() is None and Poly({(): 4}).const() == 4
