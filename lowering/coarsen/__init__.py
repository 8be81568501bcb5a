"""`diffgpu-coarsen`: one thread handles several consecutive elements, so its
loads and stores become vector accesses (`coarsen` decides, `rewrite` builds,
`bounds` proves the per-group guards, `reduce` handles reduction kernels).

May import: lowering.facts, lowering.common, diffgpu.dialects.
"""
