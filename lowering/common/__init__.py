"""What every lowering stage shares: the IR helpers (`ir_util`: one op walk,
symbols, callees, constants, pattern application), compilation targets and
their attribute (`targets`), the diagnostics of a pipeline run
(`diagnostics`), a thread's MLIR context and pass managers (`session`, the
compile driver's and the text-level helpers'), the LLVM-dialect wrap-flag
fix both targets run (`llvm_flags`, `diffgpu-drop-wrap-flags`), and the
nesting of long blocks that keeps `convert-scf-to-cf` linear
(`chunk_blocks`, `diffgpu-chunk-blocks`), the shared-memory expansion
of the collectives both targets build (`collective_ir`), and the expansion
of `diffgpu.erfinv` / `erfcinv` into math ops both targets run after
autodiff (`special_math`, `diffgpu-expand-special-math`), and the
passes' optimisation remarks (`explain`: `missed` / `applied`, collected per
compile).

May import: lowering/passes.py and lowering/pipelines.py (the tables its
passes register into), diffgpu.dialects and the foundation modules of
diffgpu (the MLIR bindings through diffgpu._mlir). Nothing else of the
lowering.
"""
