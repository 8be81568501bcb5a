"""Launch facts and the analyses behind them.

- `specialize`: the facts one launch proved (contiguity, disjoint arrays,
  extents, alignment), written on the entry as `diffgpu.launch_facts`, read
  back by the passes that use them;
- `specialize_shapes`: facts about shapes (equal extents, 32-bit indices);
- `attrs`: the facts' attributes and their reader (`read_facts`);
- `load_order`: the loads-first order of functions whose arrays are disjoint;
- `uniform`: which values are equal in every thread of a block;
- `indices`: index expressions of the thread geometry (`global_dim`,
  `index_key`, `offset_of`), shared by autodiff, coarsen and reduce;
- `affine`: indices as polynomials of global ids and launch-uniform values
  (`stencil_index`: `gid(d) + offset` per position), for the stencil adjoints.

May import: lowering.registry, lowering.common, diffgpu.dialects and the
foundation modules of diffgpu. Never a pass package above it.
"""
