"""The compile driver: diffgpu IR to any stage for the host or a GPU
(`compiler`), a kernel's program for one signature compiled or loaded from the
cache (`launch`), `kernel.ir(..., stage=...)` (`stages`), and ahead-of-time
compilation into bundles (`aot`, `dg.compile`).

May import: diffgpu.frontend, diffgpu.lowering, diffgpu.dialects,
diffgpu.runtime and the foundation modules of diffgpu.
"""
