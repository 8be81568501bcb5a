"""`dg.Tape`: recording a program of launches, copies and fills.

While a tape records (`with dg.Tape() as tape:`) the launch fast path
hands every launch of the recording thread to `_Hook.launch`
(runtime/fastpath.py `RECORD`: one global read per launch when no tape
records). A launch is checked and given its roles by `plan.Call` (the
read/write analysis `dg.vjp` uses), recorded as an `Op`, then run.

What does not change from one launch of a kernel on the same arrays to the
next is a *plan* (`Recording._plan`), kept per kernel and launch key: the
roles (across tapes), each array argument's buffer and view, the distinct
buffers read and written. The hook keeps each kernel's latest two launch
keys with their plans and the launches' `fastpath.Ready`: a loop
re-launching a kernel, or alternating two launches of it (a ping-pong of
buffers), finds its plan and its Ready with one or two comparisons of
launch keys, and the launch then costs one `Op` (its Items are made from it
when first asked for: `Op.args`), the versions read (each marked read:
`Version.last`), a copy per version it overwrites that was read, one new `Version`
per written buffer, and the run of its Ready (docs/tape.md "Host time per
launch").

Versions. Every buffer (arrays.py) has a current `Version`: its contents
since the last recorded write. An operation reading a buffer records the
version it read; an operation about to write a buffer whose current
version some recorded operation read (or this one reads) first copies the
buffer (arrays.py `snapshot`: on a GPU one device-to-device copy on the
current stream into the tape's chunk of pool memory, device.py `Arena`):
that copy is the version's
`array`, what the reverse of its readers will see. A version no one read is
never copied, and the last version of each buffer stays the user's array
(checked unchanged when `gradient()` runs). With `checkpoints=` /
`memory_limit=` no version is copied: the first write of each buffer copies
its initial contents (the state at step 0, one state in all) and the
reverse recomputes (reverse.py, revolve.py).

Changes behind the tape's back (a numpy write, another thread) are caught
by fingerprints (arrays.py `fingerprints`): with `check="launch"` (the
default for host arrays) each buffer's fingerprint is taken after every
recorded write and compared at its next use and at the end of recording;
with `check="end"` (the default for GPU arrays: no wait per launch) the
buffers the reverse reads as they are are fingerprinted when recording
ends, all of them with one read back from the GPU. `gradient()` compares
them again.
"""
from __future__ import annotations

import operator
import threading

from diffgpu.hostdiff.tape.arrays import (Registry, copy_root, device_of, fingerprint,
                                          fingerprints)
from diffgpu.hostdiff.tape.errors import TapeError
from diffgpu.hostdiff.tape.versions import Item, Op, Version
from diffgpu.runtime import fastpath
from diffgpu.types import is_float

_get_ident = threading.get_ident
_version_of = operator.attrgetter("version")
_STATS = fastpath.STATS
_new = object.__new__
#: an empty place in `_Hook.recent` (its key equals no launch key)
_NONE = (object(), None, None)


