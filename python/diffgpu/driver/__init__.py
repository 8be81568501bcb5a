"""The compile driver: diffgpu IR to any stage for the host or a GPU
(`compiler`), a kernel's program for one signature compiled or loaded from the
cache (`launch`), `kernel.ir(..., stage=...)` (`stages`), and ahead-of-time
compilation (`aot`, `dg.compile`) into bundles (`bundle`: `dg.save_bundle` /
`dg.load_bundle`, read within bounds by `bundle_zip`), and the passes'
remarks (`remarks`: DIFFGPU_EXPLAIN's report; `explain`: `dg.explain`).
Loading a bundle or a
cached program imports no compiler module: those imports sit inside the
functions that compile.

May import: diffgpu.frontend, diffgpu.lowering, diffgpu.dialects,
diffgpu.runtime and the foundation modules of diffgpu.
"""
