"""GPU check cases of launch-time specialisation (runtime/specialize.py).

Each kernel runs twice on the GPU: as a plain launch, which selects the
program specialised for its launch facts (disjoint arrays: noalias pointers,
ld.global.nc, loads before stores, several shadows without atomics;
contiguous arrays: folded strides; 1-D launches: no geometry guard; a grid
divisible by 4: coarsened, 4 elements per thread, vector accesses, and the
last partial group through the tail function since N is odd), and
with the specialisation switched off (mode "generic"), the program every
launch could use. Both are compared with the CPU's result, so the two GPU
programs agree with each other too. The aliasing cases pass one array
twice (an in-place kernel, an in-place gradient): their facts carry no
`noalias`, and they must give the CPU's (program-order) result.

`--prepare` compiles both programs of each case (gpu_check.py asks
`launch_programs` for the specialised one).
"""
from __future__ import annotations

import os
import sys

import numpy as np

import diffgpu as dg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "test", "python"))
from kernels_specialize import (add2d, add2d_grad, loop16, loop16_grad,  # noqa: E402
                                mul, mul_grad, scale_shift, scale_shift_grad, two_guards)
from kernels_coarsen import lower_then_upper, nested, saxpy, stencil, sumsq  # noqa: E402

N = 3001  # not a multiple of 4: the coarsened kernels run their tail too


def _f32(r, *shape):
    return r.standard_normal(shape).astype(np.float32)


#: (name, kernel, grid, block, make(rng))
KERNELS = [
    ("scale_shift", scale_shift, 12, 256, lambda r: [np.zeros(N, np.float32), _f32(r, N)]),
    ("scale_shift_grad", scale_shift_grad, 12, 256, lambda r: [_f32(r, N) for _ in range(4)]),
    ("mul_grad", mul_grad, 12, 256, lambda r: [_f32(r, N) for _ in range(6)]),
    ("loop16", loop16, 12, 256, lambda r: [np.zeros(N, np.float32), _f32(r, N), _f32(r, N)]),
    ("loop16_grad", loop16_grad, 12, 256, lambda r: [_f32(r, N) for _ in range(6)]),
    ("mul_grad strided", mul_grad, 12, 256, lambda r: [_f32(r, 2 * N)[::2] for _ in range(6)]),
    ("add2d_grad", add2d_grad, (4, 4), (16, 16), lambda r: [_f32(r, 50, 60) for _ in range(6)]),
    ("add2d_grad transposed", add2d_grad, (4, 4), (16, 16),
     lambda r: [_f32(r, 60, 50).T for _ in range(6)]),
    # guards of lower and upper bounds (lowering/coarsen/bounds.py): coarsened too
    ("stencil", stencil, 12, 256, lambda r: [_f32(r, N), _f32(r, N)]),
    ("lower_then_upper", lower_then_upper, 12, 256, lambda r: [_f32(r, N), _f32(r, N)]),
    ("nested", nested, 12, 256, lambda r: [_f32(r, N), _f32(r, N)]),
    # launch facts extents (equal lengths: one guard) and index32 (every case here)
    ("two_guards", two_guards, 12, 256, lambda r: [_f32(r, N), _f32(r, N), _f32(r, N)]),
    ("two_guards longer w", two_guards, 12, 256,
     lambda r: [_f32(r, N), _f32(r, N), _f32(r, N + 40)]),
    ("scale_shift longer y", scale_shift, 12, 256,
     lambda r: [np.zeros(N + 7, np.float32), _f32(r, N)]),
]

#: cases whose arguments repeat an array object (gpu_check.encode_args keeps that)
ALIASED = [
    ("scale_shift in place", scale_shift, 12, 256,
     lambda r: (lambda x: [x, x])(_f32(r, N))),
    ("scale_shift_grad dy is dx", scale_shift_grad, 12, 256,
     lambda r: (lambda d: [_f32(r, N), d, _f32(r, N), d])(_f32(r, N))),
    ("mul_grad dx is dw", mul_grad, 12, 256,
     lambda r: (lambda d: [_f32(r, N), _f32(r, N), _f32(r, N), d, _f32(r, N), d])(_f32(r, N))),
]


