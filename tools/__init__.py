"""Command-line tools: diffgpu-opt.

May import: diffgpu.driver, diffgpu.lowering, diffgpu.dialects and the
foundation modules of diffgpu.
"""
