"""What every lowering stage shares: the IR helpers (`ir_util`: one op walk,
symbols, callees, constants, pattern application), compilation targets and
their attribute (`targets`), the diagnostics of a pipeline run
(`diagnostics`), the LLVM-dialect wrap-flag fix both targets run
(`llvm_flags`, `diffgpu-drop-wrap-flags`), and the nesting of long blocks
that keeps `convert-scf-to-cf` linear (`chunk_blocks`, `diffgpu-chunk-blocks`).

May import: the MLIR bindings (diffgpu._mlir), diffgpu.dialects, diffgpu.abi,
diffgpu.errors. Nothing else of the lowering.
"""
