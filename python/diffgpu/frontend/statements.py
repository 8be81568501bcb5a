"""Statements: assignment, if/elif/else, for-range, while, return.

Control flow becomes structured SSA: a variable reassigned in a branch is a
result of the `scf.if`; one reassigned in a loop is an `iter_args` of the
`scf.for` (a carried value of the `scf.while`). Types of carried variables
are found by iterating the loop body until they stop changing (a weak `0.0`
accumulating float32 data becomes float32).

Early exits: an `if` containing a `return` (or, in a loop body, a `break` or
`continue`) takes the rest of the enclosing block into both of its branches,
so the remainder sits under the `scf.if`; its results are the returned values
(or the loop's carried values at the end of the iteration). A `return` inside
a loop records its values in hidden variables, raises a hidden flag that
stops every loop around it, and the rest of the block after such a loop sits
under an `scf.if` on that flag. Loops live in loops.py.
"""
from __future__ import annotations

import ast

from diffgpu.frontend.emitter import I1
from diffgpu.frontend.operators import BINOPS, em_structured
from diffgpu.frontend.source import FrontendError, memo_node
from diffgpu.frontend.types_infer import Scalar, promote
from diffgpu.frontend.values import Const, PyObj, ShapeV, TupleV, Value, VecSlot, VecV, describe



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


@memo_node
def assigned_in(node) -> list[str]:
    """Names a loop's body assigns."""
    return assigned_names(node.body)


@memo_node
def contains_return(node) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(node))