class _Hook:
    """What runtime/fastpath.py `RECORD` holds while a tape records: its
    `launch` records and runs a launch of the recording thread.

    `recent` keeps per kernel its latest two launch keys (a loop repeats a
    kernel's launch, or alternates two: a ping-pong of buffers), each with
    the tape's plan and the launch's `fastpath.Ready`: a launch equal to one
    of them costs one or two key comparisons, then runs its Ready while the
    Ready is live and the kernel has programs (else through
    `fastpath.run_keyed`, as any launch)."""

    def __init__(self, tape):
        self.tape, self.thread, self.busy = tape, _get_ident(), False
        #: kernel -> [(launch key, plan, Ready or None), second]: the latest first
        #: (`_NONE` where the kernel has had one launch key only)
        self.recent: dict = {}

    def launch(self, kernel, args, grid, block, bind) -> bool:
        if self.busy or _get_ident() != self.thread:
            return False
        tape = self.tape
        if tape.broken is not None:
            tape._usable()
        key = fastpath.launch_key(args, grid, block)  # (read here: interop.compile_only patches it)
        recent = self.recent.get(kernel)
        if recent is None:
            hit = None
        else:
            hit = recent[0]
            if hit[0] != key:
                hit = recent[1]
                if hit[0] != key:
                    hit = None
        if hit is None:
            plan = tape._plan(kernel, args, grid, block, key, bind)
            ready = None
        else:
            plan, ready = hit[1], hit[2]
        ops = tape.ops
        read = list(map(_version_of, plan[8]))
        op = _new(Op)  # (Op(len(ops), plan, read) without its call: the same fields)
        op.index, op.plan, op._read = len(ops), plan, read
        for v in read:
            v.last = op
        written = plan[9]
        if tape._slow:  # fingerprints at each use, or checkpointing's first copies
            tape._slow_before(plan, op)
        else:
            snaps = None
            for b in written:
                v = b.version
                # read, about to be overwritten: copied (a current version has no
                # copy yet: one is made only here, as the next version replaces it)
                if v.last is not None:
                    b.snap(v)
                    if snaps is None:
                        snaps = op.snaps = [v]
                    else:
                        snaps.append(v)
                b.version = nv = _new(Version)  # (Version(b, op, v.number + 1), inline)
                nv.buf, nv.creator, nv.number = b, op, v.number + 1
        self.busy = True
        try:
            if ready is not None and ready.live and kernel._programs:
                # (fastpath.run_ready, inline: a kept Ready came from run_keyed,
                # which ran it: `seen` is set)
                _STATS["fast_reuse"] += 1
                ready.run(args)
            else:
                ready = fastpath.run_keyed(kernel, args, grid, block, bind, key)
                if key is not None:
                    self._keep(kernel, recent, hit, (key, plan, ready))
        except BaseException as e:
            tape.broken = f"{op!r} raised {type(e).__name__} while recording"
            raise
        finally:
            self.busy = False
        if tape._each:
            tape._fingerprint_written(written)
        ops.append(op)
        return True

    def _keep(self, kernel, recent, old, entry) -> None:
        """`entry` first in the kernel's `recent` (in place of `old`, the
        entry of its key whose Ready was not live)."""
        if recent is None:
            self.recent[kernel] = [entry, _NONE]
            return
        if old is not recent[0]:
            recent[1] = recent[0]
        recent[0] = entry

    def host_diff(self, mode: str) -> None:
        if self.busy or _get_ident() != self.thread:
            return
        what = "dg.vjp/dg.autodiff" if mode == "reverse" else "dg.jvp/dg.fwddiff"
        raise TapeError(f"{what} inside a recording dg.Tape: the tape records launches and "
                        "differentiates the whole program with tape.gradient(); call "
                        "host-level derivatives outside the `with dg.Tape()` block")


def current_hook():
    r = fastpath.RECORD
    return r if isinstance(r, _Hook) and r.thread == threading.get_ident() else None


