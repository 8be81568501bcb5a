"""The tape: how the reverse sweep gets forward values it cannot see.

Values of the function's entry block are SSA values the reverse sweep uses
directly (standalone reverse functions hold both sweeps). A value defined in
a nested block that runs at most once (an `scf.if` branch outside loops)
goes through a one-value slot (`memref.alloca() : memref<T>`). Values of
loop bodies (and every value of a split augmented-forward/reverse pair used
for calls) go on a per-thread LIFO stack of i64 words:

    %h = memref.alloca() : memref<1xmemref<?xi64>>   // the growable buffer
                                                      // (first 128 words: an alloca)
    %n = memref.alloca() : memref<1xindex>            // words in use

A push appends before the terminator of the value's forward block (growing
the buffer by doubling, with memref.alloc/dealloc), a pop is emitted at the
start of the matching reverse block; since the reverse sweep replays every
block in exactly the reverse order, pushes and pops match LIFO. A buffer
that cannot grow (`malloc` returned null) never faults the launch: the
thread records the overflow in the module's `@__dg_tape_overflow`, which
the runtime reads after the launch, and keeps its buffer (`_grow`).

Loops with a small constant trip count never reach the stack: the function
being differentiated gets them unrolled first (unroll.py), so their values
use one-value slots, which LLVM keeps in registers. Values that are cheap to
compute again in the reverse (index arithmetic, loads of read-only arrays,
simple float ops of those) are not pushed at all (remat.py).

A float word is tagged at both ends with the same number: the op encoding it
carries `diffgpu.tape_push = N`, the op decoding it `diffgpu.tape_pop = N`.
When the function is differentiated again (higher order), the tags tell the
outer pass that the popped value IS the pushed one (rules/tape.py): its
derivative flows back through a tape of adjoints (or forward through a tape
of tangents), where the integer words alone would lose it.

    %w = arith.bitcast %x {diffgpu.tape_push = 3} : f64 to i64   // push
    %y = arith.bitcast %w2 {diffgpu.tape_pop = 3} : i64 to f64   // its pop
"""
from __future__ import annotations

from diffgpu import switches
from diffgpu.abi import TAPE_OVERFLOW_GLOBAL as OVERFLOW_GLOBAL
from diffgpu.abi import TAPE_RECOVER_GLOBAL as RECOVER_GLOBAL
from diffgpu._mlir import arith, ir, memref, scf
from diffgpu.lowering.common.ir_util import isa, sym_name

from diffgpu.lowering.autodiff import build as B
# the words a thread's tape holds on its stack before it moves to the heap
# (a fact the runtime's heap check reads, so it lives with the facts)
from diffgpu.lowering.facts.heap_tape import INITIAL_WORDS  # noqa: F401
TAPE_PUSH = "diffgpu.tape_push"
TAPE_POP = "diffgpu.tape_pop"


def holder_types():
    """Types of the (buffer holder, counter) pair passed to split functions."""
    buf = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], B.i64())
    return (ir.MemRefType.get([1], buf), ir.MemRefType.get([1], B.index_type()))


def at_begin(block):
    """Before the first op of `block` (O(1): listing the ops is a walk)."""
    return ir.InsertionPoint.at_block_begin(block)


