"""Usefulness: which active values can reach a derivative output.

activity.py finds the values that depend on an active input (varied); a
varied value whose every use leads nowhere a derivative is read (only into
`dg.stop_gradient`, a comparison, a float-to-int conversion, or nothing)
needs no adjoint and no tangent. Enzyme and JAX call the values that reach
an output "useful"; a value is active when it is both. Here a value is
useful when it has a use that

- is an op without a known derivative-free shape (a store, an atomic, a
  call, a return, a collective, anything not listed below): conservative;
- is an elementwise op (rules' ELEMENTWISE) whose result is useful;
- is a `scf.yield` of an `scf.if` whose matching result is useful, or of an
  `scf.for` whose matching result or iteration argument is useful (and an
  `scf.for` init operand likewise); other regions' terminators make every
  operand useful;

an `scf.for`'s result k and iteration argument k are useful together (the
reverse carries the adjoint of one into the other), and an `scf.while`'s
arguments and results are always kept;

and never through an op of the INACTIVE tables (dg.stop_gradient among
them). Solved to a fixed point (loop-carried values). The arguments of the
function keep their activity (their gradients are returned, zero or not).

    m = max over j of x[j]          varied, used only by stop_gradient:
    y = exp(x[i] - stop_gradient(m))    m and the loop computing it are not
                                        differentiated at all
"""
from __future__ import annotations


def useless(ops, active, elementwise, inactive, entry) -> set:
    """The values of `active` that are not useful (module docstring); `ops`:
    every op of the function (pre-order), `entry`: its entry block."""
    useful = set()
    changed = True
    rev = list(reversed(ops))
    while changed:
        changed = False
        for op in rev:
            for v in _made_useful(op.operation, useful, elementwise, inactive):
                if v in active and v not in useful:
                    useful.add(v)
                    changed = True
    return {v for v in active if v not in useful and not _entry_arg(v, entry)}


def _entry_arg(v, entry) -> bool:
    owner = v.owner
    return owner == entry if not hasattr(owner, "operation") else False


def _made_useful(op, useful, elementwise, inactive):
    name = op.name
    if name in inactive:
        return ()
    if name in elementwise:
        return list(op.operands) if any(r in useful for r in op.results) else ()
    if name == "scf.yield":
        parent = op.parent
        parent = getattr(parent, "operation", parent)
        pname = parent.name
        if pname == "scf.if":
            return [v for k, v in enumerate(op.operands) if parent.results[k] in useful]
        if pname == "scf.for":
            body = parent.regions[0].blocks[0]
            return [v for k, v in enumerate(op.operands)
                    if parent.results[k] in useful or body.arguments[1 + k] in useful]
        return list(op.operands)
    if name == "scf.for":  # result k and iteration argument k stand or fall together
        body = op.regions[0].blocks[0]
        out = []
        for k, init in enumerate(list(op.operands)[3:]):
            res, arg = op.results[k], body.arguments[1 + k]
            if res in useful or arg in useful:
                out += [init, res, arg]
        return out
    if name == "scf.while":  # its arguments and results are all kept
        before, after = (r.blocks[0] for r in op.regions)
        return list(op.operands) + list(op.results) + list(before.arguments) + \
            list(after.arguments)
    if name == "scf.if":
        return ()  # its i1 condition carries no derivative
    return list(op.operands)
