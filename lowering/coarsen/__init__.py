"""`diffgpu-coarsen`: one thread handles several consecutive elements, so its
loads and stores become vector accesses (`coarsen` decides, `rewrite` builds,
`bounds` proves the per-group guards, `reduce` handles reduction kernels),
and `mark` records a launch's facts on the frontend's module with the
coarsening they allow.

May import: lowering.facts, lowering.registry, lowering.common,
diffgpu.dialects and the foundation modules of diffgpu.
"""