class Recording:
    """The recording half of dg.Tape (tape.py adds the reverse)."""

    def __init__(self, checkpoints=None, memory_limit=None, check="auto"):
        if checkpoints is not None and (not isinstance(checkpoints, int)
                                        or isinstance(checkpoints, bool) or checkpoints < 1):
            raise TapeError(f"dg.Tape(checkpoints=) takes a positive int, got {checkpoints!r}")
        if memory_limit is not None and (not isinstance(memory_limit, int)
                                         or isinstance(memory_limit, bool) or memory_limit < 1):
            raise TapeError(f"dg.Tape(memory_limit=) takes a positive int of bytes, got "
                            f"{memory_limit!r}")
        if checkpoints is not None and memory_limit is not None:
            raise TapeError("dg.Tape: give checkpoints= or memory_limit=, not both")
        if check not in ("auto", "launch", "end"):
            raise TapeError(f"dg.Tape(check=) takes 'auto', 'launch' or 'end', got {check!r}")
        self.checkpoints, self.memory_limit, self.check = checkpoints, memory_limit, check
        self.revolve = checkpoints is not None or memory_limit is not None
        self.reg = Registry()
        self.ops: list[Op] = []
        self.state = "new"
        self.device = None
        self.broken = None
        self._hook = None
        #: (id(kernel), launch key) -> the launch's plan (`_plan`): a launch of the same
        #: arrays again finds it (the tape holds every buffer's array: their memory
        #: is never another's meanwhile)
        self._bound: dict = {}
        self._each = False  # fingerprints at every use, once the device is known (`each`)
        self._slow = self.revolve  # `_each` or checkpointing: `_Hook.launch` asks `_slow_before`
        self._firsts = False  # `first_readers` ran
        self.stats = {"snapshots": 0, "snapshot_bytes": 0, "state_bytes": 0,
                      "recomputed": 0, "reversed": 0, "peak_states": 0, "restores": 0}

    # -- the with block ------------------------------------------------------
    def __enter__(self):
        if self.state != "new":
            raise TapeError("a dg.Tape records once; make a new tape for another program")
        if fastpath.RECORD is not None:
            raise TapeError("dg.Tape: another tape is recording; tapes do not nest")
        self._hook = _Hook(self)
        fastpath.RECORD = self._hook
        self.state = "recording"
        return self

    def __exit__(self, exc_type, exc, tb):
        if fastpath.RECORD is self._hook:
            fastpath.RECORD = None
        self._hook = None  # (it refers to the tape: no cycle left, see __del__)
        self.state = "done"
        snaps = [v for op in self.ops for v in op.snaps]  # (counted once, not per copy)
        self.stats["snapshots"] = len(snaps)
        self.stats["snapshot_bytes"] = sum(v.buf.nbytes for v in snaps)
        if exc_type is not None:
            self.broken = self.broken or f"the recorded block raised {exc_type.__name__}"
            return False
        if self.broken is None:
            self._seal()
        return False

    def __del__(self):
        """Give the copies' memory back as soon as the tape goes: its
        operations and versions refer to each other (cycles the garbage
        collector frees only later), so a loop recording a new tape per
        iteration would otherwise hold every old tape's copies until a
        collection (on a GPU its pool would allocate anew meanwhile)."""
        for op in self.__dict__.get("ops", ()):
            for v in op.snaps:
                v.copy = v._array = None
        reg = self.__dict__.get("reg")
        for b in getattr(reg, "buffers", ()):
            b.first = None
        for arena in getattr(reg, "arenas", {}).values():
            arena.release()

    @property
    def each(self) -> bool:
        """Fingerprints at every use (check="launch", or "auto" on the host)."""
        return self.check == "launch" or (self.check == "auto" and self.device == "cpu")

    # -- recording ------------------------------------------------------------
    def _usable(self):
        if self.broken is not None:
            raise TapeError(f"this tape cannot be used: {self.broken}")

    def _device(self, dev, what: str) -> None:
        if self.device is None:
            self.device = dev
            self._each = self.each
            self._slow = self._each or self.revolve
        elif dev != self.device:
            where = lambda d: "the host (numpy)" if d == "cpu" else f"GPU {d}"
            raise TapeError(f"{what} runs on {where(dev)}, but this tape records on "
                            f"{where(self.device)}; a tape records one device")

    def _item(self, a, name, what):
        """(Buffer, View) of argument `a`; at a buffer's first use its first
        version (and with fingerprints at every use, its fingerprint)."""
        buf, view = self.reg.view(a, f"'{name}' of {what.partition(' ')[2]}")
        if buf.device != self.device:
            self._device(buf.device, what)
        if buf.version is None:
            buf.version = Version(buf, None, 0)
            if self._each:
                buf.fp = fingerprint(buf.root)
        return buf, view

    def _verify(self, buf, where) -> None:
        """`where`: the operation (or the text) named if the check fails."""
        if buf.fp is not None and fingerprint(buf.root) != buf.fp:
            where = where if isinstance(where, str) else repr(where)
            last = buf.version.creator or buf.version.last
            since = f"after {last!r}" if last is not None else "since the tape first saw it"
            self.broken = f"{buf.name} was changed outside the tape {since}"
            raise TapeError(f"{buf.name} was changed {since} by something the tape did not "
                            f"record (a numpy/CuPy write?), found at {where}; record changes "
                            "with a launch, dg.copy or dg.fill")

    def _slow_before(self, plan, op) -> None:
        """`_Hook.launch`'s work before the run with fingerprints at each use
        (the check of every buffer it touches) or checkpointing (the first
        copy of each buffer it writes): the versions too."""
        if self._each:
            for b in plan[10]:
                self._verify(b, op)
        written = plan[9]
        if self.revolve:
            self._first_copies(written, op)
        for b in written:
            v = b.version
            if not self.revolve and v.last is not None and v.copy is None:
                self._snapshot(v, op)
            b.version = Version(b, op, v.number + 1)

    def _snapshot(self, v, op) -> None:
        """Copy version `v` (about to be overwritten by `op`; read before)."""
        v.buf.snap(v)
        op.snaps = [*op.snaps, v]

    def _first_copies(self, written, op) -> None:
        """Checkpointing: the initial contents of each buffer at its first write."""
        for b in written:
            if b.first is None:
                b.first = copy_root(b.root)
                self.stats["state_bytes"] += b.nbytes
                if self.memory_limit is not None and \
                        self.stats["state_bytes"] > self.memory_limit:
                    self.broken = "memory_limit below one state"
                    raise TapeError(
                        f"dg.Tape(memory_limit={self.memory_limit}) is below one state of "
                        f"this program: the arrays it writes hold "
                        f"{self.stats['state_bytes']} bytes (so far, at {op!r})")

    def _fingerprint_written(self, written) -> None:
        for b, fp in zip(written, fingerprints([b.root for b in written])):
            b.fp = fp

    def _roles(self, kernel, args, grid, block, key):
        """(facts, roles, alias groups, outputs written whole) of a launch
        (of launch `key`), from plan.Call (checked like dg.vjp), kept per
        kernel and launch key (every tape's launches of the same arrays
        find them) and per key without pointers (fastpath.moved_key: new
        arrays laid out and aliased as earlier ones; what Call reads of
        the pointers is in it)."""
        table = kernel.__dict__.get("_tape_roles")
        if table is None or not kernel._programs:  # (programs dropped: start over)
            table = kernel.__dict__["_tape_roles"] = {}
        got = mkey = None
        if key is not None:
            got = table.get(key)
            if got is None:  # new arrays laid out and aliased as earlier ones?
                moved = fastpath.moved_key(((args, key),))
                mkey = ("layout", moved) if moved is not None else None
                got = table.get(mkey) if mkey is not None else None
                if len(table) >= 1024:  # a loop over ever new layouts
                    table.clear()
                if got is not None:
                    table[key] = got
        if got is None:
            from diffgpu.hostdiff.plan import Call

            call = Call(kernel[grid, block], args, "vjp")
            full = frozenset(i for i, r in enumerate(call.role)
                             if r == "output" and call.written_once(i))
            got = (call.facts, tuple(call.role), tuple(tuple(g) for g in call.groups), full)
            if key is not None:
                table[key] = got
            if mkey is not None:
                table[mkey] = got
        return got

    def _plan(self, kernel, args, grid, block, key, bind) -> tuple:
        """The plan of a launch not among the kernel's latest two (`_Hook`):
        kept per kernel and launch key in this tape; the roles from `_roles`.
        A launch whose roles cannot be had runs (its own errors first), then
        leaves the tape unusable."""
        plan = self._bound.get((id(kernel), key)) if key is not None else None
        if plan is None:
            what = f"#{len(self.ops)} {kernel.name}"
            try:
                facts, roles, groups, full = self._roles(kernel, args, grid, block, key)
            except Exception as e:
                # the launch's own errors first (then nothing ran); a launch that runs
                # but cannot be differentiated leaves the tape unusable
                self._hook.busy = True
                try:
                    fastpath.launch(kernel, args, grid, block, bind)
                finally:
                    self._hook.busy = False
                self.broken = f"{what} could not be recorded: {e}"
                raise TapeError(f"dg.Tape cannot record {what}: {e}") from None
            names, parts, reads, writes = kernel.arg_names, [], [], []
            for i, (a, f) in enumerate(zip(args, facts)):
                if f.get("array"):
                    r, w = bool(f["read"]), bool(f["write"])
                    b, v = self._item(a, names[i], what)
                    if r and b not in reads:
                        reads.append(b)
                    if w and b not in writes:
                        writes.append(b)
                    parts.append((i, v, names[i], r, w, reads.index(b) if r else -1))
            for b in writes:
                b.written = True
            bufs = tuple(dict.fromkeys(p[1].buf for p in parts))
            plan = (kernel.name, kernel, grid, block, roles, groups, full, tuple(parts),
                    tuple(reads), tuple(writes), bufs, tuple(args))
            if key is not None:
                if len(self._bound) >= 1024:  # a loop over ever new arrays
                    self._bound.clear()
                self._bound[(id(kernel), key)] = plan
        return plan

    def host_op(self, kind: str, dst, src=None, value=None, run=None) -> None:
        """Record `dg.copy(dst, src)` / `dg.fill(dst, value)` and run it."""
        self._usable()
        what = f"#{len(self.ops)} dg.{kind}"
        parts, reads = [], []
        if src is not None:
            b, v = self._item(src, "src", what)
            reads.append(b)
            parts.append((0, v, "src", True, False, 0))
        b, v = self._item(dst, "dst", what)
        parts.append((len(parts), v, "dst", False, True, -1))
        if self._each:
            for u in dict.fromkeys(reads + [b]):
                self._verify(u, what)
        plan = (f"dg.{kind}", None, None, None, (), (), frozenset(), tuple(parts),
                tuple(reads), (b,), (), (None,) * len(parts))
        read = [r.version for r in reads]
        op = Op(len(self.ops), plan, read)
        op.kind = kind
        for r in read:
            r.last = op
        b.written = True
        if self.revolve:
            self._first_copies((b,), op)
        elif b.version.last is not None and b.version.copy is None:
            self._snapshot(b.version, op)
        b.version = Version(b, op, b.version.number + 1)
        op.value = value
        self._hook.busy = True
        try:
            run()
        except BaseException as e:
            self.broken = f"{op!r} raised {type(e).__name__} while recording"
            raise
        finally:
            self._hook.busy = False
        if self._each:
            self._fingerprint_written((b,))
        self.ops.append(op)

    def _seal(self) -> None:
        """End of recording: check the fingerprints taken at each use, and
        take those of the buffers the reverse reads as they are (one read
        back for all of them on a GPU)."""
        for b in self.reg.buffers:
            if self._each:
                self._verify(b, "the end of recording")
        need = [b for b in self.needed_live() if b.fp is None]
        for b, fp in zip(need, fingerprints([b.root for b in need])):
            b.fp = fp
        if self.revolve and self.memory_limit is not None and self.stats["state_bytes"]:
            self.checkpoints = max(1, self.memory_limit // self.stats["state_bytes"])

    def readers(self, v) -> list:
        """The operations that read version `v`, in order (derived from the
        operations: a launch marks only its latest reader, `Version.last`)."""
        return [op for op in self.ops if any(r is v for r in op._read)]

    def first_readers(self) -> None:
        """Each read version's first reader (`Version.first`, which the
        reverse asks for), in one pass over the operations; once per tape."""
        if self._firsts:
            return
        for op in self.ops:
            for v in op._read:
                if v.first is None:
                    v.first = op
        self._firsts = True

    def needed_live(self) -> list:
        """Buffers whose current contents the reverse reads: read at their
        last version (never written, with checkpointing)."""
        if self.revolve:
            return [b for b in self.reg.buffers
                    if not b.written and b.version is not None
                    and b.version.last is not None]
        return [b for b in self.reg.buffers
                if b.version is not None and b.version.last is not None]

    def verify_live(self) -> None:
        """The buffers the reverse reads as they are still hold what the tape
        fingerprinted (one read back for all of them on a GPU)."""
        need = [b for b in self.needed_live() if b.fp is not None]
        for b, fp in zip(need, fingerprints([b.root for b in need])):
            if fp != b.fp:
                last = b.version.last
                raise TapeError(f"{b.name} was changed after the tape recorded {last!r} "
                                "reading it; gradient() differentiates the recorded program "
                                "and would see values it never read. Record the change "
                                "inside the tape, or take the gradient before changing it")


def float_args(op):
    return [i for i, a in enumerate(op.args) if isinstance(a, Item) and a.is_float]


__all__ = ["Recording", "Op", "Item", "Version", "current_hook", "is_float", "device_of"]
