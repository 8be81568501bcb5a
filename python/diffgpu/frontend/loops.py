"""Loops: `for ... in range(...)` and `while`, with `break` and `continue`.

A `for` becomes `scf.for` over index bounds (positive constant step) or over
the normalized trip count `0 .. max(0, ceil((stop - start) / step))` (negative
or runtime step); a `while` becomes `scf.while`. Variables reassigned in the
body (and defined before) are carried values; their types are iterated to a
fixpoint. The loop variable survives the loop (carried when read outside).

`continue` ends the iteration: like an early return, the rest of the body
goes under an `scf.if` whose results are the carried values. `break` also
sets a hidden carried flag that the loop condition tests; a `for` containing
`break` is lowered as an `scf.while` over an index counter. `return` inside
a loop is a break out of every enclosing loop: it sets a hidden flag (and the
returned values), carried by all the loops around it and tested by their
conditions; after each such loop, the rest of the block runs under
`scf.if not flag` (statements.py, `after_returning_loop`).
"""
from __future__ import annotations

import ast
import builtins as py_builtins

from diffgpu.frontend.emitter import I1, I64, INDEX
from diffgpu.frontend.operators import em_structured, has_effects
from diffgpu.frontend.source import FrontendError
from diffgpu.frontend.source import memo_node
from diffgpu.frontend.statements import (RET_FLAG, Ret, assigned_in, contains_return,
                                         ret_value_name, walk_loop_body)
from diffgpu.frontend.types_infer import Scalar
from diffgpu.frontend.values import Const, PyObj, Value

MAX_TYPE_ROUNDS = 6


@memo_node
def has_break(loop) -> bool:
    """Whether a loop's body breaks out of it (not of a nested loop)."""
    return any(isinstance(n, ast.Break) for s in loop.body
               if not isinstance(s, (ast.For, ast.While)) for n in walk_loop_body(s))


@memo_node
def _loads(tree) -> list:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


