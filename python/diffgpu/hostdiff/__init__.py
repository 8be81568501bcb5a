"""Differentiation at the host level, around launches: `dg.autodiff` /
`dg.fwddiff` on a launch (`diff`), the planning and replay of a `dg.vjp` /
`dg.jvp` call (`plan`, `replay`, with the array helpers in `buffers`), and
`dg.gradcheck` (`gradcheck`; its 16-bit stage in `gradcheck_half`). The user-facing `dg.vjp` / `dg.jvp` live in
diffgpu.functional.

May import: diffgpu.driver, diffgpu.runtime, the read/write analysis of
lowering.autodiff.functional (`access`, through the driver's context) and
the foundation modules of diffgpu (errors, types, activities, abi).
"""