class Tape:
    """Tape state of one generated function pair (fwd may equal rev)."""

    def __init__(self, fwd_entry, rev_entry, fwd_holder=None, rev_holder=None,
                 initial=INITIAL_WORDS):
        self.fwd_entry, self.rev_entry = fwd_entry, rev_entry
        self._fwd = fwd_holder  # (holder, counter) or None: created lazily
        self._rev = rev_holder
        self.owned = fwd_holder is None  # standalone: we allocate and free it
        self.initial = initial  # words of the stack-allocated first buffer

    # -- holders ----------------------------------------------------------
    def fwd_holder(self):
        if self._fwd is None:
            ht, ct = holder_types()
            with at_begin(self.fwd_entry):
                h = memref.alloca(ht, [], [])
                # the first words live on the thread's stack: no heap
                # allocation (device malloc) unless the tape outgrows them
                first = memref.alloca(ir.MemRefType.get([self.initial], B.i64()), [], [])
                buf = memref.cast(ht.element_type, first)
                c0 = B.idx(0)
                memref.store(buf, h, [c0])
                n = memref.alloca(ct, [], [])
                memref.store(c0, n, [c0])
            self._fwd = (h, n)
            if self._rev is None:
                self._rev = self._fwd
        return self._fwd

    def rev_holder(self):
        if self._rev is None:
            self.fwd_holder()
        return self._rev

    def release(self):
        """Free the buffer (standalone functions, at the end of the reverse)."""
        if self.owned and self._fwd is not None:
            h, _ = self._fwd
            _free_heap(memref.load(h, [B.idx(0)]), self.initial)

    # -- slots ------------------------------------------------------------
    def fwd_slot(self, t):
        with at_begin(self.fwd_entry):
            return B.alloca_scalar(t)

    def adj_slot(self, t):
        """A zero-initialised slot in the reverse function's entry block."""
        with at_begin(self.rev_entry):
            s = B.alloca_scalar(t)
            memref.store(B.zero(t), s, [])
        return s

    # -- stack ------------------------------------------------------------
    def push(self, v, tag=None):
        """Append v at the current insertion point (forward code); `tag`
        marks a float word (see the module docstring). A full buffer grows
        (`_grow`); the branch yields the index the word goes to."""
        h, n = self.fwd_holder()
        word = _encode(v, tag)
        c0 = B.idx(0)
        cnt = memref.load(n, [c0])
        buf = memref.load(h, [c0])
        cap = memref.dim(buf, c0)
        full = arith.cmpi(arith.CmpIPredicate.uge, cnt, cap)
        grow = scf.IfOp(full, [B.index_type()], has_else=True)
        with ir.InsertionPoint(grow.then_block):
            scf.YieldOp([_grow(h, buf, cnt, cap, self.initial)])
        with ir.InsertionPoint(grow.else_block):
            scf.YieldOp([cnt])
        buf2 = memref.load(h, [c0])
        memref.store(word, buf2, [grow.results[0]])
        memref.store(arith.addi(cnt, B.idx(1)), n, [c0])

    def pop(self, t, tag=None):
        """Pop a value of type t at the current insertion point (reverse
        code); returns (value, first op emitted). The index is clamped to
        the buffer (an overflowed tape's counter runs past it)."""
        h, n = self.rev_holder()
        c0 = B.idx(0)
        first = c0.owner
        cnt = memref.load(n, [c0])
        top = arith.subi(cnt, B.idx(1))
        memref.store(top, n, [c0])
        buf = memref.load(h, [c0])
        last = arith.subi(memref.dim(buf, c0), B.idx(1))
        return _decode(memref.load(buf, [arith.minui(top, last)]), t, tag), first


def _grow(h, buf, cnt, cap, initial):
    """The grow branch of a push (`cnt >= cap`): the index the word goes to.

    A tape that fills its buffer exactly (`cnt == cap`) asks for one twice
    as large; when that allocation fails (`malloc` returned null: the GPU's
    heap is used up; or the test cap `DIFFGPU_TAPE_CAP_WORDS`), the thread
    keeps its buffer, records the words it asked for in the module's
    overflow flag (`overflow_flag`: the runtime raises a LaunchError after
    the launch) and from then on writes every word to the buffer's last
    slot: its counter runs past the buffer (`cnt > cap`, which no other
    tape reaches), so pushes and pops still match and nothing outside the
    buffer is touched; the values are garbage, and the launch is reported
    as failed."""
    c0, c1 = B.idx(0), B.idx(1)
    last = arith.subi(cap, c1)
    fresh = arith.cmpi(arith.CmpIPredicate.eq, cnt, cap)
    attempt = scf.IfOp(fresh, [B.index_type()], has_else=True)
    with ir.InsertionPoint(attempt.then_block):
        newcap = arith.muli(cap, B.idx(2))
        nb = memref.alloc(buf.type, [newcap], [])
        ok = arith.cmpi(arith.CmpIPredicate.ne, memref.extract_aligned_pointer_as_index(nb),
                        c0)
        limit = switches.tape_cap_words()
        if limit is not None:  # the test cap: a bigger buffer counts as a failed malloc
            ok = arith.andi(ok, arith.cmpi(arith.CmpIPredicate.ule, newcap, B.idx(limit)))
        done = scf.IfOp(ok, [B.index_type()], has_else=True)
        with ir.InsertionPoint(done.then_block):
            loop = scf.ForOp(c0, cap, c1)
            with ir.InsertionPoint(loop.body):
                i = loop.induction_variable
                memref.store(memref.load(buf, [i]), nb, [i])
                scf.YieldOp([])
            _free_heap(buf, initial)
            memref.store(nb, h, [c0])
            scf.YieldOp([cnt])
        with ir.InsertionPoint(done.else_block):
            if limit is not None:  # allocated, but over the cap: give it back
                _free_if_allocated(nb)
            memref.store(newcap, overflow_flag(), [c0])
            _trap_unless_recovering()
            scf.YieldOp([last])
        scf.YieldOp([done.results[0]])
    with ir.InsertionPoint(attempt.else_block):  # overflowed before: the last slot
        scf.YieldOp([last])
    return attempt.results[0]


