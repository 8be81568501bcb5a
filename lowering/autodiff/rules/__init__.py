"""What autodiff knows about each op: one table per dialect (`arith`,
`math`, `memref`, `scf`, `func`, `diffgpu`, `collectives` for the warp/block
collectives and atomic max/min, and `tape` for the tape words of
a derivative differentiated again), how the tables are written and applied
(`partials`), and the registry that finds an op's rule (`registry`).

May import: the autodiff package's core modules (build, context, tape,
locals, elision, remat, spec), lowering.facts, lowering.registry,
lowering.common, diffgpu.dialects and the foundation modules of diffgpu.
"""
