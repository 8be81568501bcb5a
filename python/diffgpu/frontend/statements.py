"""Statements: assignment, if/elif/else, for-range, while, return.

Control flow becomes structured SSA: a variable reassigned in a branch is a
result of the `scf.if`; one reassigned in a loop is an `iter_args` of the
`scf.for` (a carried value of the `scf.while`). Types of carried variables
are found by iterating the loop body until they stop changing (a weak `0.0`
accumulating float32 data becomes float32).

Early returns: an `if` containing a `return` takes the rest of the enclosing
block into both of its branches, so the function's remainder sits under the
`scf.if` and returned values are its results.
"""
from __future__ import annotations

import ast
import builtins as py_builtins

from diffgpu.frontend.emitter import I1, I64, INDEX
from diffgpu.frontend.expressions import em_structured
from diffgpu.frontend.source import FrontendError
from diffgpu.frontend.types_infer import ArrayT, Scalar, promote
from diffgpu.frontend.values import Const, PyObj, ShapeV, TupleV, Value, describe

MAX_TYPE_ROUNDS = 6


class Ret:
    """A block that always returns `values` (empty: returns nothing)."""

    def __init__(self, values, node):
        self.values, self.node = values, node


def assigned_names(nodes) -> list[str]:
    seen = {}
    for stmt in nodes:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                seen.setdefault(n.id, None)
    return list(seen)


def contains_return(node) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(node))


def check_no_return(stmts, what):
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Return):
                raise FrontendError(f"'return' inside a {what} loop is not supported", n)


