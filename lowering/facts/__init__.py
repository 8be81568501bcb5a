"""Launch facts and the analyses behind them.

- `specialize`: the facts one launch proved (contiguity, disjoint arrays,
  extents, alignment), written on the entry as `diffgpu.launch_facts`, read
  back by the passes that use them;
- `specialize_shapes`: facts about shapes (equal extents, 32-bit indices);
- `load_order`: the loads-first order of functions whose arrays are disjoint;
- `uniform`: which values are equal in every thread of a block;
- `access`: the read/write analysis of a kernel's arrays (for `dg.vjp`).

May import: lowering.common, diffgpu.dialects and the foundation modules of
diffgpu (errors, types, abi). Never a pass package above it.
"""
