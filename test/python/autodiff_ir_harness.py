"""The harness of the numeric autodiff tests on hand-written IR (host
target): kernels as text, their differentiating wrappers, and the checks.
Used by test_autodiff_ir_rules.py (one op per kernel) and test_autodiff_ir.py
(memory, control flow, calls).

Each kernel is differentiated by a `diffgpu.autodiff` (reverse) or
`diffgpu.fwddiff` (forward) op in a second kernel, compiled with
`diffgpu-to-host` and run on numpy arrays. Reverse mode is checked with the
dot-product test <D, J V> = <J^T D, V> for random D and V, J V from central
finite differences in float64; forward mode compares J V directly:

    case = Case("k_sin", [("X", A64), ("Z", A64)], body, ["dup", "dup"], inputs)
    dot_test(case)   # compiles the kernel + its reverse-mode wrapper, once
    fwd_test(case)   # the kernel + its forward-mode wrapper, once
"""
from __future__ import annotations

import numpy as np

from diffgpu.driver.compiler import compile_host
from diffgpu.types import ArrayType, ScalarType

HOST = '#llvm.target<triple = "x86_64-unknown-linux-gnu", chip = "generic">'
GRID, BLOCK = (2, 1, 1), (3, 1, 1)
N = 6  # elements per array = threads


def arr(t, ndim=1):
    dims = "?x" * ndim
    return f"memref<{dims}{t}, strided<[{', '.join(['?'] * ndim)}], offset: ?>>"


def kernel(name, params, body, attrs="diffgpu.kernel, "):
    """func.func @name(params) with the host target; params: [(name, type)]."""
    sig = ", ".join(f"%{n}: {t}" for n, t in params)
    return (f"func.func @{name}({sig}) attributes {{{attrs}diffgpu.target = {HOST}}} {{\n"
            f"{body}\n  return\n}}\n")


def diff_kernel(callee, params, acts, mode="rev"):
    """A kernel @d_<callee> applying diffgpu.autodiff/fwddiff to @callee.
    Gradients of active scalars are summed atomically into %G[k]."""
    from diffgpu.dialects import names as N
    dparams, operands, types, groups = [], [], [], []
    for (n, t), a in zip(params, acts):
        dparams.append((n, t))
        operands.append(f"%{n}")
        types.append(t)
        if a in ("dup", "dupnoneed"):
            dparams.append((f"d_{n}", t))
            operands.append(f"%d_{n}")
            types.append(t)
            groups.append(2)
        else:
            groups.append(1)
    grads = [t for (n, t), a in zip(params, acts) if a == "active"]
    if grads:
        dparams.append(("G", arr("f64")))
    lhs = f"%g:{len(grads)} = " if grads else ""
    acts_s = ", ".join(f'"{a}"' for a in acts)
    op = "diffgpu.autodiff" if mode == "rev" else "diffgpu.fwddiff"
    layout = N.diff_layout(N.AUTODIFF if mode == "rev" else N.FWDDIFF, groups, types, grads)
    attrs = "".join(f", {k} = array<i32: {', '.join(map(str, v))}>" for k, v in layout.items())
    body = (f'  {lhs}"{op}"({", ".join(operands)}) {{callee = @{callee}, '
            f"activity = [{acts_s}], diffgpu.target = {HOST}{attrs}}} : "
            f"({', '.join(types)}) -> ({', '.join(grads)})\n")
    for k, t in enumerate(grads):
        g = f"%g#{k}"
        if t == "f32":
            body += f"  %g64_{k} = arith.extf {g} : f32 to f64\n"
            g = f"%g64_{k}"
        body += (f"  %gk{k} = arith.constant {k} : index\n"
                 f'  %ga{k} = "diffgpu.atomic_add"(%G, {g}, %gk{k}) : ({arr("f64")}, f64, index) -> f64\n')
    return kernel(f"d_{callee}", dparams, body)


def _types(params):
    out = []
    for _, t in params:
        if t.startswith("memref"):
            elem = t.split("x")[-1].split(",")[0]
            ndim = t.count("?x")
            out.append(ArrayType({"f32": "float32", "f64": "float64", "i32": "int32",
                                  "i64": "int64"}[elem], ndim))
        else:
            out.append(ScalarType({"f32": "float32", "f64": "float64", "i32": "int32",
                                   "i64": "int64", "index": "int64"}[t]))
    return out


