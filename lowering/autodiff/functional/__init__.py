"""The functional kinds of reverse mode behind `dg.vjp` (`cot`, `grad`):
`kinds` rewrites a generated function for them, `rows` finds outputs written
in rows, `transpose` turns a 1-D stencil's scatter into a gather.

May import: the autodiff package's leaf modules, lowering.facts,
lowering.common, diffgpu.dialects.
"""