#: host-level dg.autodiff cases whose specialised programs are coarsened
#: (lowering/coarsen/coarsen.py: Active scalars' slot adds; a reduction's gradient
#: by 4); expected results: the CPU's
REVERSE = [
    ("saxpy Active a reverse", saxpy, 12, 256,
     lambda r: [dg.Duplicated(np.zeros(N, np.float32), _f32(r, N)), dg.Active(1.5),
                dg.Duplicated(_f32(r, N), _f32(r, N)), dg.Duplicated(_f32(r, N), _f32(r, N))]),
    ("sumsq reverse x4", sumsq, 16, 256,
     lambda r: [dg.Duplicated(np.zeros(1, np.float32), np.full(1, 0.5, np.float32)),
                dg.Duplicated(_f32(r, N), _f32(r, N))]),
]

#: dg.vjp cases (gpu_check_io.run_case mode "vjp": the last argument is the
#: cotangent of the kernel's first parameter) whose programs are coarsened:
#: the stencil's gathered gradient (bound guards), sumsq's by 4, saxpy's
#: with the slot adds of `a`; expected results: the CPU's
VJP = [
    ("stencil vjp", stencil, 12, 256,
     lambda r: [np.zeros(N, np.float32), _f32(r, N), _f32(r, N)]),
    ("sumsq vjp x4", sumsq, 16, 256,
     lambda r: [np.zeros(1, np.float32), _f32(r, N), np.full(1, 0.5, np.float32)]),
    ("saxpy vjp", saxpy, 12, 256,
     lambda r: [np.zeros(N, np.float32), 1.5, _f32(r, N), _f32(r, N), _f32(r, N)]),
]


def cases():
    """(name, kernel, grid, block, mode, make, None) for gpu_check.all_cases."""
    out = []
    for name, kernel, grid, block, make in KERNELS:
        out.append((f"spec {name}", kernel, grid, block, "launch", make, None))
        out.append((f"spec {name} generic", kernel, grid, block, "generic", make, None))
    for name, kernel, grid, block, make in REVERSE:
        out.append((f"spec {name}", kernel, grid, block, "reverse", make, None))
    for name, kernel, grid, block, make in VJP:
        out.append((f"spec {name}", kernel, grid, block, "vjp", make, None))
    for name, kernel, grid, block, make in ALIASED:
        out.append((f"spec {name}", kernel, grid, block, "launch", make, None))
    return out


def run_generic(kernel, grid, block, args) -> None:
    """Launch with the specialisation switched off: the generic program."""
    from diffgpu.runtime import specialize

    old, specialize.ENABLED = specialize.ENABLED, False
    try:
        kernel[grid, block](*args)
    finally:
        specialize.ENABLED = old


def launch_programs(kernel, grid, block, args, chip: str) -> str | None:
    """Compile (into the cache) the program a launch of `args` selects on
    `chip`; its facts' key, or None when the launch is generic."""
    from diffgpu.driver.launch import facts_for, get_program
    from diffgpu.runtime.args import check_geometry, infer_signature

    sig = infer_signature(args, kernel.arg_names, kernel.name)
    g, b = check_geometry(grid, block)
    facts = facts_for(args, sig.types, chip, g, b)
    if facts is None:
        return None
    get_program(kernel, sig.types, chip, facts=facts)
    return facts.key()


def diff_programs(run_case, kernel, grid, block, mode, args, chip: str) -> None:
    """Compile (into the cache) the program a host-level dg.autodiff /
    dg.fwddiff / dg.vjp of `args` selects on `chip` (specialised for its
    launch facts, runtime/specialize.py): the call runs inside
    `interop.compile_only(chip)`, which also keeps the per-call replay
    tables out of it (a recipe kept for the sm_90 program would otherwise be
    replayed by the CPU run of the same arrays that follows)."""
    from diffgpu.interop import compile_only

    with compile_only(chip):
        run_case(kernel, grid, block, mode, args)