class Case:
    """A kernel, its activities, and inputs; runs primal, reverse, forward."""

    def __init__(self, name, params, body, acts, inputs, extra="", grid=GRID, block=BLOCK):
        self.name, self.params, self.acts, self.inputs = name, params, acts, inputs
        self.grid, self.block = grid, block
        self.src = kernel(name, params, body)
        self.extra = extra
        self._prog = {}

    def fwd_acts(self):
        """Forward mode: an active scalar becomes dup (its tangent a scalar)."""
        return ["dup" if a == "active" else a for a in self.acts]

    def prog(self, mode):
        if mode not in self._prog:
            acts = self.acts if mode == "rev" else self.fwd_acts()
            text = self.extra + self.src + diff_kernel(self.name, self.params, acts, mode)
            self._prog[mode] = compile_host(text)
        return self._prog[mode]

    def primal(self, inputs):
        """The kernel alone, on copies of `inputs`; it runs from whichever
        program is built already (both hold it): one JIT per mode, not two."""
        vals = [np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in inputs]
        prog = next(iter(self._prog.values()), None) or self.prog("rev")
        prog.launch(self.name, vals, _types(self.params), self.grid, self.block)
        return vals

    def reverse(self, inputs, shadows):
        """(arrays after, shadows after, scalar gradients)."""
        vals, args, dargs = [], [], []
        for (n, t), a, v in zip(self.params, self.acts, inputs):
            v = np.array(v, copy=True) if isinstance(v, np.ndarray) else v
            vals.append(v)
            args.append(v)
            if a in ("dup", "dupnoneed"):
                s = np.array(shadows[n], copy=True)
                dargs.append((n, s))
                args.append(s)
        grads = [a for a in self.acts if a == "active"]
        G = np.zeros(max(len(grads), 1))
        if grads:
            args.append(G)
        types = _types(diff_params(self.params, self.acts))
        self.prog("rev").launch(f"d_{self.name}", args, types, self.grid, self.block)
        return vals, dict(dargs), G[:len(grads)]

    def forward(self, inputs, tangents):
        args = []
        vals, touts = [], {}
        for (n, t), a, v in zip(self.params, self.fwd_acts(), inputs):
            v = np.array(v, copy=True) if isinstance(v, np.ndarray) else v
            vals.append(v)
            args.append(v)
            if a in ("dup", "dupnoneed"):
                tv = np.array(tangents[n], copy=True) if isinstance(v, np.ndarray) else tangents[n]
                touts[n] = tv
                args.append(tv)
        types = _types(diff_params(self.params, self.fwd_acts()))
        self.prog("fwd").launch(f"d_{self.name}", args, types, self.grid, self.block)
        return vals, touts


def diff_params(params, acts):
    out = []
    for (n, t), a in zip(params, acts):
        out.append((n, t))
        if a in ("dup", "dupnoneed"):
            out.append((f"d_{n}", t))
    if "active" in acts:
        out.append(("G", arr("f64")))
    return out


