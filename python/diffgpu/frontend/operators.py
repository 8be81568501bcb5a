"""Operators: arithmetic, comparisons, `and`/`or`/`not`, conditional
expressions. Python operators map to MLIR ops through the tables below;
`//` and `%` follow Python's floor semantics for ints and floats, `**` with a
small constant integer exponent is unrolled into multiplications.
"""
from __future__ import annotations

import ast
import operator

from diffgpu.frontend.emitter import I1
from diffgpu.frontend.source import FrontendError, memo_node
from diffgpu.frontend.types_infer import Scalar, promote, true_div_type
from diffgpu.frontend.values import Const, Value, VecV

BINOPS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
    ast.LShift: "<<", ast.RShift: ">>", ast.MatMult: "@",
}
FOLD = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "//": operator.floordiv, "%": operator.mod, "**": operator.pow,
    "&": operator.and_, "|": operator.or_, "^": operator.xor,
    "<<": operator.lshift, ">>": operator.rshift,
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "==": operator.eq, "!=": operator.ne,
}
FLOAT_OPS = {"+": "arith.addf", "-": "arith.subf", "*": "arith.mulf", "/": "arith.divf"}
INT_OPS = {"+": "arith.addi", "-": "arith.subi", "*": "arith.muli", "&": "arith.andi",
           "|": "arith.ori", "^": "arith.xori", "<<": "arith.shli", ">>": "arith.shrsi"}
BIT_OPS = ("&", "|", "^", "<<", ">>")
CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
CMPF = {"<": "olt", "<=": "ole", ">": "ogt", ">=": "oge", "==": "oeq", "!=": "une"}
CMPI = {"<": "slt", "<=": "sle", ">": "sgt", ">=": "sge", "==": "eq", "!=": "ne"}
CMPU = {"<": "ult", "<=": "ule", ">": "ugt", ">=": "uge", "==": "eq", "!=": "ne"}
MAX_POW_UNROLL = 8