def _free_if_allocated(buf):
    nonnull = arith.cmpi(arith.CmpIPredicate.ne, memref.extract_aligned_pointer_as_index(buf),
                         B.idx(0))
    free = scf.IfOp(nonnull)
    with ir.InsertionPoint(free.then_block):
        memref.dealloc(buf)
        scf.YieldOp([])


def overflow_flag():
    """`memref.get_global @__dg_tape_overflow` (zero: no overflow) at the
    insertion point; the global is added to the enclosing module once."""
    return _word_global(OVERFLOW_GLOBAL, 0)


def _trap_unless_recovering() -> None:
    """A trap unless the module's `@__dg_tape_recover` is non-zero: it is 1
    as compiled (the thread goes on, the runtime reads the overflow flag);
    a launcher that cannot read the flag (XLA, for dg.jax on a GPU) runs
    the PTX with it set to 0 (runtime/tape_overflow.py `trapping_ptx`), so
    its launch fails instead of computing garbage."""
    recover = memref.load(_word_global(RECOVER_GLOBAL, 1), [B.idx(0)])
    stop = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, recover, B.idx(0)))
    with ir.InsertionPoint(stop.then_block):
        ir.Operation.create("llvm.intr.trap")
        scf.YieldOp([])


def _word_global(name: str, value: int):
    """`memref.get_global @name` of a public one-index-word global that
    starts as `value`, added to the enclosing module once."""
    t = ir.MemRefType.get([1], B.index_type())
    op = ir.InsertionPoint.current.block.owner
    while op is not None and op.name != "builtin.module":
        op = op.operation.parent
    body = op.regions[0].blocks[0]
    if not any(o.operation.name == "memref.global" and sym_name(o) == name
               for o in body.operations):
        init = ir.DenseElementsAttr.get_splat(ir.RankedTensorType.get([1], B.index_type()),
                                              ir.IntegerAttr.get(B.index_type(), value))
        with ir.InsertionPoint.at_block_begin(body):
            memref.GlobalOp(name, ir.TypeAttr.get(t), initial_value=init, alignment=8)
    return memref.get_global(t, name)


def _free_heap(buf, initial=INITIAL_WORDS):
    """Free a tape buffer unless it is the initial stack one (capacity
    INITIAL_WORDS; heap buffers are always larger)."""
    c0 = B.idx(0)
    heap = arith.cmpi(arith.CmpIPredicate.ne, memref.dim(buf, c0), B.idx(initial))
    free = scf.IfOp(heap)
    with ir.InsertionPoint(free.then_block):
        memref.dealloc(buf)
        scf.YieldOp([])


def _tag(v, name, tag):
    if tag is not None:
        v.owner.attributes[name] = ir.IntegerAttr.get(B.i64(), tag)
    return v


def _word_kind(t) -> str | None:
    """How a value of type `t` sits in a tape word: "i64", "f64", "f32",
    "index", or None (another integer: zero-extended)."""
    if B.is_index(t):
        return "index"
    if isa(t, ir.F64Type):
        return "f64"
    if isa(t, ir.F32Type):
        return "f32"
    if B.is_int(t) and ir.IntegerType(t).width == 64:
        return "i64"
    return None


def _encode(v, tag=None):
    s = _word_kind(v.type)
    i64 = B.i64()
    if s == "i64":
        return v
    if s == "f64":
        return _tag(arith.bitcast(i64, v), TAPE_PUSH, tag)
    if s == "f32":
        return arith.extui(i64, _tag(arith.bitcast(ir.IntegerType.get_signless(32), v),
                                     TAPE_PUSH, tag))
    if s == "index":
        return arith.index_cast(i64, v)
    if B.is_int(v.type):
        return arith.extui(i64, v)
    raise ValueError(f"cannot put a value of type {v.type} on the tape")


def _decode(w, t, tag=None):
    s = _word_kind(t)
    if s == "i64":
        return w
    if s == "f64":
        return _tag(arith.bitcast(t, w), TAPE_POP, tag)
    if s == "f32":
        return _tag(arith.bitcast(t, arith.trunci(ir.IntegerType.get_signless(32), w)),
                    TAPE_POP, tag)
    if s == "index":
        return arith.index_cast(t, w)
    return arith.trunci(t, w)


def tag_of(op):
    """("push" | "pop", N) for a tagged tape op, else None."""
    attrs = op.attributes
    if TAPE_PUSH in attrs:
        return "push", ir.IntegerAttr(attrs[TAPE_PUSH]).value
    if TAPE_POP in attrs:
        return "pop", ir.IntegerAttr(attrs[TAPE_POP]).value
    return None
