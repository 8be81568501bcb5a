"""How many words a kernel's reverse sweeps push onto their heap tapes, as a
formula of the launch (its scalar arguments, array extents, grid and block).

A loop that reverse mode cannot unroll, recompute or checkpoint keeps its
forward values on a per-thread stack of 8-byte words (lowering/autodiff/
tape.py): 128 words on the thread's stack, then a buffer from `malloc`
(the device heap on a GPU) that doubles whenever it is full. Each push has
an `scf.if` holding the `memref.alloc` of the bigger `memref<?xi64>` buffer
(inside the push's `scf.if` of a full buffer); it runs once per trip of the
loops around it. So
the words a thread pushes are at most

    sum over push sites of  prod over the loops around it of  trips(loop)

through calls too (a call in a loop: the callee's words times the trips).
`tape_words(module)` gives, per kernel, that sum as an expression tree the
runtime evaluates before a launch (python/diffgpu/runtime/launch_checks.py
`evaluate`):

    ["c", k]           a constant         ["arg", i]      scalar argument i
    ["dim", i, d]      extent d of array argument i
    ["bdim", d], ["gdim", d]              block / grid extent d
    ["+", a, b], ["-", a, b], ["*", a, b], ["max", a, b], ["min", a, b],
    ["cdiv", a, b]     ceil(a / b)        ["div", a, b]   a / b towards zero
    ["trips", lb, ub, step]               max(0, cdiv(ub - lb, step)) of an scf.for

A branch around a push counts as taken (an upper bound). A push whose loop
trip count is no such formula (a `while` loop, bounds read from memory, an
inner loop bounded by an outer one's variable) makes the kernel's entry
`None`: its tape size is not known before the launch, and the runtime reads
the tape's overflow flag after such a launch instead
(runtime/tape_overflow.py).

`record()` collects `tape_words` (with the stack words, `initial`) of each
module `diffgpu-check-collectives` sees (the first check after `diffgpu-autodiff`, so derivatives are in the
module) into the dict it yields, for the compile driver's payload
("heap_tape").
"""
from __future__ import annotations


from diffgpu.dialects import names as N
from diffgpu.lowering.common import targets
from diffgpu.lowering.common.ir_util import callee, sym_name, top_ops, walk
from diffgpu.lowering.common.recorder import Recorder

_WORDS = Recorder()
_PASS = ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui",
         "arith.trunci")
_BIN = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.ceildivsi": "cdiv",
        "arith.ceildivui": "cdiv", "arith.maxsi": "max", "arith.maxui": "max",
        "arith.minsi": "min", "arith.minui": "min"}
_ZERO = ["c", 0]


#: words a thread's tape keeps on its stack (lowering/autodiff/tape.py) before
#: it moves to a heap buffer
INITIAL_WORDS = 128

def _tape_grow(op) -> bool:
    """Is `op` (an scf.if) the grow branch of a tape push?"""
    if op.name != "scf.if" or not op.regions[0].blocks:
        return False
    for inner in op.regions[0].blocks[0].operations:
        if inner.operation.name == "memref.alloc" and \
                str(inner.results[0].type) == "memref<?xi64>":
            return True
    return False


def _value(v, fn):
    """The expression of the integer SSA value `v` of function `fn`, or None."""
    from diffgpu._mlir import ir

    if isinstance(v.owner, ir.Block):
        return _array_arg(fn, v)
    op = v.owner.operation
    name = op.name
    if name == "arith.constant":
        try:
            return ["c", ir.IntegerAttr(op.attributes["value"]).value]
        except Exception:
            return None
    if name in _PASS:
        return _value(op.operands[0], fn)
    if name in _BIN:
        a, b = _value(op.operands[0], fn), _value(op.operands[1], fn)
        return None if a is None or b is None else [_BIN[name], a, b]
    if name in ("arith.divsi", "arith.divui"):
        a, b = _value(op.operands[0], fn), _value(op.operands[1], fn)
        return None if a is None or b is None else ["div", a, b]
    if name == "memref.dim":
        src, idx = op.operands[0], _value(op.operands[1], fn)
        base = _array_arg(fn, src)
        if base is None or idx is None or base[0] != "arg" or idx[0] != "c":
            return None
        return ["dim", base[1], idx[1]]
    if name in (N.BLOCK_DIM, N.GRID_DIM):
        d = ir.IntegerAttr(op.attributes["dim"]).value
        return ["bdim" if name == N.BLOCK_DIM else "gdim", d]
    return None


