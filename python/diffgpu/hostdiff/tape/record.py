"""`dg.Tape`: recording a program of launches, copies and fills.

While a tape records (`with dg.Tape() as tape:`) the launch fast path
hands every launch of the recording thread to `Tape._launch`
(runtime/fastpath.py `RECORD`: one global read per launch when no tape
records). A launch is checked and given its roles by `plan.Call` (the
read/write analysis `dg.vjp` uses), recorded as an `Op`, then run. The
roles (per kernel and launch key, across tapes) and the buffers and views
of the arguments (per tape) are kept: a loop's launches read their launch
key once and look the rest up (docs/tape.md "Host time per launch").

Versions. Every buffer (arrays.py) has a current `Version`: its contents
since the last recorded write. An operation reading a buffer records the
version it read; an operation about to write a buffer whose current
version some recorded operation read (or this one reads) first copies the
buffer: that copy is the version's `array`, what the reverse of its
readers will see. A version no one read is never copied, and the last
version of each buffer stays the user's array (checked unchanged when
`gradient()` runs). With `checkpoints=` / `memory_limit=` no version is
copied: the first write of each buffer copies its initial contents (the
state at step 0, one state in all) and the reverse recomputes
(reverse.py, revolve.py).

Changes behind the tape's back (a numpy write, another thread) are caught
by fingerprints (arrays.py `fingerprint`): with `check="launch"` (the
default for host arrays) each buffer's fingerprint is taken after every
recorded write and compared at its next use and at the end of recording;
with `check="end"` (the default for GPU arrays: no wait per launch) the
buffers the reverse reads as they are are fingerprinted when recording
ends. `gradient()` compares them again.
"""
from __future__ import annotations

import threading

from diffgpu.hostdiff.tape.arrays import Registry, copy_root, device_of, fingerprint
from diffgpu.hostdiff.tape.errors import TapeError
from diffgpu.runtime import fastpath
from diffgpu.types import is_float


class Version:
    """A buffer's contents between two recorded writes."""

    __slots__ = ("buf", "creator", "readers", "array", "number")

    def __init__(self, buf, creator, number: int):
        self.buf, self.creator, self.number = buf, creator, number
        self.readers: list = []
        self.array = None  # the copy made before it was overwritten (None: live)


class Item:
    """One array argument of an operation."""

    __slots__ = ("view", "name", "read", "write", "version", "is_float")

    def __init__(self, view, name, read, write, version):
        self.view, self.name, self.read, self.write = view, name, read, write
        self.version = version  # the version read (None if only written)
        self.is_float = view.dtype.kind == "f"


class Op:
    """One recorded operation: a launch, `dg.copy` or `dg.fill`."""

    __slots__ = ("index", "kind", "kernel", "grid", "block", "args", "roles", "groups",
                 "full", "snaps", "value", "label", "rev")

    def __init__(self, index, kind, label):
        self.index, self.kind, self.label = index, kind, label
        self.kernel = self.grid = self.block = None
        self.args: list = []    # per parameter: an Item, or the scalar value
        self.roles = self.groups = ()
        self.full = frozenset()  # outputs whose every element the launch writes
        self.snaps: list = []    # versions copied before this operation ran
        self.value = None
        self.rev = None  # its reverse's plan, from the first reverse (reverse.py `_plan`)

    def items(self):
        return [a for a in self.args if isinstance(a, Item)]

    def __repr__(self) -> str:
        return f"#{self.index} {self.label}"  # "#3 step", "#4 dg.copy"


