"""From diffgpu IR to PTX: `diffgpu-lower-to-gpu` (`to_gpu`, with one
pattern per op in `ops`), warp-aggregated atomics (`atomics`), the fused
sin/cos (`sincos`), the NVVM clean-up and lean ABI (`nvvm`), and the
pipelines and PTX extraction (`ptx`).

May import: lowering.reduce, lowering.coarsen, lowering.checks,
lowering.facts, lowering.common, diffgpu.dialects, diffgpu.abi.
"""