def walk_loop_body(node):
    """The nodes of `node` (iteratively: expressions may be deep), not
    descending into nested loops and definitions."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if n is node or not isinstance(n, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
            todo.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, ast.expr))


@memo_node
def contains_exit(node) -> bool:
    """Whether `node` holds a break/continue of the loop it sits in."""
    if isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
        return False
    return any(isinstance(n, (ast.Break, ast.Continue)) for n in walk_loop_body(node))


RET_FLAG = "%ret"  # hidden: set by a `return` inside a loop


def ret_value_name(k: int) -> str:
    """Hidden variable holding the k-th value returned from inside a loop."""
    return f"%retv{k}"


@memo_node
def returns_in_loops(fn) -> list:
    """The `return` statements of a function that sit inside a loop."""
    out = []
    for loop in ast.walk(fn):
        if isinstance(loop, (ast.For, ast.While)):
            out += [n for s in loop.body for n in ast.walk(s) if isinstance(n, ast.Return)]
    return list({id(r): r for r in out}.values())


def n_returned(ret) -> int:
    if ret.value is None or isinstance(ret.value, ast.Constant) and ret.value.value is None:
        return 0
    return len(ret.value.elts) if isinstance(ret.value, ast.Tuple) else 1


class StmtMixin:
    n_loop_returns = 0  # values a `return` inside a loop returns
    # blocks ----------------------------------------------------------------
    def visit_block(self, stmts):
        for k, s in enumerate(stmts):
            if isinstance(s, (ast.For, ast.While)) and contains_return(s):
                self.visit(s)
                with self.at(s):
                    return self.after_returning_loop(s, list(stmts[k + 1:]))
            if isinstance(s, ast.Return):
                with self.at(s):
                    return self.lower_return(s)
            if isinstance(s, (ast.Break, ast.Continue)):
                with self.at(s):
                    return self.lower_loop_exit(s)
            if isinstance(s, ast.If) and (contains_return(s) or contains_exit(s)):
                with self.at(s):
                    return self.returning_if(s, list(stmts[k + 1:]))
            self.visit(s)
        return None

    def lower_return(self, node):
        if node.value is None:
            items = []
        else:
            v = self.visit(node.value)
            items = [] if isinstance(v, PyObj) and v.obj is None else \
                list(v.items if isinstance(v, TupleV) else (v,))
        if items and self.kind == "kernel":
            raise FrontendError("a kernel cannot return a value (use a @dg.func)", node)
        items = self.flatten_returned(items, node)  # vectors: their components
        for it in items:
            self.scalar(it, node.value, "returned value")
        if self.loop is None:
            return Ret(items, node)
        # inside a loop: record the values, raise the flag, end the iteration;
        # the loops test the flag and the code after them is skipped
        if len(items) != self.n_loop_returns:
            raise FrontendError(f"{self.py_func.__name__!r} returns {len(items)} value(s) "
                                f"here and {self.n_loop_returns} elsewhere in a loop", node)
        self.env[RET_FLAG] = Const.of(True)
        for k, it in enumerate(items):
            self.env[ret_value_name(k)] = it
        return Ret(self.block_end(), node)

    def init_loop_returns(self, fn):
        """Before the body: the hidden flag and values that a `return` inside
        a loop sets (carried through every loop that holds such a return)."""
        rets = returns_in_loops(fn)
        self.n_loop_returns = n_returned(rets[0]) if rets else 0
        if rets:
            self.env[RET_FLAG] = Const.of(False)
            for k in range(self.n_loop_returns):
                self.env[ret_value_name(k)] = Const.of(0)

    def after_returning_loop(self, loop, rest):
        """After a loop holding a `return`: if its flag is up, return (at the
        function level: the recorded values; in an enclosing loop: end that
        iteration too); otherwise go on with `rest`.

            %r:2 = scf.while (...) ...      // carries %ret, %retv0
            %o = scf.if %r#0 -> (f32) { scf.yield %r#1 } else { <rest> }
        """
        c = self.boolean(self.env[RET_FLAG], loop)

        def returned():
            if self.loop is not None:
                return self.block_end()
            return [self.env[ret_value_name(k)] for k in range(self.n_loop_returns)]
        return self.exit_if(c, [returned, lambda: self.block_values(rest)], loop)

    def block_values(self, stmts):
        r = self.visit_block(stmts)
        return r.values if r else self.block_end()

    def returning_if(self, node, rest):
        cond = self.eval_scalar(node.test, "condition")
        if isinstance(cond, Const) and cond.type.weak:
            return self.visit_block((node.body if cond.value else node.orelse) + rest)
        c = self.boolean(cond, node.test)
        return self.exit_if(c, [lambda: self.block_values(node.body + rest),
                                lambda: self.block_values(node.orelse + rest)], node)

    def exit_if(self, c, branches, node):
        """An scf.if whose two branches (callables, each lowered from the
        same environment) both end the block with the values they return."""
        em, env0 = self.em, dict(self.env)
        rets, bodies = [], []
        for branch in branches:
            with em.capture() as lines:
                self.env = dict(env0)
                rets.append(branch())
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
        if any(isinstance(v, VecSlot) for v in vals):
            if any(w != vals[0] for w in vals):
                raise FrontendError(f"{name} holds {describe(vals[0])} on one path and "
                                    f"{describe(vals[1])} on another; a vector variable "
                                    "must keep its shape", node)
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
            if isinstance(v, VecV):
                self.bind_vector(target.id, v)  # vectors.py
            else:
                self.unbind_vector(target.id)
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
        elif isinstance(target, (ast.Subscript, ast.Attribute)) and self.vector_target(target):
            with self.at(target):
                self.assign_component(target, *self.vector_target(target), v, node)
        elif isinstance(target, ast.Subscript):
            if isinstance(v, VecV):
                raise FrontendError(f"cannot store a {describe(v)} into one array element; "
                                    "dg.store(A, index, v) writes its components into the "
                                    "last axis", node)
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
        op = BINOPS.get(type(node.op))
        if op is None:
            raise FrontendError(f"operator {type(node.op).__name__} is not supported", node)
        t = node.target
        if isinstance(t, ast.Name):
            old = self.visit(ast.copy_location(ast.Name(t.id, ast.Load()), t))
            if not isinstance(old, VecV):
                old = self.scalar(old, t, f"left operand of '{op}='")
            rhs = self.eval_operand(node.value, f"right operand of '{op}='")
            self.assign_to(t, self.binop(op, old, rhs, node), node)
        elif isinstance(t, (ast.Subscript, ast.Attribute)) and self.vector_target(t):
            rhs = self.eval_scalar(node.value, f"right operand of '{op}='")
            with self.at(t):
                self.assign_component(t, *self.vector_target(t), rhs, node, op)
        elif isinstance(t, ast.Subscript):
            with self.at(t):
                arr = self.subscript_base(t)
                idx = self.indices(arr, t)
                old = self.load(arr, idx)
            rhs = self.eval_scalar(node.value, f"right operand of '{op}='")
            self.store(arr, idx, self.binop(op, old, rhs, node), node)
        else:
            raise FrontendError("unsupported augmented assignment target", t)

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
