"""The launch fast path: full checks once per argument signature, then only
what depends on the values.

A launch's *token* is, per argument, its Python type, and for arrays also
the dtype (by identity: an entry keeps its dtype objects alive, so their
ids are not reused) and ndim: everything `infer_signature` (runtime/args.py) checks
except per-value properties. The first launch with a token runs the full
checks (and gives their errors); when it succeeds, `remember` stores an
`Entry` under the token in the kernel. Later launches with that token check
only the per-value properties:

| argument       | checked on every launch                                  |
|----------------|----------------------------------------------------------|
| numpy array    | writeable; strides multiples of the item size (unless C-contiguous) |
| device array   | strides (unless C-contiguous); all on one GPU            |
| Python int     | fits in int64                                            |

and compute the launch facts (runtime/specialize.py) from the address
ranges. The program is looked up per (facts, GPU) in the entry, and the
GPU's packed kernel arguments are reused while the arrays and scalars are
the same as the previous launch's. Any doubt (a check that fails, an
unknown argument type) sends the launch down the full path, so errors stay
exactly those of runtime/args.py.

Device arrays take this path when their type exposes CuPy's attributes
(`.data.ptr`, `.shape`, `.strides`, `.dtype`, `.flags.c_contiguous`,
`.device.id`); others (torch tensors, plain `__cuda_array_interface__`
objects) always take the full path.
"""
from __future__ import annotations

import numpy as np

from diffgpu.runtime import specialize
from diffgpu.runtime.racecheck import enabled as racecheck_enabled
from diffgpu.types import ArrayType

_SCALARS = frozenset((float, int, np.float32, np.float64, np.int32, np.int64))
#: array types with fast attributes; device types join on first sight
_ARRAYS: set = {np.ndarray}
_INT64 = (-(2**63), 2**63 - 1)


def token(args):
    """The token of `args`, or None when one is not fast-path material."""
    out = []
    for a in args:
        t = type(a)
        if t in _ARRAYS:  # the dtype by identity (hashing one is slow): see Entry.dtypes
            out.append((t, id(a.dtype), a.ndim))
        elif t in _SCALARS:
            out.append(t)
        else:
            return None
    return tuple(out)


def _ptr_array(x) -> bool:
    """Does `x` (a device array) expose CuPy's attributes consistently with
    its `__cuda_array_interface__`?"""
    try:
        cai = x.__cuda_array_interface__
        ptr = x.data.ptr
        ok = (isinstance(ptr, int) and ptr == int(cai["data"][0])
              and tuple(x.shape) == tuple(cai["shape"])
              and isinstance(x.flags.c_contiguous, bool) and isinstance(x.device.id, int)
              and isinstance(x.nbytes, int)
              and np.dtype(x.dtype) == np.dtype(cai["typestr"]) and x.ndim == len(cai["shape"]))
        strides = cai.get("strides")
        return ok and (strides is None or tuple(strides) == tuple(x.strides))
    except Exception:
        return False


class Entry:
    """What the full checks established for one token."""

    __slots__ = ("sig", "layout", "ints", "scalars", "no_contiguity", "programs", "last",
                 "dtypes")

    def __init__(self, sig, args):
        self.sig = sig
        self.dtypes = [a.dtype for a in args if type(a) in _ARRAYS]  # ids in the token
        #: per array argument: (position, item size, numpy array?)
        self.layout = [(i, np.dtype(t.dtype).itemsize, type(args[i]) is np.ndarray)
                       for i, t in enumerate(sig.types) if isinstance(t, ArrayType)]
        self.ints = [i for i, a in enumerate(args) if type(a) is int]
        self.scalars = [i for i, t in enumerate(sig.types) if not isinstance(t, ArrayType)]
        self.no_contiguity = (False,) * len(args)
        self.programs: dict = {}  # (raw facts, unit dims, gpu id) -> program
        self.last = None  # (values, packed GPU arguments) of the previous launch


def remember(kernel, args, sig) -> None:
    """After a launch passed the full checks: store its token's entry."""
    if sig.device == "gpu":
        for a in args:
            t = type(a)
            if t not in _ARRAYS and t not in _SCALARS and _ptr_array(a):
                _ARRAYS.add(t)
    tok = token(args)
    fast = kernel.__dict__.setdefault("_fast", {})
    if tok is not None and tok not in fast:
        fast[tok] = Entry(sig, args)


