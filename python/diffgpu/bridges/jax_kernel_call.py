"""jaxlib's GPU kernel call: which custom-call target carries diffgpu's PTX.

The CUDA plugin of jaxlib (`jax_cuda13_plugin._triton`, reached through
`jax._src.lib.gpu_triton`, which `import jax` loads) registers one kernel
launcher under two targets when jaxlib is imported; both take the same
payload, a zlib-compressed serialized kernel call (PTX, entry, grid, warps
and a parameter list) whose array parameters consume the call's buffers in
order (operands, then results):

| form     | target                   | XLA convention                     | payload                                  |
|----------|--------------------------|------------------------------------|------------------------------------------|
| `ffi`    | `triton_kernel_call_ffi` | typed FFI (`api_version = 4`)      | attribute `opaque` of the backend config |
| `legacy` | `triton_kernel_call`     | status-returning (`api_version=2`) | the backend config string itself         |

A typed-FFI call to the legacy target fails when XLA compiles it
(`No FFI handler registered for triton_kernel_call`), so the target and the
convention go together. `ffi` is what jax-triton emits and is chosen when
the plugin registers it; `legacy` otherwise. DIFFGPU_JAX_KERNEL_CALL=ffi or
=legacy forces one (scripts/jax_gpu_check.py probes both).

The typed form's attributes (a dictionary backend config is what makes
XLA call the target through the typed FFI):

    %y = stablehlo.custom_call @triton_kernel_call_ffi(%y0, %x) {
           backend_config = "", mhlo.backend_config = {opaque = "x..."},
           output_operand_aliases = [#stablehlo.output_operand_alias<
             output_tuple_indices = [], operand_index = 0, ...>], ...}
"""
from __future__ import annotations

import os
import zlib

from diffgpu.errors import LaunchError

FORMS = {"ffi": "triton_kernel_call_ffi", "legacy": "triton_kernel_call"}
ENV = "DIFFGPU_JAX_KERNEL_CALL"
_INSTALL = "install a CUDA jaxlib: pip install 'jax[cuda13]' (or 'jax[cuda12]')"


def library():
    """jaxlib's kernel-call library (the CUDA plugin's `_triton` module as
    `jax._src.lib.gpu_triton` exposes it), or a LaunchError saying why not."""
    try:
        from jax._src.lib import gpu_triton as lib
    except ImportError as exc:
        raise LaunchError(f"dg.jax on the GPU: this jaxlib has no GPU kernel-call "
                          f"library ({exc}); {_INSTALL}") from None
    if not hasattr(lib, "TritonKernelCall"):
        raise LaunchError("dg.jax on the GPU: jaxlib's CUDA plugin did not load its "
                          "kernel-call library (`_triton`; a missing plugin or one whose "
                          f"version differs from jaxlib's); {_INSTALL}")
    return lib


def available(lib) -> list:
    """The forms whose target this plugin registers, preferred first."""
    forms = []
    try:
        if FORMS["ffi"] in lib.registrations():
            forms.append("ffi")
    except AttributeError:  # a plugin without typed-FFI registrations
        pass
    if hasattr(lib, "get_custom_call"):
        forms.append("legacy")
    return forms


def choose(lib) -> str:
    """The form to emit: DIFFGPU_JAX_KERNEL_CALL if set, else the first
    available one."""
    forms = available(lib)
    forced = os.environ.get(ENV, "").strip()
    if forced:
        if forced not in FORMS:
            raise LaunchError(f"{ENV}={forced!r}: expected one of {', '.join(FORMS)}")
        if forced not in forms:
            raise LaunchError(f"{ENV}={forced}: jaxlib's CUDA plugin does not register "
                              f"{FORMS[forced]} (it registers: {', '.join(forms) or 'neither'})")
        return forced
    if not forms:
        raise LaunchError("dg.jax on the GPU: jaxlib's CUDA plugin registers neither "
                          f"{FORMS['ffi']} nor {FORMS['legacy']}; {_INSTALL}")
    return forms[0]


def _layout(shape) -> tuple:
    return tuple(range(len(shape) - 1, -1, -1))  # row-major, XLA's default


def emit(ctx, operands, proto: bytes, aliases, form: str) -> list:
    """The custom call of `form` launching the serialized kernel call `proto`
    on `operands`; `aliases`: (operand index, result index) pairs, one per
    result (every result is a written operand)."""
    import jax
    from jax._src.interpreters import mlir  # custom_call: not re-exported publicly
    from jax._src.lib.mlir import ir

    payload = zlib.compress(proto)
    if form == "ffi":
        rule = jax.ffi.ffi_lowering(FORMS["ffi"], api_version=4,
                                    operand_output_aliases=dict(aliases))
        return rule(ctx, *operands, opaque=payload)
    types = [ir.RankedTensorType.get(a.shape, mlir.dtype_to_ir_type(a.dtype))
             for a in ctx.avals_out]
    op = mlir.custom_call(FORMS["legacy"], result_types=types, operands=list(operands),
                          backend_config=payload, api_version=2,
                          operand_output_aliases=dict(aliases),
                          operand_layouts=[_layout(a.shape) for a in ctx.avals_in],
                          result_layouts=[_layout(a.shape) for a in ctx.avals_out])
    return list(op.results)


__all__ = ["FORMS", "ENV", "library", "available", "choose", "emit"]
