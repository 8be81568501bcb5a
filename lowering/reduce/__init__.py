"""Reductions and scattered adds, made cheap: per-block aggregation of atomic
adds (`aggregate_atomics`, with `block_sum` and the cross-block `grid_sum`),
several such adds at one site summed together (`block_sums`), stencil
adjoints gathered per block (`stencil_adjoint`), sm_90 vector
reductions (`vector_red`), and moving an add out of guards (`hoist`).

May import: lowering.gpu (its atomics helpers), lowering.facts,
lowering.registry, lowering.common, diffgpu.dialects and the foundation
modules of diffgpu.
"""
