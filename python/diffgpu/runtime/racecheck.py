"""The data-race detector of host launches: switch, regions, reports.

    with dg.racecheck():          # or DIFFGPU_RACECHECK=1 in the environment
        loss[blocks, 256](x, out) # raises dg.RaceError on a race
        dg.autodiff(loss[blocks, 256], dg.Duplicated(x, dx), dg.Duplicated(out, dout))

A checked launch runs a separately compiled variant of the kernel (its
own cache entry; the unchecked code is unchanged) whose every array access
calls a hook (lowering/host/racecheck.py). Before the launch, each array
argument gets a zeroed *shadow* of 16 words (128 bytes) per element, and the
table of regions (address range, element size, shadow, argument number) is
handed to the module; afterwards the module's report is read back. The first
race raises RaceError naming the array and element, both threads (block and
thread ids) and both source lines; the arrays hold what the launch wrote.

Two accesses race when they touch the same element, come from different
threads, fall in the same barrier interval (always so for threads of
different blocks), at least one writes, and neither is an atomic. Arrays
passed twice (or overlapping views) share one shadow. GPU launches are not
checked (the switch is ignored for CuPy arrays).
"""
from __future__ import annotations

import contextlib
import contextvars
import ctypes
import linecache
import os

import numpy as np

from diffgpu import abi
from diffgpu.errors import DivergentBarrierError, LaunchError, RaceError

ENV = "DIFFGPU_RACECHECK"
#: layout shared with the lowering (lowering/host/race_runtime.py)
MAX_REGIONS = abi.RACE_MAX_REGIONS
SHADOW_WORDS = abi.RACE_SHADOW_WORDS
REGION_WORDS = abi.RACE_REGION_WORDS
REPORT_WORDS = abi.RACE_REPORT_WORDS

_enabled: contextvars.ContextVar = contextvars.ContextVar("diffgpu_racecheck", default=None)


def enabled() -> bool:
    """Is the detector on for host launches here? `dg.racecheck` inside a
    `with`, else `DIFFGPU_RACECHECK` (1/true/yes/on), read at each launch."""
    v = _enabled.get()
    if v is not None:
        return v
    return os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes", "on")


@contextlib.contextmanager
def racecheck(enable: bool = True):
    """`with dg.racecheck():` host launches inside are race-checked
    (`dg.racecheck(False)` turns the check off inside, whatever the
    environment says). Thread- and task-local; nests."""
    if not isinstance(enable, bool):
        raise TypeError(f"dg.racecheck takes True or False, got {enable!r}")
    token = _enabled.set(enable)
    try:
        yield
    finally:
        _enabled.reset(token)


def _span(a: np.ndarray) -> tuple[int, int]:
    """[lowest, highest + itemsize) bytes that `a`'s elements occupy."""
    lo = hi = a.ctypes.data
    if a.size == 0:
        return lo, lo
    for n, s in zip(a.shape, a.strides):
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi + a.itemsize