class OperatorMixin:
    # operators -----------------------------------------------------------
    def visit_BinOp(self, node):
        """A left-associated chain (`a + b - c + ...`, as Python parses flat
        sums) is lowered in a loop, not by recursion: generated code with
        thousands of terms compiles."""
        chain = [node]
        while isinstance(chain[-1].left, ast.BinOp):
            chain.append(chain[-1].left)
        first = chain[-1]
        acc = self.eval_operand(first.left, f"left operand of '{BINOPS.get(type(first.op))}'")
        for n in reversed(chain):
            with self.at(n):
                try:
                    op = BINOPS.get(type(n.op))
                    if op is None:
                        raise FrontendError(f"operator {type(n.op).__name__} is not "
                                            "supported", n)
                    b = self.eval_operand(n.right, f"right operand of '{op}'")
                    acc = self.binop(op, acc, b, n)
                except FrontendError as e:
                    if e.node is None:
                        e.node = n
                    raise
        return acc

    def binop(self, op, a, b, node):
        if op == "@" or isinstance(a, VecV) or isinstance(b, VecV):
            return self.vector_binop(op, a, b, node)  # vectors.py
        if isinstance(a, Const) and isinstance(b, Const) and a.type.weak and b.type.weak:
            try:
                return Const.of(FOLD[op](a.value, b.value))
            except ZeroDivisionError:
                raise FrontendError(f"division by zero in constant expression", node) from None
            except (OverflowError, ValueError, TypeError) as e:
                raise FrontendError(f"cannot evaluate constant expression: {e}", node) from None
        if op == "**":
            return self.power(a, b, node)
        t = promote(a.type, b.type)
        if op in BIT_OPS:
            if t.is_float:
                raise FrontendError(f"operator '{op}' needs integers, got {t}", node)
        elif t.ty == "i1":
            t = Scalar("i64", t.weak)
        if op == "/":
            t = true_div_type(t)
        x, y = self.em.value(a, t), self.em.value(b, t)
        if op == "//":
            return self.floordiv(x, y, t)
        if op == "%":
            return self.mod(x, y, t)
        table = FLOAT_OPS if t.is_float else INT_OPS
        return self.em.op(f"{table[op]} {x.ref}, {y.ref} : {t.ty}", t)

    def floordiv(self, x, y, t):
        """Python's floor division. (A zero divisor gives an unspecified value;
        the host lowering keeps the CPU from trapping on it.)"""
        em = self.em
        if t.is_float:
            q = em.op(f"arith.divf {x.ref}, {y.ref} : {t.ty}", t)
            return em.op(f"math.floor {q.ref} : {t.ty}", t)
        q = em.op(f"arith.divsi {x.ref}, {y.ref} : {t.ty}", t)
        r = em.op(f"arith.remsi {x.ref}, {y.ref} : {t.ty}", t)
        fix = self._sign_fix(r, y, t)
        one = em.constant(1, t.strong())
        qm = em.op(f"arith.subi {q.ref}, {one.ref} : {t.ty}", t)
        return em.op(f"arith.select {fix.ref}, {qm.ref}, {q.ref} : {t.ty}", t)

    def mod(self, x, y, t):
        """Python's modulo: the result has the sign of the divisor."""
        em = self.em
        rem = "arith.remf" if t.is_float else "arith.remsi"
        add = "arith.addf" if t.is_float else "arith.addi"
        r = em.op(f"{rem} {x.ref}, {y.ref} : {t.ty}", t)
        fix = self._sign_fix(r, y, t)
        rb = em.op(f"{add} {r.ref}, {y.ref} : {t.ty}", t)
        return em.op(f"arith.select {fix.ref}, {rb.ref}, {r.ref} : {t.ty}", t)

    def _sign_fix(self, r, y, t):
        """i1: r != 0 and sign(r) != sign(y) (Python floor semantics)."""
        em = self.em
        zero = em.constant(0.0 if t.is_float else 0, t.strong())
        if t.is_float:
            nz = em.op(f"arith.cmpf une, {r.ref}, {zero.ref} : {t.ty}", I1)
            rn = em.op(f"arith.cmpf olt, {r.ref}, {zero.ref} : {t.ty}", I1)
            yn = em.op(f"arith.cmpf olt, {y.ref}, {zero.ref} : {t.ty}", I1)
        else:
            nz = em.op(f"arith.cmpi ne, {r.ref}, {zero.ref} : {t.ty}", I1)
            rn = em.op(f"arith.cmpi slt, {r.ref}, {zero.ref} : {t.ty}", I1)
            yn = em.op(f"arith.cmpi slt, {y.ref}, {zero.ref} : {t.ty}", I1)
        diff = em.op(f"arith.xori {rn.ref}, {yn.ref} : i1", I1)
        return em.op(f"arith.andi {nz.ref}, {diff.ref} : i1", I1)

    def power(self, a, b, node):
        em = self.em
        if isinstance(b, Const) and b.type.is_int and isinstance(b.value, int) \
                and 0 <= b.value <= MAX_POW_UNROLL:
            t = a.type if a.type.ty != "i1" else Scalar("i64", a.type.weak)
            if b.value == 0:
                return em.value(Const(1, t), t)
            x = em.value(a, t)
            mul = "arith.mulf" if t.is_float else "arith.muli"
            acc = x
            for _ in range(b.value - 1):
                acc = em.op(f"{mul} {acc.ref}, {x.ref} : {t.ty}", t)
            return acc
        t = promote(a.type, b.type)
        if not t.is_float and isinstance(b, Const) and b.value < 0:
            t = Scalar("f64", t.weak)  # Python: int ** negative int is a float
        if not t.is_float:
            raise FrontendError("integer '**' needs a constant exponent between 0 and "
                                f"{MAX_POW_UNROLL}; convert to float for other powers", node)
        x, y = em.value(a, t), em.value(b, t)
        return em.op(f"math.powf {x.ref}, {y.ref} : {t.ty}", t)

    def visit_UnaryOp(self, node):
        em = self.em
        v = self.eval_operand(node.operand)
        if isinstance(v, VecV):
            return self.vector_unary(node.op, v, node)
        if isinstance(node.op, ast.Not):
            if isinstance(v, Const) and v.type.weak:
                return Const.of(not v.value)
            b = self.boolean(v, node)
            true = em.constant(True, I1)
            return em.op(f"arith.xori {b.ref}, {true.ref} : i1", I1)
        if isinstance(node.op, ast.UAdd):
            return v if v.type.ty != "i1" else self.binop("+", Const.of(0), v, node)
        if isinstance(node.op, ast.USub):
            if isinstance(v, Const) and v.type.weak:
                return Const.of(-v.value)
            if v.type.is_float:
                x = em.value(v)
                return em.op(f"arith.negf {x.ref} : {x.type.ty}", x.type)
            return self.binop("-", Const.of(0), v, node)
        if isinstance(node.op, ast.Invert):
            if v.type.is_float:
                raise FrontendError("operator '~' needs an integer", node)
            return self.binop("^", Const.of(-1), v, node)
        raise FrontendError(f"unsupported unary operator {type(node.op).__name__}", node)

    def visit_Compare(self, node):
        left = self.eval_scalar(node.left, "comparison operand")
        result = None
        for opnode, comp in zip(node.ops, node.comparators):
            op = CMPOPS.get(type(opnode))
            if op is None:
                raise FrontendError(f"comparison '{type(opnode).__name__}' is not "
                                    "supported (use <, <=, >, >=, ==, !=)", node)
            right = self.eval_scalar(comp, "comparison operand")
            c = self.compare(op, left, right)
            result = c if result is None else self.and_values(result, c, node)
            left = right
        return result

    def compare(self, op, a, b):
        if isinstance(a, Const) and isinstance(b, Const) and a.type.weak and b.type.weak:
            return Const.of(FOLD[op](a.value, b.value))
        t = promote(a.type, b.type)
        x, y = self.em.value(a, t), self.em.value(b, t)
        if t.is_float:
            pred, cmp = CMPF[op], "arith.cmpf"
        else:
            pred, cmp = (CMPU if t.ty == "i1" else CMPI)[op], "arith.cmpi"
        return self.em.op(f"{cmp} {pred}, {x.ref}, {y.ref} : {t.ty}", I1)

    def and_values(self, a, b, node):
        if isinstance(a, Const) and isinstance(b, Const):
            return Const.of(bool(a.value) and bool(b.value))
        x, y = self.boolean(a, node), self.boolean(b, node)
        return self.em.op(f"arith.andi {x.ref}, {y.ref} : i1", I1)

    def visit_BoolOp(self, node):
        """`and`/`or` with Python's value semantics: `a and b` is `b` if `a` is
        true, else `a`; `a or b` is `a` if `a` is true, else `b` (in the
        operands' common type, so `X[0] and X[1]` is X[1] when X[0] != 0, and
        gradients flow through the operand selected). A right operand that
        loads memory or calls is evaluated only when needed (scf.if);
        otherwise both are evaluated and one is selected:

            %t = arith.cmpf une, %a, %zero : f32
            %r = arith.select %t, %b, %a : f32      // a and b
        """
        is_and = isinstance(node.op, ast.And)
        what = f"operand of '{'and' if is_and else 'or'}'"
        acc = self.eval_scalar(node.values[0], what)
        for rhs in node.values[1:]:
            if isinstance(acc, Const) and acc.type.weak:
                if bool(acc.value) != is_and:  # decided: `0 and ...`, `2 or ...`
                    return acc
                acc = self.eval_scalar(rhs, what)
                continue
            acc = self.pick_operand(acc, rhs, is_and, node, what)
        return acc

    def pick_operand(self, a, rhs, is_and, node, what):
        """The value of `a and rhs` / `a or rhs`, `a` already evaluated."""
        em = self.em
        c = self.boolean(a, node)
        if not has_effects(rhs):
            b = self.eval_scalar(rhs, what)
            t = promote(a.type, b.type)
            x, y = em.value(a, t), em.value(b, t)
            first, second = (y, x) if is_and else (x, y)
            return em.op(f"arith.select {c.ref}, {first.ref}, {second.ref} : {t.ty}", t)
        with em.capture() as eval_lines:
            b = self.eval_scalar(rhs, what)
        t = promote(a.type, b.type)
        with em.into(eval_lines):
            em.line(f"scf.yield {em.value(b, t).ref} : {t.ty}")
        with em.capture() as keep_lines:
            em.line(f"scf.yield {em.value(a, t).ref} : {t.ty}")
        regions = [eval_lines, keep_lines] if is_and else [keep_lines, eval_lines]
        return em_structured(em, f"scf.if {c.ref} -> ({t.ty})", regions, [t], "} else {")[0]

    def short_circuit(self, a, rhs, is_and, node):
        """i1: `a and bool(rhs)` / `a or bool(rhs)`, rhs evaluated only when
        needed (loop conditions behind a break flag)."""
        em = self.em
        with em.capture() as eval_lines:
            b = self.boolean(self.eval_scalar(rhs, "operand of 'and'/'or'"), rhs)
            em.line(f"scf.yield {b.ref} : i1")
        with em.capture() as skip_lines:
            c = em.constant(not is_and, I1)
            em.line(f"scf.yield {c.ref} : i1")
        regions = [eval_lines, skip_lines] if is_and else [skip_lines, eval_lines]
        return em_structured(em, f"scf.if {a.ref} -> (i1)", regions, [I1], "} else {")[0]

    def visit_IfExp(self, node):
        cond = self.eval_scalar(node.test, "condition")
        if isinstance(cond, Const) and cond.type.weak:
            return self.visit(node.body if cond.value else node.orelse)
        c = self.boolean(cond, node.test)
        if not has_effects(node.body) and not has_effects(node.orelse):
            a = self.eval_operand(node.body, "value of the conditional expression")
            b = self.eval_operand(node.orelse, "value of the conditional expression")
            if isinstance(a, VecV) or isinstance(b, VecV):  # vectors.py
                return self.vector_conditional(c, a, b, None, node)
            t = promote(a.type, b.type)
            x, y = self.em.value(a, t), self.em.value(b, t)
            return self.em.op(f"arith.select {c.ref}, {x.ref}, {y.ref} : {t.ty}", t)
        em = self.em
        with em.capture() as l1:
            a = self.eval_operand(node.body, "value of the conditional expression")
        with em.capture() as l2:
            b = self.eval_operand(node.orelse, "value of the conditional expression")
        if isinstance(a, VecV) or isinstance(b, VecV):  # vectors.py
            return self.vector_conditional(c, a, b, (l1, l2), node)
        t = promote(a.type, b.type)
        for lines, v in ((l1, a), (l2, b)):
            with em.into(lines):
                x = em.value(v, t)
                em.line(f"scf.yield {x.ref} : {t.ty}")
        return em_structured(em, f"scf.if {c.ref} -> ({t.ty})", [l1, l2], [t], "} else {")[0]


@memo_node
def has_effects(node) -> bool:
    """Whether evaluating `node` may load memory or call (short-circuit needed)."""
    return any(isinstance(n, (ast.Call, ast.Subscript)) for n in ast.walk(node))


def em_structured(em, head, regions, types, sep):
    """Emit `head {r0} sep {r1} ...` with results `types`; return result Values."""
    lines = []
    for k, body in enumerate(regions):
        lines.append(sep if k else None)
        lines.extend("  " + ln for ln in body)
    name = em.fresh() if types else None
    if not types:
        prefix = ""
    elif len(types) == 1:
        prefix = f"{name} = "
    else:
        prefix = f"{name}:{len(types)} = "
    em.raw(f"{prefix}{head} {{")
    for ln in lines[1:]:
        em.raw(ln)
    em.raw(f"}} {em.loc}")
    if not types:
        return []
    if len(types) == 1:
        return [Value(name, types[0])]
    return [Value(f"{name}#{k}", t) for k, t in enumerate(types)]
