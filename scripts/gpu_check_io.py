"""Launch arguments to and from files, and running one case: what
scripts/gpu_check.py --prepare stores (a JSON description plus the arrays in
an .npz) and --run reads back on the GPU (numpy + CuPy, no MLIR).

    desc = encode_args(args, arrays, "in")       # arrays: {"in0": ndarray, ...}
    args = decode_args(desc, np.load(f), to_device(cupy))
    grads = run_case(kernel, grid, block, mode, args)
    err, ok = compare(results(args, grads), want)
"""
from __future__ import annotations

import numpy as np

import diffgpu as dg
import gpu_check_specialize as SPEC


def encode_args(args, arrays: dict, prefix: str) -> list:
    """JSON description of args; arrays go into `arrays` (saved as .npz)."""
    from diffgpu.activities import Activity
    out = []
    for i, a in enumerate(args):
        same = [j for j in range(i) if isinstance(a, np.ndarray) and args[j] is a]
        if same:  # the same array object again (in-place launches)
            out.append({"same_as": same[0]})
        elif isinstance(a, Activity):
            rec = {"activity": type(a).__name__, "value": _enc(a.value, arrays, f"{prefix}{i}v")}
            if a.shadow is not None:
                rec["shadow"] = _enc(a.shadow, arrays, f"{prefix}{i}s")
            out.append(rec)
        else:
            out.append(_enc(a, arrays, f"{prefix}{i}"))
    return out


def _enc(x, arrays, key):
    if isinstance(x, np.ndarray):
        arrays[key] = x.copy()  # the inputs, before any run changes them
        return {"array": key, "strides": list(x.strides), "shape": list(x.shape)}
    dtype = type(x).__name__ if isinstance(x, np.generic) else (
        "int" if isinstance(x, int) else "float")
    return {"scalar": float(x) if dtype != "int" and "int" not in dtype else int(x),
            "dtype": dtype}


def decode_args(desc, arrays, to_device):
    out = []
    for rec in desc:
        if "same_as" in rec:
            out.append(out[rec["same_as"]])
        elif "activity" in rec:
            cls = getattr(dg, rec["activity"])
            v = _dec(rec["value"], arrays, to_device)
            out.append(cls(v, _dec(rec["shadow"], arrays, to_device)) if "shadow" in rec
                       else cls(v))
        else:
            out.append(_dec(rec, arrays, to_device))
    return out


def _dec(rec, arrays, to_device):
    if "array" in rec:
        a = arrays[rec["array"]]
        return to_device(_restride(a, rec["strides"]))
    dtype = rec["dtype"]
    if dtype == "int":
        return int(rec["scalar"])
    if dtype == "float":
        return float(rec["scalar"])
    return getattr(np, dtype)(rec["scalar"])


def _restride(a, strides):
    """The same values laid out with the original strides (views stay views)."""
    strides = tuple(strides)
    if a.strides == strides or a.size == 0:
        return a.copy()
    if all(s > 0 for s in strides):
        span = sum(s * (n - 1) for s, n in zip(strides, a.shape)) // a.itemsize + 1
        base = np.zeros(span, a.dtype)
        view = np.lib.stride_tricks.as_strided(base, a.shape, strides)
        view[...] = a
        return view
    return a.copy()


def only_cases(path: str, count: int) -> set:
    """The case indices an `--only` file names: a JSON list of them, or an
    object with the list under "cases" (a part's `part.json` from
    scripts/gpu_pack.py, which also says which part it is). ValueError, naming
    the file, if it is neither or names an index outside 0 .. count - 1."""
    import json
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise ValueError(f"--only {path}: cannot read it ({exc})") from None
    cases = data.get("cases") if isinstance(data, dict) else data
    if not isinstance(cases, list) or not all(type(k) is int for k in cases):
        raise ValueError(f"--only {path}: expected a list of case indices, or an object "
                         "with one under \"cases\"")
    bad = [k for k in cases if not 0 <= k < count]
    if bad:
        raise ValueError(f"--only {path}: no case {bad[0]} in the manifest (0 .. {count - 1}): "
                         "a part of another preparation?")
    return set(cases)


def results(args, grads):
    """Every array after the run (primals, shadows) and the gradients."""
    from diffgpu.activities import Activity
    out = []
    for a in args:
        vals = [a.value, a.shadow] if isinstance(a, Activity) else [a]
        out += [np.asarray(_host(v)) for v in vals if v is not None and hasattr(v, "shape")]
    out += [np.asarray(_host(g)) if hasattr(g, "shape") else np.asarray(float(g))
            for g in grads or ()]  # (dg.vjp: arrays, and 0-d arrays for scalars on a GPU)
    return out