def dot_test(case, seed=0, eps=1e-6, rtol=1e-6, atol=1e-9):
    """<D, J V> (finite differences) == <J^T D, V> (reverse mode)."""
    rng = np.random.default_rng(seed)
    inputs = case.inputs
    names = [n for n, _ in case.params]
    diff = [(k, n) for k, (n, a) in enumerate(zip(names, case.acts)) if a != "const"]
    V = {n: (rng.standard_normal(np.shape(inputs[k])) if isinstance(inputs[k], np.ndarray)
             else float(rng.standard_normal())) for k, n in diff}
    D = {n: rng.standard_normal(np.shape(inputs[k])) for k, n in diff
         if isinstance(inputs[k], np.ndarray)}

    plus, minus = (_shifted(case, inputs, diff, V, sign * eps) for sign in (1.0, -1.0))
    lhs = 0.0
    for k, n in diff:
        if n in D:
            jv = (plus[k].astype(np.float64) - minus[k].astype(np.float64)) / (2 * eps)
            lhs += float(np.sum(D[n] * jv))
    after, shadows, grads = case.reverse(inputs, {n: D[n].astype(inputs[k].dtype)
                                                  for k, n in diff if n in D})
    ref = case.primal(inputs)
    for k, n in enumerate(names):
        if isinstance(ref[k], np.ndarray):
            np.testing.assert_allclose(after[k], ref[k], rtol=1e-12, atol=0,
                                       err_msg=f"reverse kernel's primal result for {n}")
    rhs, g = 0.0, iter(grads)
    for k, n in diff:
        if n in D:
            rhs += float(np.sum(shadows[n].astype(np.float64) * V[n]))
        else:
            rhs += float(next(g)) * V[n]
    assert abs(lhs - rhs) <= atol + rtol * max(abs(lhs), abs(rhs)), (lhs, rhs)
    return lhs, rhs


def _shifted(case, inputs, diff, V, step):
    """The primal results at `inputs + step * V` (V: a direction per
    differentiated argument)."""
    out = list(inputs)
    for k, n in diff:
        x = inputs[k]
        out[k] = (x + step * V[n]).astype(x.dtype) if isinstance(x, np.ndarray) \
            else x + step * V[n]
    return case.primal(out)


def fwd_test(case, seed=0, eps=1e-6, rtol=1e-6, atol=1e-9):
    """J V from forward mode == central finite differences."""
    case.prog("fwd")  # the primal runs below run from this program too
    rng = np.random.default_rng(seed)
    inputs = case.inputs
    names = [n for n, _ in case.params]
    diff = [(k, n) for k, (n, a) in enumerate(zip(names, case.acts)) if a != "const"]
    V = {n: (rng.standard_normal(np.shape(inputs[k])).astype(inputs[k].dtype)
             if isinstance(inputs[k], np.ndarray) else float(rng.standard_normal()))
         for k, n in diff}

    plus, minus = (_shifted(case, inputs, diff, V, sign * eps) for sign in (1.0, -1.0))
    after, touts = case.forward(inputs, V)
    ref = case.primal(inputs)
    for k, n in diff:
        if isinstance(inputs[k], np.ndarray):
            np.testing.assert_allclose(after[k], ref[k], rtol=1e-12)
            jv = (plus[k].astype(np.float64) - minus[k].astype(np.float64)) / (2 * eps)
            np.testing.assert_allclose(touts[n], jv, rtol=rtol, atol=atol, err_msg=n)



def gid():
    return ("  %c0 = arith.constant 0 : index\n"
            '  %tid = "diffgpu.thread_id"() {dim = 0 : i64} : () -> index\n'
            '  %bid = "diffgpu.block_id"() {dim = 0 : i64} : () -> index\n'
            '  %bdim = "diffgpu.block_dim"() {dim = 0 : i64} : () -> index\n'
            "  %bb = arith.muli %bid, %bdim : index\n"
            "  %i = arith.addi %bb, %tid : index\n")


def elementwise(op_text, t="f64", tz=None):
    """Z[i] = op(X[i], Y[i], W[i]) with the result named %r."""
    tz = tz or t
    body = gid() + (
        f"  %x = memref.load %X[%i] : {arr(t)}\n"
        f"  %y = memref.load %Y[%i] : {arr(t)}\n"
        f"  %w = memref.load %W[%i] : {arr(t)}\n"
        f"{op_text}\n"
        f"  memref.store %r, %Z[%i] : {arr(tz)}\n")
    return [("X", arr(t)), ("Y", arr(t)), ("W", arr(t)), ("Z", arr(tz))], body


def uniform(lo, hi, dtype=np.float64, n=N, seed=1):
    return np.random.default_rng(seed).uniform(lo, hi, n).astype(dtype)




def loop_body(inner):
    """for j in [0, n): ... with %n an i64 argument (runtime bound)."""
    return gid() + (
        "  %c1 = arith.constant 1 : index\n"
        "  %nn = arith.index_cast %n : i64 to index\n" + inner)



A64, A32 = arr("f64"), arr("f32")