class Regions:
    """The array arguments of one launch as (merged) shadowed regions."""

    def __init__(self, args, names):
        spans = []
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray) and a.size:
                lo, hi = _span(a)
                spans.append([lo, hi, a.itemsize, [i]])
        spans.sort(key=lambda s: s[0])
        merged: list = []
        for s in spans:  # overlapping arrays share one shadow
            if merged and s[0] < merged[-1][1]:
                m = merged[-1]
                m[1] = max(m[1], s[1])
                m[2] = min(m[2], s[2])
                m[3] += s[3]
            else:
                merged.append(s)
        if len(merged) > MAX_REGIONS:
            raise LaunchError(f"the race detector handles at most {MAX_REGIONS} arrays "
                              f"per launch, got {len(merged)}")
        self.args, self.names = args, names
        self.table = np.zeros(max(1, len(merged)) * REGION_WORDS, np.int64)
        self.shadows = []
        for r, (lo, hi, es, members) in enumerate(merged):
            shadow = np.zeros(((hi - lo) // es) * SHADOW_WORDS, np.int64)
            self.shadows.append(shadow)
            self.table[r * REGION_WORDS:(r + 1) * REGION_WORDS] = [
                lo, hi, es, shadow.ctypes.data, members[0], 0, 0, 0]
        self.count = len(merged)

    def element(self, addr: int, arg_hint: int):
        """(array name, index text) of the element at `addr`."""
        order = [arg_hint] + [i for i in range(len(self.args)) if i != arg_hint]
        for i in order:
            a = self.args[i] if 0 <= i < len(self.args) else None
            if not isinstance(a, np.ndarray) or not a.size:
                continue
            idx = _index_of(a, addr)
            if idx is not None:
                return self.names[i], idx
        return "an array", f"address {addr:#x}"


def _index_of(a: np.ndarray, addr: int):
    """Index text of the element of `a` at byte address `addr`, or None."""
    rel = addr - a.ctypes.data
    off = np.zeros(a.shape, np.int64)
    for d, (n, st) in enumerate(zip(a.shape, a.strides)):
        shape = [1] * a.ndim
        shape[d] = n
        off = off + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    hit = np.argwhere(off == rel)
    if not len(hit):
        return None
    return ", ".join(str(int(i)) for i in hit[0])


def _source(site: str) -> str:
    """`file:line:col` and the stripped source line, if readable."""
    parts = site.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit():
        line = linecache.getline(parts[0], int(parts[1])).strip()
        if line:
            return f"{site}: {line}"
    return site


def _ids(linear: int, dims) -> str:
    x = linear % dims[0]
    y = (linear // dims[0]) % dims[1]
    z = linear // (dims[0] * dims[1])
    return f"({x}, {y}, {z})"


_KINDS = {0: "read", 1: "write", 2: "atomic add"}


def race_error(kernel: str, report, regions: Regions, sites, shared_entries, grid, block):
    """The RaceError of a module's report (numpy int64[REPORT_WORDS]), or
    None: a divergent barrier first (races may follow from it), then the
    first race; `sites`, `shared_entries`: the module's `diffgpu.race_sites`
    and `diffgpu.race_shared`."""
    def site(n):
        return _source(sites[n - 1]) if 1 <= n <= len(sites) else "an unknown site"

    shared = shared_names(shared_entries, kernel)
    for mode in ("reverse", "forward"):  # the diff wrappers' entries
        if kernel.startswith(f"__dg_{mode}_"):
            kernel = f"{kernel[len(mode) + 6:]}' ({mode}-mode derivative)"
            break
    else:
        kernel += "'"
    if int(report[12]):
        return _barrier_error(kernel, report, sites, grid, block)
    count = int(report[0])
    if count == 0:
        return None
    addr, rid, elem = int(report[1]), int(report[2]), int(report[3])
    if rid >= 0:
        name, index = regions.element(addr, rid)
        where = "global memory"
    else:
        name, shape, at = shared.get(-1 - rid, ("a shared array", (), "?"))
        index = _shared_index(elem, shape)
        where = f"shared memory, allocated at {at}"

    def access(kind, blk, thr, s):
        return (f"{_KINDS.get(kind, 'access')} by block {_ids(blk - 1, grid)} thread "
                f"{_ids(thr, block)} at {site(s)}")

    kinds = (int(report[4]), int(report[8]))
    first = access(kinds[0], int(report[5]), int(report[6]), int(report[7]))
    second = access(kinds[1], int(report[9]), int(report[10]), int(report[11]))
    more = f" ({count} racing accesses in all)" if count > 1 else ""
    why = ("different threads, no barrier between them, not atomic: on a GPU the result "
           "depends on timing (use dg.atomic_add, a barrier, or disjoint elements)")
    if 2 in kinds:
        why = ("different threads, no barrier between them, a plain access against an "
               "atomic one: on a GPU the plain access sees or overwrites a partial sum "
               "(make both atomic, or order them: a barrier within a block, separate "
               "launches across blocks)")
    return RaceError(f"kernel '{kernel}: data race on {name}[{index}] ({where}){more}:\n"
                     f"  {first}\n  {second}\n{why}", array=name, index=index)


def _barrier_error(kernel: str, report, sites, grid, block):
    """The DivergentBarrierError of a report's words 12-16."""
    events, at, blk = int(report[12]), int(report[13]), int(report[14])
    arrived, missing = int(report[15]), int(report[16])
    where = sites[at - 1] if 1 <= at <= len(sites) else None
    n = block[0] * block[1] * block[2]
    more = f" ({events} such barriers in all)" if events > 1 else ""
    return DivergentBarrierError(
        f"kernel '{kernel}: the barrier at {_source(where) if where else 'an unknown site'} "
        f"was reached by {arrived} of the {n} threads of block {_ids(blk - 1, grid)} "
        f"(thread {_ids(missing, block)} did not reach it){more}:\nevery thread of a "
        "block must reach a barrier, or none: on a GPU the block hangs or reads shared "
        "memory not yet written (keep dg.syncthreads() out of branches and loops that "
        "differ between threads)", site=where)


def _shared_index(elem: int, shape) -> str:
    if not shape:
        return str(elem)
    out = []
    for n in reversed(shape):
        out.append(elem % n)
        elem //= n
    return ", ".join(str(i) for i in reversed(out))


def shared_names(entries, kernel: str) -> dict:
    """{number: (name, shape, site)} of `kernel`'s shared arrays, from the module's
    `diffgpu.race_shared` entries ("kernel|number|file:line:col|shape"); the
    name is read from the source line (`tile = dg.shared_array(...)`)."""
    out = {}
    for e in entries:
        parts = e.split("|")
        if len(parts) != 4 or parts[0] != kernel:
            continue
        site, shape = parts[2], tuple(int(d) for d in parts[3].split("x") if d)
        name = "shared array"
        bits = site.rsplit(":", 2)
        if len(bits) == 3 and bits[1].isdigit():
            text = linecache.getline(bits[0], int(bits[1]))
            lhs = text.split("=", 1)[0].strip() if "=" in text else ""
            if lhs.isidentifier():
                name = lhs
        out[int(parts[1])] = (name, shape, site)
    return out


def descriptor_ptr(arr: np.ndarray, keep: list, memref_descriptor):
    desc = memref_descriptor(arr)
    ptr = ctypes.pointer(desc)
    keep += [arr, desc, ptr]
    return ctypes.cast(ctypes.pointer(ptr), ctypes.c_void_p)