def check_values(entry, args):
    """(raw facts, gpu id, values) of a launch with a known token, or None
    when a per-value check fails (the full path then reports it). Raw facts:
    (noalias, contiguous and aligned per argument), None with specialisation off;
    values: what the packed kernel arguments depend on."""
    ranges, contiguous, gpu_id = [], list(entry.no_contiguity), None
    aligned = list(entry.no_contiguity)
    values = [args[i] for i in entry.scalars]
    for i, item, on_host in entry.layout:
        a = args[i]
        flags = a.flags
        if on_host:
            if not flags.writeable:
                return None
            ptr = a.__array_interface__["data"][0]
        else:
            ptr = a.data.ptr
            did = a.device.id
            if gpu_id is None:
                gpu_id = did
            elif did != gpu_id:
                return None
        shape = a.shape
        aligned[i] = ptr % specialize.ALIGN == 0
        if flags.c_contiguous:
            contiguous[i] = True
            if a.nbytes:  # empty arrays overlap nothing
                ranges.append((ptr, ptr + a.nbytes))
            values.append((ptr, shape))
            continue
        strides = a.strides
        values.append((ptr, shape, strides))
        lo, hi = ptr, ptr + item
        for n, st in zip(shape, strides):
            if st % item:
                return None
            if st >= 0:
                hi += (n - 1) * st
            else:
                lo += (n - 1) * st
        if 0 not in shape:
            ranges.append((lo, hi))
    for i in entry.ints:
        if not _INT64[0] <= args[i] <= _INT64[1]:
            return None
    values = tuple(values)
    if not specialize.ENABLED:
        return None, gpu_id, values
    ranges.sort()
    noalias = True
    for k in range(1, len(ranges)):
        if ranges[k][0] < ranges[k - 1][1]:  # sorted, none empty: neighbours suffice
            noalias = False
            break
    return (noalias, tuple(contiguous), tuple(aligned)), gpu_id, values


_UNIT: dict = {}


def unit_dims(grid, block) -> tuple:
    """(geometry dimensions (1, 2) with one block and one thread, grid x a
    multiple of COARSEN, grid x a multiple of REDUCE_COARSEN)."""
    key = (grid, block)
    unit = _UNIT.get(key)
    if unit is None:
        unit = (tuple(d for d in (1, 2) if grid[d] == 1 and block[d] == 1),
                grid[0] % specialize.COARSEN == 0, grid[0] % specialize.REDUCE_COARSEN == 0)
        if len(_UNIT) < 4096:
            _UNIT[key] = unit
    return unit


def lookup(kernel, args, grid, block):
    """(program, signature, (entry, values)) of a launch with a known token,
    to run with `launch.run_program(..., cached=...)`; None when the full
    path must run."""
    fast = getattr(kernel, "_fast", None)
    if not fast:
        return None
    if not kernel._programs:  # programs dropped (tests force reloads): start over
        fast.clear()
        return None
    tok = token(args)
    entry = fast.get(tok) if tok is not None else None
    if entry is None:
        return None
    checked = check_values(entry, args)
    if checked is None:
        return None
    raw, gpu_id, values = checked
    unit = unit_dims(grid, block)
    key = (raw, unit, gpu_id, racecheck_enabled())  # the race-checked variant apart
    found = entry.programs.get(key)
    if found is None:
        found = entry.programs[key] = _program(kernel, entry, raw, unit, gpu_id)
    return found[0], found[1], (entry, values)


def _program(kernel, entry, raw, unit, gpu_id):
    from diffgpu.launch import get_program, target_for

    sig = entry.sig
    if gpu_id is not None and gpu_id != sig.gpu_id:
        sig = type(sig)(sig.types, sig.device, gpu_id)
    target = target_for(sig)
    facts = None
    if raw is not None:
        facts = specialize.Facts(raw[0], raw[1], unit[0], raw[2], unit[1], unit[2])
        facts = None if facts.trivial() else facts.for_target(target)
    return get_program(kernel, sig.types, target, facts=facts), sig