def _host(x):
    return x if isinstance(x, np.ndarray) or not hasattr(x, "get") else x.get()


def run_case(kernel, grid, block, mode, args):
    if mode == "launch":
        kernel[grid, block](*args)
        return None
    if mode == "generic":  # specialisation off (gpu_check_specialize.py)
        SPEC.run_generic(kernel, grid, block, args)
        return None
    if mode == "reverse":
        return dg.autodiff(kernel[grid, block], *args)
    if mode == "overflow":  # scripts/gpu_cases/tape_overflow.py
        *args, big = args
        if hasattr(big, "get"):  # on a GPU: first a launch whose tape outgrows the heap
            expect_overflow(kernel, grid, block, args[:-1] + [big])
        return dg.autodiff(kernel[grid, block], *args)
    if mode == "vjp":  # dg.vjp: the last argument is the first parameter's cotangent
        cot = {kernel.arg_names[0]: args[-1]}
        return list(dg.vjp(kernel[grid, block], *args[:-1], cotangents=cot).values())
    dg.fwddiff(kernel[grid, block], *args)
    return None


def expect_overflow(kernel, grid, block, args) -> None:
    """dg.autodiff of `args` must raise the LaunchError of a tape that
    outgrew the device heap (runtime/tape_overflow.py), after the launch;
    it runs on copies (the case's own launch follows on the originals)."""
    from diffgpu.activities import Activity
    def copy(x):
        return x.copy() if hasattr(x, "shape") else x
    copies = [type(a)(*[copy(v) for v in (a.value, a.shadow) if v is not None])
              if isinstance(a, Activity) else copy(a) for a in args]
    try:
        dg.autodiff(kernel[grid, block], *copies)
    except dg.LaunchError as exc:
        if "tape outgrew the GPU's malloc heap" not in str(exc):
            raise
        return
    raise AssertionError("the launch whose tape outgrows the heap raised nothing")


def signature_of(kernel, args):
    from diffgpu.activities import Activity
    from diffgpu.runtime.args import arg_type
    prims = [a.value if isinstance(a, Activity) else a for a in args]
    # (zip: a vjp case's last argument, the cotangent, is no parameter)
    return tuple(arg_type(p, name)[0] for p, name in zip(prims, kernel.arg_names))


def diff_of(mode, args):
    from diffgpu.activities import Activity
    if mode in ("launch", "generic", "vjp"):  # (vjp: dg.vjp picks its program)
        return None
    if mode == "overflow":  # dg.autodiff; the last argument holds other trip counts
        return ("reverse", tuple(a.kind if isinstance(a, Activity) else "const"
                                 for a in args[:-1]))
    return (mode, tuple(a.kind if isinstance(a, Activity) else "const" for a in args))


def to_device(cupy):
    """numpy -> CuPy with the same strides (positive strides; others copied)."""
    def conv(a):
        if a.flags.c_contiguous or a.size == 0 or any(s <= 0 for s in a.strides):
            return cupy.asarray(np.ascontiguousarray(a))
        span = sum(s * (n - 1) for s, n in zip(a.strides, a.shape)) // a.itemsize + 1
        base = cupy.zeros(span, a.dtype)
        view = cupy.ndarray(a.shape, a.dtype, memptr=base.data, strides=a.strides)
        view[...] = cupy.asarray(np.ascontiguousarray(a))
        return view
    return conv


def compare(got, want):
    if len(got) != len(want):
        return float("inf"), False
    worst, ok = 0.0, True
    for g, w in zip(got, want):
        half = np.asarray(g).dtype.itemsize == 2 and np.asarray(g).dtype.kind in "fV"
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        if g.shape != w.shape:
            return float("inf"), False
        if g.size:
            err = float(np.max(np.abs(g - w)))
            worst = max(worst, err)
            if half:  # float16 / bfloat16: a few roundings apart (atomics' order, libm)
                ok &= err <= HALF_TOL * max(1.0, float(np.max(np.abs(w))))
            else:
                ok &= bool(np.allclose(g, w, rtol=1e-4, atol=1e-5))
    return worst, ok


#: 16-bit float arrays (bench/float16.py checks their accuracy against float64):
#: max |GPU - CPU| / max(1, max |CPU|)
HALF_TOL = 2e-2
