"""The functional kinds of reverse mode behind `dg.vjp` (`cot`, `grad`):
`access` analyses which arrays a kernel reads and writes (dg.vjp plans with
it), `kinds` rewrites a generated function for them, `rows` finds outputs
written in rows, `transpose` turns a 1-D stencil's scatter into a gather,
`gather` does it for 2-D, 3-D and flattened affine stencils, `owned` finds
accesses at constant offsets of global ids that one thread owns (and
decides, MLIR-free, whether a launch keeps them apart and covers the array),
`owned_grad` gives such an input's gradient a register per offset.

May import: the autodiff package's core modules (build, context, tape,
locals, elision, remat, spec, unroll), lowering.facts, lowering.registry,
lowering.common, diffgpu.dialects and the foundation modules of diffgpu.
"""
