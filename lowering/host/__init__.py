"""The CPU emulation of a GPU launch: `diffgpu-lower-to-host` and the
`diffgpu-to-host` pipeline (`to_host`, with the op rewrites in `ops`),
barriers as block-level phases (`barrier`, `barrier_control`, `inline`),
bounds checks (`bounds`), cancellation on Ctrl-C (`cancel`), and the data-race
detector of the checked mode (`racecheck`, with its runtime in MLIR text,
`race_runtime`), and the collectives through shared memory
(`collectives`, `diffgpu-expand-collectives`).

May import: lowering.facts, lowering.registry, lowering.common,
diffgpu.dialects and the foundation modules of diffgpu (the pipeline names
the other packages' passes as text).
"""
