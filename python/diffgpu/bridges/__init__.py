"""The machinery of the framework bridges: XLA launching diffgpu's PTX on its
own stream under `jax.jit` (`jax_gpu`, with jaxlib's kernel-call target in
`jax_kernel_call`). The user-facing bridges are diffgpu.torch, diffgpu.jax
and diffgpu.interop.

May import: diffgpu.driver, diffgpu.runtime and the foundation modules of
diffgpu.
"""