def _trips(op, fn):
    """The trips of the loops around `op` inside `fn`, multiplied: an
    expression, or None where one of them is not known."""
    out = ["c", 1]
    parent = op.operation.parent
    while parent is not None and parent.name != "func.func":
        if parent.name == "scf.for":
            lb, ub, step = (_value(parent.operands[k], fn) for k in range(3))
            if lb is None or ub is None or step is None:
                return None
            out = ["*", out, ["trips", lb, ub, step]]
        elif parent.name in ("scf.while", "scf.parallel", "scf.forall"):
            return None
        parent = parent.operation.parent
    return out


def _subst(e, args):
    """`e` with ["arg", i] replaced by args[i] (None: not known)."""
    if e is None:
        return None
    if e[0] == "arg":
        return args[e[1]] if e[1] < len(args) else None
    if e[0] in ("c", "dim", "bdim", "gdim"):
        if e[0] == "dim":
            base = args[e[1]] if e[1] < len(args) else None
            return None if base is None or base[0] != "arg" else ["dim", base[1], e[2]]
        return e
    parts = [_subst(x, args) for x in e[1:]]
    return None if any(p is None for p in parts) else [e[0]] + parts


def _array_arg(fn, v) -> list | None:
    """["arg", i] for a call operand that is `fn`'s argument i (arrays pass
    through calls so; their extents then stay known)."""
    from diffgpu._mlir import ir

    block = v.owner
    if isinstance(block, ir.Block):
        owner = block.owner
        if owner is not None and owner.operation == fn.operation and \
                block == fn.regions[0].blocks[0]:
            return ["arg", ir.BlockArgument(v).arg_number]
    return None


def tape_words(module) -> dict:
    """kernel name -> the expression of the tape words a thread pushes
    (module docstring), or None when not known; kernels that push none are
    left out."""
    funcs = {sym_name(f): f for f in top_ops(module, ("func.func",))}
    memo: dict = {}

    def words(name, stack=()):
        if name in memo:
            return memo[name]
        if name in stack:
            return None  # recursion: no bound
        fn = funcs[name]
        total, unknown, pushes = _ZERO, False, False
        for op in walk(fn, ("scf.if", "func.call")):
            if op.name == "scf.if":
                if not _tape_grow(op):
                    continue
                pushes = True
                t = _trips(op, fn)
            else:
                c = callee(op)
                if c not in funcs:
                    continue
                inner = words(c, stack + (name,))
                if inner is _ZERO:
                    continue
                pushes = True
                args = [_array_arg(fn, v) or _value(v, fn) for v in op.operands]
                t = _trips(op, fn)
                t = None if t is None or inner is None else ["*", t, _subst(inner, args)]
                if t is not None and None in _flat(t):
                    t = None
            if t is None:
                unknown = True
            else:
                total = t if total is _ZERO else ["+", total, t]
        out = _ZERO if not pushes else (None if unknown else total)
        memo[name] = out
        return out

    result = {}
    for name, f in funcs.items():
        if targets.KERNEL_ATTR in f.attributes:
            w = words(name)
            if w is not _ZERO:
                result[name] = w
    return result


def _flat(e):
    if e is None or not isinstance(e, list):
        return [e]
    out = [e]
    for x in e[1:]:
        if isinstance(x, list) or x is None:
            out += _flat(x)
    return out


def record():
    """Collect `tape_words` of every module checked inside (this thread)."""
    return _WORDS.record()


def note(module) -> None:
    """Hand {kernel: {"words": tape_words(module)[kernel], "initial": words
    on the thread's stack}} to the innermost `record()`, if any."""
    found = _WORDS.innermost()
    if found is not None and walk(module, ("memref.alloc",)):
        for name, words in tape_words(module).items():
            found[name] = {"words": words, "initial": INITIAL_WORDS}