class StmtMixin:
    # blocks ----------------------------------------------------------------
    def visit_block(self, stmts):
        for k, s in enumerate(stmts):
            if isinstance(s, ast.Return):
                with self.at(s):
                    return self.lower_return(s)
            if isinstance(s, ast.If) and contains_return(s):
                with self.at(s):
                    return self.returning_if(s, list(stmts[k + 1:]))
            self.visit(s)
        return None

    def lower_return(self, node):
        if node.value is None:
            return Ret([], node)
        v = self.visit(node.value)
        if isinstance(v, PyObj) and v.obj is None:
            return Ret([], node)
        if self.kind == "kernel":
            raise FrontendError("a kernel cannot return a value (use a @dg.func)", node)
        items = v.items if isinstance(v, TupleV) else (v,)
        for it in items:
            self.scalar(it, node.value, "returned value")
        return Ret(list(items), node)

    def returning_if(self, node, rest):
        cond = self.eval_scalar(node.test, "condition")
        if isinstance(cond, Const) and cond.type.weak:
            return self.visit_block((node.body if cond.value else node.orelse) + rest)
        c = self.boolean(cond, node.test)
        em, env0 = self.em, dict(self.env)
        rets, bodies = [], []
        for stmts in (node.body + rest, node.orelse + rest):
            with em.capture() as lines:
                self.env = dict(env0)
                r = self.visit_block(stmts)
            rets.append(r.values if r else [])
            bodies.append(lines)
        self.env = env0
        if len(rets[0]) != len(rets[1]):
            raise FrontendError(f"{self.py_func.__name__!r} returns {len(rets[0])} "
                                f"value(s) on one path and {len(rets[1])} on another", node)
        types = [self.merge_type("returned value", [a, b], node)
                 for a, b in zip(*rets)]
        self.yield_into(bodies, rets, types)
        return Ret(self.emit_if(c, bodies, types), node)

    def emit_if(self, c, bodies, types):
        """scf.if; without results, an empty branch is dropped (inverting c)."""
        em = self.em
        empty = [all(ln.lstrip().startswith("scf.yield") for ln in b) for b in bodies]
        if not types and empty[1]:
            bodies = bodies[:1]
        elif not types and empty[0]:
            true = em.constant(True, I1)
            c = em.op(f"arith.xori {c.ref}, {true.ref} : i1", I1)
            bodies = bodies[1:]
        return em_structured(em, f"scf.if {c.ref}" + self._results(types), bodies,
                             types, "} else {")

    @staticmethod
    def _results(types):
        return f" -> ({', '.join(t.mlir() for t in types)})" if types else ""

    def yield_into(self, bodies, value_lists, types, op="scf.yield"):
        for lines, vals in zip(bodies, value_lists):
            with self.em.into(lines):
                refs = [self.em.value(v, t if isinstance(t, Scalar) else None).ref
                        for v, t in zip(vals, types)]
                if types:
                    self.em.line(f"{op} {', '.join(refs)} : "
                                 f"{', '.join(t.mlir() for t in types)}")
                else:
                    self.em.line(op)

    def merge_type(self, name, vals, node):
        """Common type of the values a variable takes on merging paths."""
        for v in vals:
            if isinstance(v, Value) and v.is_array:
                if any(not isinstance(w, Value) or w.type != v.type for w in vals):
                    raise FrontendError(
                        f"{name} is an array on one path and {describe(vals[1])} on "
                        "another; arrays must keep the same type", node)
                return v.type
            if not isinstance(v, (Value, Const)):
                raise FrontendError(
                    f"{name} holds a {describe(v)}; only numbers and arrays can be "
                    "reassigned in branches and loops", node)
        t = vals[0].type
        for v in vals[1:]:
            t = promote(t, v.type)
        return t

    # simple statements --------------------------------------------------------
    def visit_Pass(self, node):
        return None

    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # docstring
        self.visit(node.value)

    def visit_Assign(self, node):
        v = self.visit(node.value)
        for t in node.targets:
            self.assign_to(t, v, node)

    def visit_AnnAssign(self, node):
        if node.value is None:
            raise FrontendError("annotation without a value is not supported", node)
        self.assign_to(node.target, self.visit(node.value), node)

    def assign_to(self, target, v, node):
        if isinstance(target, ast.Name):
            if isinstance(v, PyObj) and v.obj is None:
                raise FrontendError("cannot assign None (does the call return nothing?)",
                                    node.value if hasattr(node, "value") else node)
            self.env[target.id] = v
            self.maybe_undefined.pop(target.id, None)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(v, ShapeV):
                v = TupleV(tuple(self.array_dim(v.array, k) for k in range(v.array.type.ndim)))
            if not isinstance(v, TupleV):
                raise FrontendError(f"cannot unpack {describe(v)}", target)
            if len(v.items) != len(target.elts):
                raise FrontendError(f"cannot unpack {len(v.items)} values into "
                                    f"{len(target.elts)} targets", target)
            for t, item in zip(target.elts, v.items):
                self.assign_to(t, item, node)
        elif isinstance(target, ast.Subscript):
            with self.at(target):
                arr = self.subscript_base(target)
                self.store(arr, self.indices(arr, target), v, node)
        elif isinstance(target, ast.Attribute):
            raise FrontendError(f"cannot assign to attribute {target.attr!r}", target)
        else:
            raise FrontendError(f"unsupported assignment target", target)

    def subscript_base(self, target) -> Value:
        base = self.visit(target.value)
        if isinstance(base, Value) and base.is_array:
            return base
        what = ast.unparse(target.value)
        if isinstance(base, TupleV):
            raise FrontendError(f"cannot assign into {what!r}: tuples are immutable", target)
        if isinstance(base, PyObj) or isinstance(target.value, ast.Name) \
                and target.value.id not in self.local_names:
            raise FrontendError(f"cannot assign into global {what!r}: only array "
                                "arguments can be stored into", target)
        raise FrontendError(f"cannot store into {what!r}: it is a {describe(base)}, "
                            "not an array", target)

    def visit_AugAssign(self, node):
        from diffgpu.frontend.expressions import BINOPS
        op = BINOPS.get(type(node.op))
        if op is None:
            raise FrontendError(f"operator {type(node.op).__name__} is not supported", node)
        t = node.target
        if isinstance(t, ast.Name):
            old = self.visit(ast.copy_location(ast.Name(t.id, ast.Load()), t))
            old = self.scalar(old, t, f"left operand of '{op}='")
            rhs = self.eval_scalar(node.value, f"right operand of '{op}='")
            self.env[t.id] = self.binop(op, old, rhs, node)
        elif isinstance(t, ast.Subscript):
            with self.at(t):
                arr = self.subscript_base(t)
                idx = self.indices(arr, t)
                old = self.load(arr, idx)
            rhs = self.eval_scalar(node.value, f"right operand of '{op}='")
            self.store(arr, idx, self.binop(op, old, rhs, node), node)
        else:
            raise FrontendError("unsupported augmented assignment target", t)

    def visit_Break(self, node):
        raise FrontendError("'break' is not supported in kernels (use a while loop "
                            "with a flag)", node)

    def visit_Continue(self, node):
        raise FrontendError("'continue' is not supported in kernels (use if/else)", node)

    # if -------------------------------------------------------------------
    def visit_If(self, node):
        cond = self.eval_scalar(node.test, "condition")
        if isinstance(cond, Const) and cond.type.weak:  # static branch
            self.visit_block(node.body if cond.value else node.orelse)
            return
        c = self.boolean(cond, node.test)
        em, env0 = self.em, dict(self.env)
        envs, bodies = [], []
        for stmts in (node.body, node.orelse):
            with em.capture() as lines:
                self.env = dict(env0)
                self.visit_block(stmts)
            envs.append(self.env)
            bodies.append(lines)
        self.env = env0
        e1, e2 = envs
        changed = []
        for name in list(dict.fromkeys(list(e1) + list(e2))):
            if name in e1 and name in e2:
                if e1[name] == e2[name]:
                    self.env[name] = e1[name]
                else:
                    changed.append(name)
            else:
                self.env.pop(name, None)
                self.maybe_undefined[name] = (
                    f"it is assigned in only one branch of the 'if' at line "
                    f"{self.src.line_of(node)}")
        types = [self.merge_type(f"variable {n!r}", [e1[n], e2[n]], node) for n in changed]
        self.yield_into(bodies, [[e1[n] for n in changed], [e2[n] for n in changed]], types)
        results = self.emit_if(c, bodies, types)
        for n, v in zip(changed, results):
            self.env[n] = v

    # loops ----------------------------------------------------------------
    def loop_carried(self, node, extra=()):
        names = [n for n in assigned_names(node.body) + list(extra) if n in self.env]
        return list(dict.fromkeys(names))

    def run_loop_body(self, carried, types, body_fn, node):
        """Emit the body until the carried types are stable; returns
        (types, args, body lines, end values)."""
        em = self.em
        env0 = dict(self.env)
        for _ in range(MAX_TYPE_ROUNDS):
            args = [em.fresh() for _ in carried]
            with em.capture() as lines:
                self.env = dict(env0)
                for n, a in zip(carried, args):
                    self.env[n] = Value(a, types[n])
                body_fn()
                end = [self.env.get(n) for n in carried]
            body_env = self.env
            self.env = env0
            new = {n: self.merge_type(f"variable {n!r}", [Value("%x", types[n]), e], node)
                   for n, e in zip(carried, end)}
            if new == types:
                break
            types = new
        else:
            raise FrontendError("the types of the loop's variables do not settle", node)
        for name in body_env:
            if name not in self.env:
                self.maybe_undefined[name] = (
                    f"it is assigned only inside the loop at line {self.src.line_of(node)}")
        return types, args, lines, end

    def visit_For(self, node):
        if node.orelse:
            raise FrontendError("'for ... else' is not supported", node)
        if not isinstance(node.target, ast.Name):
            raise FrontendError("the loop variable must be a single name", node.target)
        it = node.iter
        fn = self.visit(it.func) if isinstance(it, ast.Call) else None
        if not (isinstance(fn, PyObj) and fn.obj is py_builtins.range):
            raise FrontendError("only 'for ... in range(...)' loops are supported", it)
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise FrontendError("range() takes 1 to 3 positional arguments", it)
        check_no_return(node.body, "for")
        bounds = []
        for a in it.args:
            v = self.eval_scalar(a, "range() argument")
            if not v.type.is_int:
                raise FrontendError(f"range() arguments must be integers, got {v.type}", a)
            bounds.append(v)
        if len(bounds) == 1:
            bounds = [Const.of(0)] + bounds
        start, stop = bounds[0], bounds[1]
        step = bounds[2] if len(bounds) == 3 else Const.of(1)
        if isinstance(step, Const) and step.value == 0:
            raise FrontendError("range() step must not be zero", it.args[2])
        var = node.target.id
        extra = [var] if var in self.env or var in self.loads_outside(node) else []
        em = self.em
        if var not in self.env and extra:
            self.env[var] = em.value(start, I64)
        carried = self.loop_carried(node, extra)
        direct = isinstance(step, Const) and step.value > 0
        with self.at(it):
            if direct:
                lb, ub, st = (em.value(v, INDEX) if isinstance(v, Const)
                              else em.to_index(em.value(v, I64)) for v in (start, stop, step))
            else:
                start_v, step_v = em.value(start, I64), em.value(step, I64)
                trip = self.trip_count(start_v, em.value(stop, I64), step)
                lb = em.op("arith.constant 0 : index", Scalar("index"))
                ub = em.to_index(trip)
                st = em.op("arith.constant 1 : index", Scalar("index"))
        iv = em.fresh()

        def body():
            with self.at(node.target):
                k = em.cast(Value(iv, Scalar("index")), I64)
                if not direct:
                    k = em.op(f"arith.muli {k.ref}, {step_v.ref} : i64", I64)
                    k = em.op(f"arith.addi {start_v.ref}, {k.ref} : i64", I64)
            self.env[var] = k
            self.maybe_undefined.pop(var, None)
            self.visit_block(node.body)

        types = {n: self.env[n].type for n in carried}
        types, args, lines, end = self.run_loop_body(carried, types, body, node)
        tys = [types[n] for n in carried]
        inits = [em.value(self.env[n], t if isinstance(t, Scalar) else None)
                 for n, t in zip(carried, tys)]
        self.yield_into([lines], [end], tys)
        head = f"scf.for {iv} = {lb.ref} to {ub.ref} step {st.ref}"
        if carried:
            head += " iter_args(" + ", ".join(f"{a} = {i.ref}" for a, i in zip(args, inits))
            head += ")" + self._results(tys)
        results = em_structured(em, head, [lines], tys, "")
        for n, v in zip(carried, results):
            self.env[n] = v

    def trip_count(self, start, stop, step) -> Value:
        """max(0, ceil((stop - start) / step)) in i64, for any nonzero step."""
        em = self.em

        def op(text):
            return em.op(text, I64)
        zero, one = em.constant(0, I64), em.constant(1, I64)
        if isinstance(step, Const):  # constant negative step
            dist = op(f"arith.subi {start.ref}, {stop.ref} : i64")
            mag = em.constant(-step.value, I64)
        else:
            s = em.value(step, I64)
            pos = em.op(f"arith.cmpi sgt, {s.ref}, {zero.ref} : i64", I1)
            up = op(f"arith.subi {stop.ref}, {start.ref} : i64")
            down = op(f"arith.subi {start.ref}, {stop.ref} : i64")
            dist = op(f"arith.select {pos.ref}, {up.ref}, {down.ref} : i64")
            neg = op(f"arith.subi {zero.ref}, {s.ref} : i64")
            mag = op(f"arith.select {pos.ref}, {s.ref}, {neg.ref} : i64")
            isz = em.op(f"arith.cmpi eq, {s.ref}, {zero.ref} : i64", I1)
            mag = op(f"arith.select {isz.ref}, {one.ref}, {mag.ref} : i64")
            dist = op(f"arith.select {isz.ref}, {zero.ref}, {dist.ref} : i64")
        m1 = op(f"arith.subi {mag.ref}, {one.ref} : i64")
        num = op(f"arith.addi {dist.ref}, {m1.ref} : i64")
        q = op(f"arith.divsi {num.ref}, {mag.ref} : i64")
        return op(f"arith.maxsi {q.ref}, {zero.ref} : i64")

    def loads_outside(self, loop) -> set:
        inside = {id(n) for n in ast.walk(loop)}
        return {n.id for n in ast.walk(self.src.tree)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                and id(n) not in inside}

    def visit_While(self, node):
        if node.orelse:
            raise FrontendError("'while ... else' is not supported", node)
        check_no_return(node.body, "while")
        em = self.em
        carried = self.loop_carried(node)
        types = {n: self.env[n].type for n in carried}
        before = {}

        def body():
            with em.capture() as cond_lines:
                c = self.boolean(self.eval_scalar(node.test, "loop condition"), node.test)
            before["lines"], before["cond"] = cond_lines, c
            before["env"] = {n: self.env[n] for n in carried}
            self.visit_block(node.body)

        types, args, lines, end = self.run_loop_body(carried, types, body, node)
        tys = [types[n] for n in carried]
        inits = [em.value(self.env[n], t if isinstance(t, Scalar) else None)
                 for n, t in zip(carried, tys)]
        self.yield_into([lines], [end], tys)
        # the before region: the condition, computed on the carried values
        cond_lines, c = before["lines"], before["cond"]
        tytext = ", ".join(t.mlir() for t in tys)
        refs = ", ".join(a for a in args)
        with em.into(cond_lines):
            em.line(f"scf.condition({c.ref}) {refs} : {tytext}" if carried
                    else f"scf.condition({c.ref})")
        # sibling regions scope their names: the after block reuses `args`
        after = ["^bb0(" + ", ".join(f"{a}: {t.mlir()}" for a, t in zip(args, tys)) + "):"]
        after = (after if carried else []) + lines
        head = "scf.while (" + ", ".join(f"{a} = {i.ref}" for a, i in zip(args, inits))
        head += f") : ({tytext}) -> ({tytext})"
        results = em_structured(em, head, [cond_lines, after], tys, "} do {")
        for n, v in zip(carried, results):
            self.env[n] = v