class _Hook:
    """What runtime/fastpath.py `RECORD` holds while a tape records."""

    def __init__(self, tape):
        self.tape, self.thread, self.busy = tape, threading.get_ident(), False

    def launch(self, kernel, args, grid, block, bind) -> bool:
        if self.busy or threading.get_ident() != self.thread:
            return False
        self.tape._launch(kernel, args, grid, block, bind)
        return True

    def host_diff(self, mode: str) -> None:
        if self.busy or threading.get_ident() != self.thread:
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
        self._last: dict = {}  # id(kernel) -> (launch key, roles) of its latest launch
        #: (id(kernel), launch key) -> per array argument (position, Buffer, View,
        #: read, written): a launch of the same arrays again finds them (the tape
        #: holds every buffer's array: their memory is never another's meanwhile)
        self._bound: dict = {}
        self._last_bound: dict = {}  # id(kernel) -> (launch key, bound) of its latest launch
        self._each = None  # `each`, once the device is known
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
        self.state = "done"
        if exc_type is not None:
            self.broken = self.broken or f"the recorded block raised {exc_type.__name__}"
            return False
        if self.broken is None:
            self._seal()
        return False

    @property
    def each(self) -> bool:
        """Fingerprints at every use (check="launch", or "auto" on the host)."""
        e = self._each
        if e is None:
            e = self.check == "launch" or (self.check == "auto" and self.device == "cpu")
            if self.device is not None:
                self._each = e
        return e

    # -- recording ------------------------------------------------------------
    def _usable(self):
        if self.broken is not None:
            raise TapeError(f"this tape cannot be used: {self.broken}")

    def _device(self, dev, what: str) -> None:
        if self.device is None:
            self.device = dev
        elif dev != self.device:
            where = lambda d: "the host (numpy)" if d == "cpu" else f"GPU {d}"
            raise TapeError(f"{what} runs on {where(dev)}, but this tape records on "
                            f"{where(self.device)}; a tape records one device")

    def _item(self, a, name, read, write, op, owner):
        buf, view = self.reg.view(a, f"'{name}' of {owner}")
        if buf.device != self.device:
            self._device(buf.device, repr(op))
        self._use(buf, op)
        return buf, view, read, write, name

    def _use(self, buf, op) -> None:
        """`op` uses `buf`: its first version, or its fingerprint checked."""
        if buf.version is None:
            buf.version = Version(buf, None, 0)
            if self.each:
                buf.fp = fingerprint(buf.root)
        elif self.each:
            self._verify(buf, op)

    def _verify(self, buf, where) -> None:
        """`where`: the operation (or the text) named if the check fails."""
        if buf.fp is not None and fingerprint(buf.root) != buf.fp:
            where = where if isinstance(where, str) else repr(where)
            last = buf.version.creator or (buf.version.readers[-1] if buf.version.readers
                                           else None)
            since = f"after {last!r}" if last is not None else "since the tape first saw it"
            self.broken = f"{buf.name} was changed outside the tape {since}"
            raise TapeError(f"{buf.name} was changed {since} by something the tape did not "
                            f"record (a numpy/CuPy write?), found at {where}; record changes "
                            "with a launch, dg.copy or dg.fill")

    def _record(self, op, parts) -> list:
        """Before `op` runs: versions read, copies of versions it overwrites
        (or the initial contents, checkpointing). `parts`: per array argument
        (Buffer, View, read, written, name). Returns (the written buffers,
        the arguments' Items)."""
        reads = [b for b, _v, r, _w, _n in parts if r]
        written = []
        for b, _v, _r, w, _n in parts:
            if w and b not in written:
                written.append(b)
        for b in written:
            v = b.version
            if self.revolve:
                if not b.written:
                    b.first = copy_root(b.root)
                    self.stats["state_bytes"] += b.nbytes
                    if self.memory_limit is not None and \
                            self.stats["state_bytes"] > self.memory_limit:
                        self.broken = "memory_limit below one state"
                        raise TapeError(
                            f"dg.Tape(memory_limit={self.memory_limit}) is below one state of "
                            f"this program: the arrays it writes hold "
                            f"{self.stats['state_bytes']} bytes (so far, at {op!r})")
            elif v.array is None and (v.readers or b in reads):
                v.array = copy_root(b.root)
                op.snaps.append(v)
                self.stats["snapshots"] += 1
                self.stats["snapshot_bytes"] += b.nbytes
            b.written = True
        items = [Item(view, n, r, w, b.version if r else None) for b, view, r, w, n in parts]
        for it in items:
            if it.read:
                readers = it.version.readers
                if not readers or readers[-1] is not op:  # (op reads it through two views)
                    readers.append(op)
        return written, items

    def _after(self, op, written) -> None:
        for b in written:
            b.version = Version(b, op, b.version.number + 1)
            if self.each:
                b.fp = fingerprint(b.root)
        self.ops.append(op)

    def _roles(self, kernel, args, grid, block, key):
        """(facts, roles, alias groups, outputs written whole) of a launch
        (of launch `key`), from plan.Call (checked like dg.vjp), kept per
        kernel and launch key (every tape's launches of the same arrays
        find them) and per key without pointers (fastpath.moved_key: new
        arrays laid out and aliased as earlier ones; what Call reads of
        the pointers is in it)."""
        last = self._last.get(id(kernel))  # a loop repeats a kernel's launch: no hashing
        got = last[1] if last is not None and last[0] == key and key is not None else None
        table = kernel.__dict__.get("_tape_roles")
        if table is None or not kernel._programs:  # (programs dropped: start over)
            table = kernel.__dict__["_tape_roles"] = {}
        mkey = None
        if got is None and key is not None:
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
        if key is not None:
            self._last[id(kernel)] = (key, got)
        return got

    def _launch(self, kernel, args, grid, block, bind) -> None:
        self._usable()
        op = Op(len(self.ops), "launch", kernel.name)
        key = fastpath.launch_key(args, grid, block)
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
            self.broken = f"{op!r} could not be recorded: {e}"
            raise TapeError(f"dg.Tape cannot record {op!r}: {e}") from None
        op.kernel, op.grid, op.block = kernel, grid, block
        op.roles, op.groups, op.full = roles, groups, full
        bound = None
        if key is not None:
            last = self._last_bound.get(id(kernel))  # a loop: an equality test, no hash
            bound = last[1] if last is not None and last[0] == key else \
                self._bound.get((id(kernel), key))
        if bound is None:
            names, bound = kernel.arg_names, []
            for i, (a, f) in enumerate(zip(args, facts)):
                if f.get("array"):
                    b, v, r, w, _n = self._item(a, names[i], bool(f["read"]), bool(f["write"]),
                                                op, kernel.name)
                    bound.append((i, b, v, r, w))
            bound = tuple(bound)
            if key is not None:
                if len(self._bound) >= 1024:  # a loop over ever new arrays
                    self._bound.clear()
                self._bound[(id(kernel), key)] = bound
        else:
            for _i, b, _v, _r, _w in bound:
                self._use(b, op)
        if key is not None:
            self._last_bound[id(kernel)] = (key, bound)
        names = kernel.arg_names
        written, items = self._record(op, [(b, v, r, w, names[i]) for i, b, v, r, w in bound])
        op.args = list(args)
        for (i, *_rest), it in zip(bound, items):
            op.args[i] = it
        self._hook.busy = True
        try:
            fastpath.run_keyed(kernel, args, grid, block, bind, key)
        except BaseException as e:
            self.broken = f"{op!r} raised {type(e).__name__} while recording"
            raise
        finally:
            self._hook.busy = False
        self._after(op, written)

    def _run(self, fn, op) -> None:
        self._hook.busy = True
        try:
            fn()
        except BaseException as e:
            self.broken = f"{op!r} raised {type(e).__name__} while recording"
            raise
        finally:
            self._hook.busy = False

    def host_op(self, kind: str, dst, src=None, value=None, run=None) -> None:
        """Record `dg.copy(dst, src)` / `dg.fill(dst, value)` and run it."""
        self._usable()
        op = Op(len(self.ops), kind, f"dg.{kind}")
        parts = []
        if src is not None:
            parts.append(self._item(src, "src", True, False, op, f"dg.{kind}"))
        parts.append(self._item(dst, "dst", False, True, op, f"dg.{kind}"))
        written, op.args = self._record(op, parts)
        op.value = value
        self._run(run, op)
        self._after(op, written)

    def _seal(self) -> None:
        """End of recording: check the fingerprints taken at each use, and
        take those of the buffers the reverse reads as they are."""
        for b in self.reg.buffers:
            if self.each:
                self._verify(b, "the end of recording")
        for b in self.needed_live():
            if b.fp is None:
                b.fp = fingerprint(b.root)
        if self.revolve and self.memory_limit is not None and self.stats["state_bytes"]:
            self.checkpoints = max(1, self.memory_limit // self.stats["state_bytes"])

    def needed_live(self) -> list:
        """Buffers whose current contents the reverse reads: read at their
        last version (never written, with checkpointing)."""
        if self.revolve:
            return [b for b in self.reg.buffers
                    if not b.written and b.version is not None and b.version.readers]
        return [b for b in self.reg.buffers if b.version is not None and b.version.readers]

    def verify_live(self) -> None:
        for b in self.needed_live():
            if b.fp is not None and fingerprint(b.root) != b.fp:
                last = b.version.readers[-1]
                raise TapeError(f"{b.name} was changed after the tape recorded {last!r} "
                                "reading it; gradient() differentiates the recorded program "
                                "and would see values it never read. Record the change "
                                "inside the tape, or take the gradient before changing it")


def float_args(op):
    return [i for i, a in enumerate(op.args) if isinstance(a, Item) and a.is_float]


__all__ = ["Recording", "Op", "Item", "Version", "current_hook", "is_float", "device_of"]
