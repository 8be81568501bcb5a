"""From diffgpu IR to PTX: `diffgpu-lower-to-gpu` (`to_gpu`, with one
pattern per op in `ops`), warp-aggregated atomics (`atomics`), the fused
sin/cos (`sincos`), the collectives as shuffles (`collectives`,
`diffgpu-lower-collectives`; `slot_plan`: which warp slots each block
collective uses and where a barrier after its read is needed), the NVVM clean-up and lean ABI (`nvvm`), and the
pipelines and PTX extraction (`ptx`; `compile_ptx` is the driver's).

May import: lowering.coarsen, lowering.checks, lowering.facts,
lowering.registry, lowering.common, diffgpu.dialects and the foundation
modules of diffgpu. Not lowering.reduce: its passes, above this package,
use the atomics helpers here, and the pipelines name them as text.
"""