class LoopMixin:
    loop = None  # carried names of the innermost loop being lowered

    # shared machinery -----------------------------------------------------------
    def block_end(self):
        """Values live at the end of a block: the carried ones inside a loop."""
        return [self.env[n] for n in self.loop] if self.loop is not None else []

    def lower_loop_exit(self, node):
        if self.loop is None:
            raise FrontendError(f"'{type(node).__name__.lower()}' outside a loop", node)
        if isinstance(node, ast.Break):
            self.env[self.break_flag] = Const.of(True)
        return Ret(self.block_end(), node)

    def loop_body(self, stmts, carried, break_flag=None):
        saved = self.loop, getattr(self, "break_flag", None)
        self.loop, self.break_flag = carried, break_flag
        try:
            r = self.visit_block(stmts)
        finally:
            self.loop, self.break_flag = saved
        if r is not None:
            for n, v in zip(carried, r.values):
                self.env[n] = v

    def loop_carried(self, node, extra=()):
        names = [n for n in assigned_in(node) + list(extra) if n in self.env]
        names += self.component_targets(node)  # vectors.py: v[k] = ...
        return list(dict.fromkeys(self.expand_vector_names(names)))  # vectors.py

    def run_loop_body(self, carried, body_fn, node):
        """Emit the body until the carried types are stable; returns
        (types, block args, body lines, end values)."""
        em = self.em
        env0 = dict(self.env)
        types = [self.merge_type(f"variable {n!r}", [self.env[n]], node) for n in carried]
        for _ in range(MAX_TYPE_ROUNDS):
            args = [em.fresh() for _ in carried]
            with em.capture() as lines:
                self.env = dict(env0)
                for n, a, t in zip(carried, args, types):
                    self.env[n] = Value(a, t)
                body_fn()
                end = [self.env.get(n) for n in carried]
            body_env = self.env
            self.env = env0
            new = [self.merge_type(f"variable {n!r}", [Value("%x", t), e], node)
                   for n, t, e in zip(carried, types, end)]
            if new == types:
                break
            types = new
        else:
            raise FrontendError("the types of the loop's variables do not settle", node)
        for name in body_env:
            if name not in self.env and not name.startswith("%"):
                self.maybe_undefined[name] = (
                    f"it is assigned only inside the loop at line {self.src.line_of(node)}")
        self.yield_into([lines], [end], types)
        inits = [self.em.value(self.env[n], t if isinstance(t, Scalar) else None)
                 for n, t in zip(carried, types)]
        return types, args, lines, inits

    def emit_while(self, carried, cond_fn, body_fn, node):
        em = self.em
        before = {}

        def body():
            with em.capture() as cond_lines:
                c = cond_fn()
            before["lines"], before["cond"] = cond_lines, c
            body_fn()

        tys, args, lines, inits = self.run_loop_body(carried, body, node)
        cond_lines, c = before["lines"], before["cond"]
        tytext = ", ".join(t.mlir() for t in tys)
        with em.into(cond_lines):
            em.line(f"scf.condition({c.ref}) {', '.join(args)} : {tytext}" if carried
                    else f"scf.condition({c.ref})")
        # sibling regions scope their names: the after block reuses `args`
        after = ["^bb0(" + ", ".join(f"{a}: {t.mlir()}" for a, t in zip(args, tys)) + "):"]
        after = (after if carried else []) + lines
        head = "scf.while (" + ", ".join(f"{a} = {i.ref}" for a, i in zip(args, inits))
        head += f") : ({tytext}) -> ({tytext})"
        results = em_structured(em, head, [cond_lines, after], tys, "} do {")
        for n, v in zip(carried, results):
            self.env[n] = v

    def stop_flags(self, node):
        """The hidden flags that end `node`'s loop: its own `break`, and a
        `return` anywhere inside it."""
        flags = []
        if has_break(node):
            flags.append(f"%break{node.lineno}_{node.col_offset}")
            self.env[flags[-1]] = Const.of(False)
        if contains_return(node):
            flags.append(RET_FLAG)
        return flags

    def carried_with_flags(self, node, extra, flags):
        rets = [ret_value_name(k) for k in range(self.n_loop_returns)] \
            if RET_FLAG in flags else []
        return self.loop_carried(node, list(extra) + flags + rets)

    def pop_break_flag(self, flags):
        for f in flags:
            if f != RET_FLAG:
                self.env.pop(f, None)

    def not_broken_and(self, flags, test_fn, test_node, node):
        """i1: not any(flags) and test (the test is not evaluated once stopped)."""
        em = self.em
        true = em.constant(True, I1)
        stop = em.value(self.env[flags[0]], I1)
        for f in flags[1:]:
            stop = em.op(f"arith.ori {stop.ref}, {em.value(self.env[f], I1).ref} : i1", I1)
        nb = em.op(f"arith.xori {stop.ref}, {true.ref} : i1", I1)
        if test_node is not None and has_effects(test_node):
            return self.short_circuit(nb, test_node, True, node)
        t = test_fn()
        return em.op(f"arith.andi {nb.ref}, {t.ref} : i1", I1)

    # while ----------------------------------------------------------------
    def visit_While(self, node):
        if node.orelse:
            raise FrontendError("'while ... else' is not supported", node)
        flags = self.stop_flags(node)
        brk = flags[0] if has_break(node) else None
        carried = self.carried_with_flags(node, [], flags)

        def test():
            return self.boolean(self.eval_scalar(node.test, "loop condition"), node.test)

        def cond():
            return self.not_broken_and(flags, test, node.test, node) if flags else test()
        self.emit_while(carried, cond, lambda: self.loop_body(node.body, carried, brk), node)
        self.pop_break_flag(flags)

    # for ------------------------------------------------------------------
    def range_bounds(self, node):
        it = node.iter
        fn = self.visit(it.func) if isinstance(it, ast.Call) else None
        if not (isinstance(fn, PyObj) and fn.obj is py_builtins.range):
            raise FrontendError("only 'for ... in range(...)' loops are supported", it)
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise FrontendError("range() takes 1 to 3 positional arguments", it)
        bounds = []
        for a in it.args:
            v = self.eval_scalar(a, "range() argument")
            if not v.type.is_int:
                raise FrontendError(f"range() arguments must be integers, got {v.type}", a)
            bounds.append(v)
        if len(bounds) == 1:
            bounds = [Const.of(0)] + bounds
        step = bounds[2] if len(bounds) == 3 else Const.of(1)
        if isinstance(step, Const) and step.value == 0:
            raise FrontendError("range() step must not be zero", it.args[2])
        return bounds[0], bounds[1], step

    def visit_For(self, node):
        if node.orelse:
            raise FrontendError("'for ... else' is not supported", node)
        if not isinstance(node.target, ast.Name):
            raise FrontendError("the loop variable must be a single name", node.target)
        em = self.em
        start, stop, step = self.range_bounds(node)
        var = node.target.id
        extra = [var] if var in self.env or var in self.loads_outside(node) else []
        if var not in self.env and extra:
            self.env[var] = em.value(start, I64)
        flags = self.stop_flags(node)
        carried = self.carried_with_flags(node, extra, flags)
        direct = isinstance(step, Const) and step.value > 0
        with self.at(node.iter):
            if direct:
                lb, ub, st = (em.value(v, INDEX) if isinstance(v, Const)
                              else em.to_index(em.value(v, I64)) for v in (start, stop, step))
            else:
                start_v, step_v = em.value(start, I64), em.value(step, I64)
                trip = self.trip_count(start_v, em.value(stop, I64), step)
                lb = em.op("arith.constant 0 : index", INDEX)
                ub = em.to_index(trip)
                st = em.op("arith.constant 1 : index", INDEX)

        def set_var(iv):
            with self.at(node.target):
                k = em.cast(iv, I64)
                if not direct:
                    k = em.op(f"arith.muli {k.ref}, {step_v.ref} : i64", I64)
                    k = em.op(f"arith.addi {start_v.ref}, {k.ref} : i64", I64)
            self.env[var] = k
            self.maybe_undefined.pop(var, None)

        if flags:
            self.for_as_while(node, carried, flags, lb, ub, st, set_var)
        else:
            self.emit_for(node, carried, lb, ub, st, set_var)
        self.pop_break_flag(flags)

    def emit_for(self, node, carried, lb, ub, st, set_var):
        em = self.em
        iv = em.fresh()

        def body():
            set_var(Value(iv, INDEX))
            self.loop_body(node.body, carried)

        tys, args, lines, inits = self.run_loop_body(carried, body, node)
        head = f"scf.for {iv} = {lb.ref} to {ub.ref} step {st.ref}"
        if carried:
            head += " iter_args(" + ", ".join(f"{a} = {i.ref}" for a, i in zip(args, inits))
            head += ")" + self._results(tys)
        results = em_structured(em, head, [lines], tys, "")
        for n, v in zip(carried, results):
            self.env[n] = v

    def for_as_while(self, node, carried, flags, lb, ub, st, set_var):
        """A for loop with `break` or `return`: scf.while over an index counter."""
        em = self.em
        counter = f"%iv{node.lineno}_{node.col_offset}"
        self.env[counter] = lb
        carried = [counter] + carried

        def cond():
            def test():
                cur = self.env[counter]
                return em.op(f"arith.cmpi slt, {cur.ref}, {ub.ref} : index", I1)
            return self.not_broken_and(flags, test, None, node)

        def body():
            cur = self.env[counter]
            set_var(cur)
            brk = flags[0] if has_break(node) else None
            self.loop_body(node.body, carried, brk)
            with self.at(node.iter):
                self.env[counter] = em.op(f"arith.addi {cur.ref}, {st.ref} : index", INDEX)
        self.emit_while(carried, cond, body, node)
        self.env.pop(counter, None)

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
        """Names read anywhere in the function outside `loop`."""
        inside = {id(n) for n in _loads(loop)}
        return {n.id for n in _loads(self.src.tree) if id(n) not in inside}
