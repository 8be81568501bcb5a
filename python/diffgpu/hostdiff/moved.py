"""A kept recipe replayed on arrays laid out as at its first call but
anywhere in memory (replay.Recipe.run_moved: chained `dg.vjp` calls on new
arrays, the tape's reverse steps on their versions).

The program the first call selected assumed launch facts that read the
pointers: each array it takes as aligned is `ALIGN`-byte aligned, and with
the `noalias` fact no two arrays share a byte. `Moved` (one per recipe,
made at its first moved call) keeps by flat position what checking them
needs, so a call reads each array's pointer once and uses it for the
checks and the launch:

- alignment: the positions the facts take as aligned;
- no aliasing: the byte spans (relative to the pointer) of the arrays that
  are not the recipe's fresh buffers (those are new memory, overlapping no
  live array nor each other; so is the scratch its caller gives,
  `Recipe.scratch`), compared per call;
- the launch: the packed arguments kept from the first moved call (made
  again when a scalar differs from the last call's), every pointer put in.
"""
from __future__ import annotations

import threading

import numpy as np

from diffgpu.runtime import fastpath
from diffgpu.runtime.launch_checks import check_heap
from diffgpu.runtime.racecheck import enabled as racecheck_enabled
from diffgpu.runtime.specialize import ALIGN
from diffgpu.types import ArrayType

_AT, _OFFSET = fastpath._AT, fastpath._OFFSET
STATS = fastpath.STATS


def pointer(a) -> int:
    """An array's data pointer: `fastpath.host_pointer`'s read, here (a call
    into the fast path's module after it was left would re-enter it)."""
    if type(a) is not np.ndarray:
        return a.data.ptr
    if _OFFSET is None:
        return a.__array_interface__["data"][0]
    return _AT(id(a) + _OFFSET).value or 0


_MAKE: list = []


def kernel_pointers():
    """runtime/gpu.py `as_kernel_pointers` (np.uint64 values -> the
    kernel-argument form it packs), imported once."""
    if not _MAKE:
        from diffgpu.runtime.gpu import as_kernel_pointers
        _MAKE.append(as_kernel_pointers)
    return _MAKE[0]


