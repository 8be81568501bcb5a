"""Checks that passes and pipelines promise: every op's target follows its
parent (`verify_targets`, `diffgpu-verify-targets`), `dg.syncthreads()` is not reached
by only some threads of a block (`barriers`, `diffgpu-check-barriers`), nor a warp/block
collective (`collectives`, `diffgpu-check-collectives`; the walk both share is
`all_threads`), a GPU kernel's shared
memory fits a block (`shared_memory`, `diffgpu-check-shared-memory`), and a
pipeline that promises LLVM delivers it (`lowered_check`,
`diffgpu-check-lowered`).

May import: lowering.facts, lowering.registry, lowering.common,
diffgpu.dialects and the foundation modules of diffgpu.
"""