class Moved:
    """What a recipe's moved replays check and launch with: `pos`, the flat
    positions of its arrays (`pointers` reads them in that order); `align`,
    indices into `pos` the facts take as aligned; `spans`, (index, low,
    high byte offset) of the arrays the no-alias fact covers (None: no such
    fact); `race`, the host race checker's switch at the first call; the
    packed launch (`state`)."""

    __slots__ = ("pos", "align", "spans", "race", "scalars_at", "state", "generic", "device")

    def __init__(self, recipe, flat):
        from diffgpu.runtime.specialize import array_extent

        self.pos = tuple(p for p, t in enumerate(recipe.ftypes) if isinstance(t, ArrayType))
        facts = recipe.facts
        self.generic = facts is None  # the generic program runs anywhere
        self.race = recipe._race
        aligned = facts.aligned if facts is not None else ()
        self.align = tuple(k for k, p in enumerate(self.pos) if p < len(aligned) and aligned[p])
        self.spans = None
        if facts is not None and facts.noalias:
            fresh = {p for p, (where, what) in enumerate(recipe.flat)
                     if where == "buf" or (where == "seed" and what in recipe.scratch)}
            fresh |= set(range(len(recipe.flat), len(flat)))  # slot arrays
            spans = []
            for k, p in enumerate(self.pos):
                if p not in fresh:
                    lo, hi, _c, ptr = array_extent(flat[p])
                    if hi > lo:
                        spans.append((k, lo - ptr, hi - ptr))
            self.spans = tuple(spans)
        self.scalars_at = tuple(p for p, t in enumerate(recipe.program.flat_types)
                                if not isinstance(t, ArrayType))
        self.device = recipe.program.kind == "gpu"
        self.state = None

    def run(self, recipe, flat) -> bool:
        """Launch the kept program on `flat` when its launch facts hold for
        these pointers (and the race checker's switch is as it was: its
        programs are their own variant); False (nothing launched) when not.
        The packed launch is made again when a scalar differs from the last
        call's."""
        if self.device:  # (CuPy's arrays and the launch fast path's: their data.ptr)
            ptrs = [flat[p].data.ptr for p in self.pos]
        else:
            ptrs = [pointer(flat[p]) for p in self.pos]
        if self.race is not None and racecheck_enabled() != self.race:
            return False
        if not self.generic:
            for k in self.align:
                if ptrs[k] % ALIGN:
                    return False
            spans = self.spans
            if spans and not _disjoint(spans, ptrs):
                return False
        # the scalars as the launch key has them (0.0 and -0.0 apart)
        scalars = tuple([(type(v), v if v else (v, repr(v)))
                         for v in map(flat.__getitem__, self.scalars_at)])
        state = self.state
        if state is None or state[0] != scalars:
            self._pack(recipe, flat, scalars)
            return True
        _scalars, done, where, lock = state
        if lock is None:  # the GPU: every pointer into a copy of the kept values
            fn, values, current, device, grid, block, device_id, convert = done
            values = list(values)
            ks, slots = where  # the arrays' indices; (offset, index into ks) per slot
            conv = convert(tuple([np.uint64(ptrs[k]) for k in ks]))
            for o, j in slots:
                values[o] = conv[j]
            if current() == device_id:
                fn(grid, block, tuple(values))
            else:
                with device(device_id):
                    fn(grid, block, tuple(values))
            return True
        program = recipe.program
        with lock:
            for k, d in where:
                d.allocated = d.aligned = ptrs[k]
            program.host.run_packed(program.entry, done, flat, program.payload.get("arg_names"))
        return True

    def _pack(self, recipe, flat, scalars) -> None:
        STATS["moved_pack"] += 1
        program = recipe.program
        if program.heap_tape is not None:  # a formula of the scalars, which the
            check_heap(program, flat, recipe.grid, recipe.block, recipe.sig)  # tape's key lacks
        every = {p for p, t in enumerate(program.flat_types) if isinstance(t, ArrayType)}
        index = {p: k for k, p in enumerate(self.pos)}
        if program.kind == "gpu":
            ready = fastpath.Ready(program, recipe.sig, recipe.grid, recipe.block)
            ready.seen = True
            device_id = recipe.sig.gpu_id or 0
            program.gpu.launch_cached(ready, flat, program.flat_types, device_id)
            fn, values, current, device = ready.packed
            pairs = recipe._pointer_slots(program, every)
            where = (tuple(index[p] for p, _o in pairs),
                     tuple((o, j) for j, (_p, offsets) in enumerate(pairs) for o in offsets))
            self.state = (scalars, (fn, tuple(values), current, device, ready.grid,
                                    recipe.block, device_id, kernel_pointers()), where, None)
            return
        host, entry = program.host, program.entry
        done = host.pack(entry, flat, program.flat_types, recipe.grid, recipe.block)
        descs = recipe._descriptors(flat, done[2], every)
        if descs is not None:
            self.state = (scalars, done, tuple((index[p], d) for p, d in descs),
                          threading.Lock())
        host.run_packed(entry, done, flat, program.payload.get("arg_names"))


def _disjoint(spans, ptrs) -> bool:
    """No two of the byte ranges (index, low, high) at these pointers meet
    (pairwise for a few, sorted beyond)."""
    n = len(spans)
    if n <= 4:
        for i in range(n - 1):
            k, lo, hi = spans[i]
            a, b = ptrs[k] + lo, ptrs[k] + hi
            for j in range(i + 1, n):
                k2, lo2, hi2 = spans[j]
                if a < ptrs[k2] + hi2 and ptrs[k2] + lo2 < b:
                    return False
        return True
    ranges = sorted([(ptrs[k] + lo, ptrs[k] + hi) for k, lo, hi in spans])
    end = ranges[0][1]
    for lo, hi in ranges[1:]:
        if lo < end:
            return False
        end = hi
    return True


__all__ = ["Moved", "pointer", "kernel_pointers"]
